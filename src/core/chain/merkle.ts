/**
 * A Merkle tree over a chain's event hashes (issue 38), hashed as RFC 6962 / RFC 9162 §2.1 have it: a leaf is
 * SHA-256(0x00 ‖ the event's 32-byte hash), an inner node SHA-256(0x01 ‖ left ‖ right), the empty tree SHA-256("").
 * Pure: tree heads, inclusion and consistency proofs over a list of leaves, and their verifiers (RFC 9162 §2.1.3.2,
 * §2.1.4.2), which need nothing but the proof, the sizes and the roots.
 *
 * Building a proof here reads every leaf (O(n)); verifying one is O(log n). The incremental tree kept beside the chain
 * in the store, which would make building O(log n) too, is not built yet (docs/audit-chain.md).
 */
import { createHash } from "node:crypto";

export type Hash = Buffer;

const LEAF_PREFIX = Buffer.from([0]);
const NODE_PREFIX = Buffer.from([1]);

export const EMPTY_ROOT: Hash = createHash("sha256").digest();

/** RFC 6962 §2.1: the hash of a leaf whose data is the event's hash (32 raw bytes, not its hex text). */
export function leafHash(eventHashHex: string): Hash {
  const raw = Buffer.from(eventHashHex, "hex");
  if (raw.length !== 32 || raw.toString("hex") !== eventHashHex)
    throw new Error("a leaf is an event hash: 64 lowercase hex");
  return createHash("sha256").update(LEAF_PREFIX).update(raw).digest();
}

export function nodeHash(left: Hash, right: Hash): Hash {
  return createHash("sha256").update(NODE_PREFIX).update(left).update(right).digest();
}

/** The largest power of two strictly smaller than n (n ≥ 2): RFC 6962's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * MTH(D[start:start+size]) from leaf hashes, without recursion: a stack of perfect subtrees, merged as a binary
 * counter, then folded right to left (the left-heavy shape RFC 6962 defines).
 */
function subtreeRoot(leaves: readonly Hash[], start: number, size: number): Hash {
  if (size === 0) return EMPTY_ROOT;
  const stack: { hash: Hash; size: number }[] = [];
  for (let i = start; i < start + size; i++) {
    let top = { hash: leaves[i] as Hash, size: 1 };
    while (stack.length > 0 && (stack[stack.length - 1] as { size: number }).size === top.size) {
      const left = stack.pop() as { hash: Hash; size: number };
      top = { hash: nodeHash(left.hash, top.hash), size: left.size * 2 };
    }
    stack.push(top);
  }
  let acc = (stack.pop() as { hash: Hash }).hash;
  while (stack.length > 0) acc = nodeHash((stack.pop() as { hash: Hash }).hash, acc);
  return acc;
}

/** The tree head (MTH) over the first `size` leaves (all of them by default). */
export function treeRoot(leaves: readonly Hash[], size: number = leaves.length): Hash {
  if (!Number.isSafeInteger(size) || size < 0 || size > leaves.length)
    throw new Error(`tree size ${size} is outside 0..${leaves.length}`);
  return subtreeRoot(leaves, 0, size);
}

/** MTH(D[start:start+size]) from wherever the leaves or the stored subtree hashes are (tree-hashes.ts). */
export type SubtreeHasher = (start: number, size: number) => Hash;

/** RFC 9162 §2.1.3.1 PATH(m, D[0:n]): the audit path of leaf `index` in the tree of the first `size` leaves. */
export function inclusionProof(leaves: readonly Hash[], index: number, size: number = leaves.length): Hash[] {
  if (!Number.isSafeInteger(size) || size < 1 || size > leaves.length)
    throw new Error(`tree size ${size} is outside 1..${leaves.length}`);
  return inclusionProofWith((start, n) => subtreeRoot(leaves, start, n), index, size);
}

/** The same audit path, each sibling asked of `subtree` (O(log n) of them). */
export function inclusionProofWith(subtree: SubtreeHasher, index: number, size: number): Hash[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= size)
    throw new Error(`leaf index ${index} is outside 0..${size - 1}`);
  const path: Hash[] = [];
  let start = 0;
  let n = size;
  let m = index;
  // Walk down from the root; each level's sibling is appended, then reversed so the path runs leaf → root.
  while (n > 1) {
    const k = splitPoint(n);
    if (m < k) {
      path.push(subtree(start + k, n - k));
      n = k;
    } else {
      path.push(subtree(start, k));
      start += k;
      m -= k;
      n -= k;
    }
  }
  return path.reverse();
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[0:n]): the consistency proof from the tree of `oldSize` leaves to that of `newSize`. */
export function consistencyProof(leaves: readonly Hash[], oldSize: number, newSize: number = leaves.length): Hash[] {
  if (!Number.isSafeInteger(newSize) || newSize < 0 || newSize > leaves.length)
    throw new Error(`tree size ${newSize} is outside 0..${leaves.length}`);
  return consistencyProofWith((start, n) => subtreeRoot(leaves, start, n), oldSize, newSize);
}

/** The same consistency proof, each node asked of `subtree` (O(log n) of them). */
export function consistencyProofWith(subtree: SubtreeHasher, oldSize: number, newSize: number): Hash[] {
  if (!Number.isSafeInteger(oldSize) || oldSize < 0 || oldSize > newSize)
    throw new Error(`old tree size ${oldSize} is outside 0..${newSize}`);
  if (oldSize === 0 || oldSize === newSize) return [];
  const proof: Hash[] = [];
  // SUBPROOF(m, D[start:start+n], b), unrolled: each step adds one sibling; the last adds the old subtree's own root
  // unless it is the whole old tree (b true).
  let start = 0;
  let n = newSize;
  let m = oldSize;
  let whole = true;
  while (m !== n) {
    const k = splitPoint(n);
    if (m <= k) {
      proof.push(subtree(start + k, n - k));
      n = k;
    } else {
      proof.push(subtree(start, k));
      start += k;
      m -= k;
      n -= k;
      whole = false;
    }
  }
  if (!whole) proof.push(subtree(start, m));
  return proof.reverse();
}

/** RFC 9162 §2.1.3.2: does `leaf` at `index` in a tree of `size` leaves, with this audit path, hash to `root`? */
export function verifyInclusion(leaf: Hash, index: number, size: number, path: readonly Hash[], root: Hash): boolean {
  if (!Number.isSafeInteger(size) || !Number.isSafeInteger(index) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 §2.1.4.2: is the tree of `oldSize` leaves with `oldRoot` a prefix of the tree of `newSize` with `newRoot`? */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  proof: readonly Hash[],
  oldRoot: Hash,
  newRoot: Hash,
): boolean {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize)
    return false;
  if (oldSize === newSize) return proof.length === 0 && oldRoot.equals(newRoot);
  if (oldSize === 0) return proof.length === 0; // the empty tree is a prefix of every tree
  if (proof.length === 0) return false;
  // A power-of-two old tree is a complete subtree of the new one: its root is the proof's implicit first element.
  const path = (oldSize & (oldSize - 1)) === 0 ? [oldRoot, ...proof] : [...proof];
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Hash;
  let sr = path[0] as Hash;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(oldRoot) && sr.equals(newRoot);
}
