import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeTileIndex, parseTilePath, TILE_WIDTH, tilePath, treeHasTile } from "./tlog-tiles.js";

describe("C2SP tlog-tiles paths", () => {
  it("spell the index in x-prefixed groups of three digits, as the spec's example does", () => {
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(encodeTileIndex(0)).toBe("000");
    expect(tilePath({ level: "entries", index: 1000, width: 7 })).toBe("tile/entries/x001/000.p/7");
  });

  it("parse back every tile they name, and accept no other spelling of it", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constant("entries" as const), fc.integer({ min: 0, max: 5 })),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 1, max: TILE_WIDTH }),
        (level, index, width) => {
          const path = tilePath({ level, index, width });
          expect(parseTilePath(path.slice("tile/".length))).toEqual({ ok: true, value: { level, index, width } });
        },
      ),
    );
    for (const bad of [
      "0/1",
      "0/x000/001",
      "0/000.p/256",
      "0/000.p/0",
      "00/000",
      "0/000/",
      "entries/0001",
      "7/000",
      "0/x1/001",
    ])
      expect(parseTilePath(bad).ok, bad).toBe(false);
  });

  it("hold a tile only when each of its hashes is a complete subtree of the tree", () => {
    expect(treeHasTile(256, { level: 0, index: 0, width: 256 })).toBe(true);
    expect(treeHasTile(255, { level: 0, index: 0, width: 256 })).toBe(false);
    expect(treeHasTile(512, { level: 1, index: 0, width: 2 })).toBe(true);
    expect(treeHasTile(767, { level: 1, index: 0, width: 3 })).toBe(false);
  });
});
