import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeNsec } from "./nostr.js";

const GOLDEN = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";

describe("nsec decoding (spec/kubernetes.md §4.1)", () => {
  it("derives the published golden x-only public key", () => {
    expect(decodeNsec(GOLDEN)).toEqual({
      ok: true,
      value: "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e",
    });
  });

  it("trims surrounding whitespace before decoding", () => {
    expect(decodeNsec(`  ${GOLDEN}\n`).ok).toBe(true);
  });

  it.each([
    ["empty input", ""],
    ["a bare prefix", "nsec1"],
    ["a hex key", "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"],
    ["an npub", "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"],
    ["upper case", GOLDEN.toUpperCase()],
    ["mixed case", `nsec1V${GOLDEN.slice(6)}`],
    ["a broken checksum", `${GOLDEN.slice(0, -1)}4`],
    ["not a key", "not-a-key"],
  ])("refuses %s", (_name, input) => {
    expect(decodeNsec(input).ok).toBe(false);
  });

  it("never throws on arbitrary strings", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const r = decodeNsec(s);
        expect(typeof r.ok).toBe("boolean");
      }),
    );
  });
});
