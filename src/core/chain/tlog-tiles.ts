/**
 * The chain's Merkle tree in the C2SP tlog-tiles layout (issue 38), so a monitor can mirror and check it with any
 * tlog-tiles client and no berth: tiles of height 8 (256 hashes wide), a tile at level L holding the tree's hashes at
 * Merkle level 8·L, each 32 raw bytes; a partial tile `.p/W` holds the first W of them; an entry bundle holds the
 * leaves' data (here the events' 32-byte hashes), each as a big-endian uint16 length and the bytes.
 *
 *   tile/<L>/<N>[.p/<W>]      tile/entries/<N>[.p/<W>]      N in groups of three digits, all but the last "x"-prefixed
 *
 * Pure: parsing a tile path (one spelling per tile, so a path is never a second name for another), naming one, which
 * tiles a tree of a given size has, and a tile's bytes from a stored-hash reader (tree-hashes.ts).
 */
import type { Result } from "../../kit/result.js";
import type { StoredHashReader } from "./tree-hashes.js";

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 2 ** TILE_HEIGHT;

export interface TileRef {
  /** "entries" for an entry bundle, else the tile level L */
  readonly level: number | "entries";
  readonly index: number;
  /** 1..256; 256 is a full tile (no `.p/` in its path) */
  readonly width: number;
}

export type TileParse = Result<TileRef>;

/** N as tlog-tiles spells it: 1234067 → x001/x234/067. */
export function encodeTileIndex(index: number): string {
  let n = index;
  let out = String(n % 1000).padStart(3, "0");
  while (n >= 1000) {
    n = Math.floor(n / 1000);
    out = `x${String(n % 1000).padStart(3, "0")}/${out}`;
  }
  return out;
}

export function tilePath(t: TileRef): string {
  return `tile/${t.level}/${encodeTileIndex(t.index)}${t.width < TILE_WIDTH ? `.p/${t.width}` : ""}`;
}

const SHAPE = /^(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/;

/** The part after `tile/`; only the canonical spelling of a tile is accepted (re-encoded and compared). */
export function parseTilePath(text: string): TileParse {
  const m = SHAPE.exec(text);
  if (!m)
    return {
      ok: false,
      error:
        "must be <L>/<N>[.p/<W>] or entries/<N>[.p/<W>] as C2SP tlog-tiles spells it (N in x-prefixed groups of three digits, W 1..255)",
    };
  const [, levelText, indexText, widthText] = m as unknown as [string, string, string, string | undefined];
  const level = levelText === "entries" ? "entries" : Number(levelText);
  const index = Number(indexText.replaceAll("x", "").replaceAll("/", ""));
  const width = widthText === undefined ? TILE_WIDTH : Number(widthText);
  if (typeof level === "number" && level * TILE_HEIGHT > 52)
    return { ok: false, error: `level ${level} is above any tree this log can hold` };
  if (!Number.isSafeInteger(index)) return { ok: false, error: "the tile index is too large" };
  if (widthText !== undefined && width >= TILE_WIDTH)
    return { ok: false, error: `a partial tile's width must be 1..${TILE_WIDTH - 1}; a full tile has no .p/` };
  const tile: TileRef = { level, index, width };
  if (tilePath(tile) !== `tile/${text}`)
    return { ok: false, error: `not the canonical spelling of this tile (it is ${tilePath(tile)})` };
  return { ok: true, value: tile };
}

/** How many leaves one hash of a tile at this level covers (an entry covers one). */
function leavesPerHash(t: TileRef): number {
  return t.level === "entries" ? 1 : 2 ** (TILE_HEIGHT * t.level);
}

/** Whether a tree of `size` leaves has this tile: every hash in it is a complete subtree of the tree. */
export function treeHasTile(size: number, t: TileRef): boolean {
  return (t.index * TILE_WIDTH + t.width) * leavesPerHash(t) <= size;
}

/** The tile's bytes: W hashes of Merkle level 8·L, 32 bytes each, left to right. */
export function tileBytes(read: StoredHashReader, t: TileRef & { level: number }): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; i < t.width; i++) out.push(read(TILE_HEIGHT * t.level, t.index * TILE_WIDTH + i));
  return Buffer.concat(out);
}

/** An entry bundle: each leaf's data (an event's 32-byte hash) as a big-endian uint16 length and the bytes. */
export function entryBundle(eventHashesHex: readonly string[]): Buffer {
  const out: Buffer[] = [];
  for (const hex of eventHashesHex) {
    const raw = Buffer.from(hex, "hex");
    const len = Buffer.alloc(2);
    len.writeUInt16BE(raw.length);
    out.push(len, raw);
  }
  return Buffer.concat(out);
}

/** The range of leaves (events) a tile's hashes are built from. */
export function tileLeafRange(t: TileRef): { start: number; count: number } {
  const per = leavesPerHash(t);
  return { start: t.index * TILE_WIDTH * per, count: t.width * per };
}
