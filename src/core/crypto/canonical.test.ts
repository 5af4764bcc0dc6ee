import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, parseCanonical } from "./canonical.js";

describe("canonical JSON (RFC 8785, spec/audit-chain.md §4)", () => {
  it("orders member names by UTF-16 code units, including non-ASCII and non-BMP names", () => {
    // U+1F600 is the surrogate pair D83D DE00, which sorts before U+FB01 (ﬁ) in UTF-16 but after it in UTF-8.
    const value = { "\uFB01": 1, "\u{1F600}": 2, b: 3, a: 4, é: 5, "": 6 };
    expect(canonicalJson(value)).toBe('{"":6,"a":4,"b":3,"é":5,"😀":2,"ﬁ":1}');
  });

  it("escapes quotes, backslashes and control characters as JSON.stringify does, and writes the rest raw", () => {
    expect(canonicalJson({ s: '"\\\u0000\u001f\n\u007fé😀' })).toBe('{"s":"\\"\\\\\\u0000\\u001f\\n\u007fé😀"}');
  });

  it("writes -0 as 0 and integers in plain decimal", () => {
    expect(canonicalJson({ z: -0, big: 9007199254740991, neg: -12 })).toBe('{"big":9007199254740991,"neg":-12,"z":0}');
  });

  it.each([
    ["a fraction", { x: 1.5 }],
    ["2^53", { x: 2 ** 53 }],
    ["NaN", { x: Number.NaN }],
    ["Infinity", { x: Number.POSITIVE_INFINITY }],
    ["a lone surrogate in a value", { x: "\uD800" }],
    ["a lone surrogate in a name", { "\uDC00": 1 }],
    ["undefined", { x: undefined }],
    ["a BigInt", { x: 1n }],
    ["a function", { x: () => 1 }],
    ["a Date", { x: new Date(0) }],
  ])("refuses %s", (_name, value) => {
    expect(() => canonicalJson(value)).toThrow();
  });

  it("refuses nesting deeper than 32 levels", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 33; i++) deep = [deep];
    expect(() => canonicalJson(deep)).toThrow(/deeper than 32/);
    let ok: unknown = 1;
    for (let i = 0; i < 32; i++) ok = [ok];
    expect(() => canonicalJson(ok)).not.toThrow();
  });

  it("refuses duplicate member names and non-canonical text when parsing stored payloads", () => {
    expect(parseCanonical('{"a":1,"a":2}').ok).toBe(false);
    expect(parseCanonical('{"b":1,"a":2}').ok).toBe(false);
    expect(parseCanonical('{"a": 1}').ok).toBe(false);
    expect(parseCanonical('{"a":1.0}').ok).toBe(false);
    expect(parseCanonical('{"a":1}').ok).toBe(true);
  });

  it("is a fixed point: canonicalize(parse(canonical)) equals canonical for any JSON value (property)", () => {
    const json = fc.jsonValue({ maxDepth: 5 }).filter((v) => {
      try {
        canonicalJson(v);
        return true;
      } catch {
        return false;
      }
    });
    fc.assert(
      fc.property(json, (v) => {
        const text = canonicalJson(v);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        expect(parseCanonical(text).ok).toBe(true);
      }),
    );
  });
});

describe("berth's canonical writer", () => {
  it("agrees with the canonicalize reference implementation on arbitrary representable values (property)", async () => {
    const { referenceCanonicalJson } = await import("./canonical.js");
    const safe = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constant(null),
        fc.boolean(),
        fc.maxSafeInteger(),
        fc.string({ unit: "grapheme" }),
        fc.string({ unit: "binary-ascii" }),
        fc.array(tie("value"), { maxLength: 5 }),
        fc.dictionary(fc.string({ unit: "grapheme" }), tie("value"), { maxKeys: 5 }),
      ),
    })).value;
    fc.assert(
      fc.property(safe, (v) => {
        expect(canonicalJson(v)).toBe(referenceCanonicalJson(v));
      }),
      { numRuns: 2000 },
    );
  });
});
