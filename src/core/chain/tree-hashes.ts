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
import {
  consistencyProofWith,
  EMPTY_ROOT,
  type Hash,
  inclusionProofWith,
  nodeHash,
  splitPoint,
  treeRoot,
} from "./merkle.js";

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

export function tiledReader(
  readStored: StoredHashReader,
  readLeaves: (start: number, count: number) => readonly Hash[],
  height = STORED_FROM_LEVEL,
): StoredHashReader {
  return (level, index) =>
    level >= height ? readStored(level, index) : treeRoot(readLeaves(index * 2 ** level, 2 ** level));
}

/**
 * The right edge of a tree being appended to: for each level, the last complete subtree's hash. That is every left
 * sibling the next leaf can need (`storedHashesFor`), and the tree head folds from it in O(log n) without a read.
 * Only the levels whose bit is set in `size` are meaningful; the others hold stale hashes never read again.
 */
export interface Frontier {
  size: number;
  readonly levels: Hash[];
}

export function copyFrontier(f: Frontier): Frontier {
  return { size: f.size, levels: [...f.levels] };
}

/** Appends one leaf; returns the hashes it closes (the leaf itself at level 0 first). */
export function pushLeaf(f: Frontier, leaf: Hash): StoredHash[] {
  const closed = storedHashesFor(f.size, leaf, (level) => f.levels[level] as Hash);
  for (const s of closed) f.levels[s.level] = s.hash;
  f.size++;
  return closed;
}

/** The complete subtrees a frontier of `size` leaves holds: one per set bit of `size`, highest level first. */
export function frontierSubtrees(size: number): Array<{ level: number; index: number }> {
  const out: Array<{ level: number; index: number }> = [];
  for (let level = 52; level >= 0; level--) {
    const count = Math.floor(size / 2 ** level);
    if (count % 2 === 1) out.push({ level, index: count - 1 });
  }
  return out;
}

/** A frontier of `size` leaves from stored hashes (O(log n) reads). */
export function frontierFrom(read: StoredHashReader, size: number): Frontier {
  const f: Frontier = { size, levels: [] };
  for (const s of frontierSubtrees(size)) f.levels[s.level] = read(s.level, s.index);
  return f;
}

/** MTH of the frontier's `size` leaves: its subtrees folded right to left (RFC 6962's left-heavy shape). */
export function frontierRoot(f: Frontier): Hash {
  const subtrees = frontierSubtrees(f.size);
  if (subtrees.length === 0) return EMPTY_ROOT;
  let acc = f.levels[(subtrees[subtrees.length - 1] as { level: number }).level] as Hash;
  for (let i = subtrees.length - 2; i >= 0; i--)
    acc = nodeHash(f.levels[(subtrees[i] as { level: number }).level] as Hash, acc);
  return acc;
}

/**
 * Which stored subtrees a computation over a `StoredHashReader` reads. The reads of every function here depend on the
 * sizes and indexes only, never on the hashes, so running it once with a reader that records (and answers a dummy
 * hash) names exactly what to fetch, for a store that cannot be read synchronously (a PostgreSQL store).
 */
export function subtreesRead(run: (read: StoredHashReader) => void): Array<{ level: number; index: number }> {
  const seen = new Map<string, { level: number; index: number }>();
  const dummy = Buffer.alloc(32);
  run((level, index) => {
    seen.set(`${level}/${index}`, { level, index });
    return dummy;
  });
  return [...seen.values()];
}
