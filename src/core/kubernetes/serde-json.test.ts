import { describe, expect, it } from "vitest";
import { serdeJsonError } from "./serde-json.js";

const err = (text: string) => serdeJsonError(new TextEncoder().encode(text));

// Buzz answers `request is not valid JSON: {e}` with serde_json's error (main.rs at block/buzz@3fac2c2,
// malformed_input_is_an_in_band_error); the expected texts below are serde_json's own (serde-rs/json src/de.rs and
// src/read.rs: ErrorCode's Display, `{code} at line {line} column {column}`, byte columns).
describe("serde_json's error for malformed request bytes (issue 18.6)", () => {
  it("names what broke and where, as serde_json's from_str::<Value> does", () => {
    const cases: Array<[string, string]> = [
      ["not json", "expected ident at line 1 column 2"],
      ["", "EOF while parsing a value at line 1 column 0"],
      ["{", "EOF while parsing an object at line 1 column 1"],
      ["[1,]", "trailing comma at line 1 column 4"],
      ['{"a":1,}', "trailing comma at line 1 column 8"],
      ["[1 2]", "expected `,` or `]` at line 1 column 4"],
      ['{"a":1 "b":2}', "expected `,` or `}` at line 1 column 8"],
      ['{"a" 1}', "expected `:` at line 1 column 6"],
      ["{1:2}", "key must be a string at line 1 column 2"],
      ['{"a":}', "expected value at line 1 column 6"],
      ['"abc', "EOF while parsing a string at line 1 column 4"],
      ['"\\x"', "invalid escape at line 1 column 3"],
      ["01", "invalid number at line 1 column 2"],
      ["-x", "invalid number at line 1 column 2"],
      ["1.", "EOF while parsing a value at line 1 column 2"],
      ["1e400", "number out of range at line 1 column 5"],
      ["[1]x", "trailing characters at line 1 column 4"],
      ["nul", "EOF while parsing a value at line 1 column 3"],
      ['"\u0001"', "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2"],
    ];
    for (const [text, want] of cases) expect(err(text), text).toBe(want);
  });

  it("counts lines by newline and columns in bytes, as serde_json's position_of_index", () => {
    expect(err('{\n  "op": "info",\n  x\n}')).toBe("key must be a string at line 3 column 3");
    expect(err('["é\n"]')).toBe("control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0");
    expect(err('{"op":"é" ]')).toBe("expected `,` or `}` at line 1 column 12");
  });

  it("refuses what serde_json refuses and JSON.parse takes: lone surrogates, numbers beyond f64, nesting past 128", () => {
    expect(() => JSON.parse('"\\udc00"')).not.toThrow();
    expect(err('"\\udc00"')).toBe("lone leading surrogate in hex escape at line 1 column 7");
    expect(err('"\\ud800\\u0041"')).toBe("lone leading surrogate in hex escape at line 1 column 13");
    expect(err('"\\ud800"')).toBe("unexpected end of hex escape at line 1 column 8");
    expect(err('"\\ud83d\\ude00"')).toBeNull();
    expect(err("-1e309")).toBe("number out of range at line 1 column 6");
    expect(err("1e-400")).toBeNull();
    expect(err("0e99999999999")).toBeNull();
    expect(err(`${"[".repeat(127)}${"]".repeat(127)}`)).toBeNull();
    expect(err(`${"[".repeat(128)}${"]".repeat(128)}`)).toBe("recursion limit exceeded at line 1 column 128");
  });

  it("accepts every document JSON.parse accepts within those limits, and never quotes the input", () => {
    for (const ok of [
      '{"op":"info","request_id":"r-1"}',
      " [ ] ",
      '{"a":[1,-0.5e+3,true,false,null,"\\u00e9\\n"]}',
      "-0",
      "0",
      '"\\/"',
    ]) {
      expect(err(ok), ok).toBeNull();
      expect(() => JSON.parse(ok)).not.toThrow();
    }
    const nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
    expect(err(`{"agent":{"private_key_nsec":"${nsec}"`)).not.toContain(nsec);
  });
});
