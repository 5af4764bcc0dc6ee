/**
 * The Merkle tree of a chain kept incrementally (issue 38): every complete subtree's hash, stored once when its last
 * leaf arrives, so that a tree head, an inclusion proof and a consistency proof each read O(log n) stored hashes
 * instead of rehashing every leaf (merkle.ts's list functions). The idea is RFC 6962's and golang.org/x/mod/sumdb/tlog's
 * "stored hashes"; the layout here is plain: the complete subtree at `level` L covering leaves
 * [index·2^L, (index+1)·2^L) is stored under (L, index). A leaf adds 1 + (trailing ones of its index) hashes: 2 on
 * average.
 *
 * Pure: the caller reads and writes the stored hashes (a Map in memory, a table beside the chain); this decides which.
 */
import { consistencyProofWith, EMPTY_ROOT, type Hash, inclusionProofWith, nodeHash, splitPoint, treeRoot } from "./merkle.js";

/** Reads a stored complete-subtree hash; it must exist (the caller's store is the chain's tree). */
export type StoredHashReader = (level: number, index: number) => Hash;

export interface StoredHash {
  readonly level: number;
  readonly index: number;
  readonly hash: Hash;
}

/**
 * The hashes to store when leaf number `n` (0-based) with hash `leaf` is appended: the leaf itself and each complete
 * subtree it closes. `read` is asked only for left siblings, which are stored already.
 */
export function storedHashesFor(n: number, leaf: Hash, read: StoredHashReader): StoredHash[] {
  const out: StoredHash[] = [{ level: 0, index: n, hash: leaf }];
  let hash = leaf;
  let index = n;
  let level = 0;
  while (index % 2 === 1) {
    hash = nodeHash(read(level, index - 1), hash);
    index = (index - 1) / 2;
    level++;
    out.push({ level, index, hash });
  }
  return out;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function log2(n: number): number {
  return 31 - Math.clz32(n);
}

/** MTH(D[start:start+size]) from stored hashes: one read for an aligned power of two, else RFC 6962's split. */
export function subtreeHashFrom(read: StoredHashReader, start: number, size: number): Hash {
  if (size === 0) return EMPTY_ROOT;
  if (isPowerOfTwo(size) && start % size === 0) return read(log2(size), start / size);
  const k = splitPoint(size);
  return nodeHash(subtreeHashFrom(read, start, k), subtreeHashFrom(read, start + k, size - k));
}

export function treeHeadFrom(read: StoredHashReader, size: number): Hash {
  return subtreeHashFrom(read, 0, size);
}

export function inclusionProofFrom(read: StoredHashReader, index: number, size: number): Hash[] {
  return inclusionProofWith((start, n) => subtreeHashFrom(read, start, n), index, size);
}

export function consistencyProofFrom(read: StoredHashReader, oldSize: number, newSize: number): Hash[] {
  return consistencyProofWith((start, n) => subtreeHashFrom(read, start, n), oldSize, newSize);
}

/**
 * Only the levels from `height` up need storing (C2SP tlog-tiles' idea): a subtree below it is rehashed from its at
 * most 2^height leaves, which the chain already holds as event hashes. With height 4 a store keeps one hash per 16
 * events instead of two per event, and a proof reads at most 16 leaves more per level it touches below the tiles.
 */
export const STORED_FROM_LEVEL = 4;

export function tiledReader(readStored: StoredHashReader, readLeaves: (start: number, count: number) => readonly Hash[], height = STORED_FROM_LEVEL): StoredHashReader {
  return (level, index) => (level >= height ? readStored(level, index) : treeRoot(readLeaves(index * 2 ** level, 2 ** level)));
}
