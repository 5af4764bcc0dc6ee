/**
 * What the audit verbs prove with the Merkle tree (issue 38), over a chain's tree of `size` events (already verified by
 * the caller, the stored tree included) read through a `StoredHashReader` (O(log n) subtrees per answer): the tree
 * head to export, an inclusion proof of one event, and whether the chain extends an exported checkpoint (with the
 * consistency proof that shows it). Pure; outcomes as values.
 */
import { err, ok, type Result } from "../../kit/result.js";
import { leafHash, treeRoot, verifyConsistency, verifyInclusion } from "./merkle.js";
import { checkpointOrigin, openCheckpointNote, type TreeCheckpoint } from "./note.js";
import { consistencyProofFrom, inclusionProofFrom, type StoredHashReader, treeHeadFrom } from "./tree-hashes.js";

const b64 = (h: Buffer) => h.toString("base64");

export interface InclusionProofDoc {
  readonly chain_id: string;
  readonly origin: string;
  readonly tree_size: number;
  /** base64, as in the checkpoint note */
  readonly root: string;
  readonly leaf_index: number;
  readonly event_hash: string;
  /** base64 hashes, leaf to root (RFC 9162 §2.1.3.1) */
  readonly path: readonly string[];
}

export interface ConsistencyDoc {
  readonly chain_id: string;
  readonly origin: string;
  readonly old: { readonly tree_size: number; readonly root: string };
  readonly new: { readonly tree_size: number; readonly root: string };
  /** base64 hashes (RFC 9162 §2.1.4.1), built from this chain */
  readonly proof: readonly string[];
  readonly consistent: boolean;
}

/** Why the chain does not extend the checkpoint: the failure's code and seq, its sentence, and a fork's proof. */
export interface ExtendsFailure {
  readonly code: "checkpoint" | "truncated" | "fork";
  readonly seq: number;
  readonly detail: string;
  readonly proof?: ConsistencyDoc;
}

/** The consistency proof from the checkpoint to the chain, or why there is none. */
export type ExtendsOutcome = Result<ConsistencyDoc, ExtendsFailure>;

/** A chain's tree as the verbs read it: its size, its stored subtrees, and one event's hash by seq. */
export interface ChainTreeView {
  readonly chainId: string;
  readonly size: number;
  readonly read: StoredHashReader;
  eventHash(seq: number): string;
}

export function treeHeadOf(tree: ChainTreeView): TreeCheckpoint {
  return { origin: checkpointOrigin(tree.chainId), size: tree.size, root: treeHeadFrom(tree.read, tree.size) };
}

/** The inclusion proof of event `seq` in the chain's tree, or why there is none (a seq outside the chain). */
export function proveEvent(tree: ChainTreeView, seq: number): Result<InclusionProofDoc> {
  const { chainId, size } = tree;
  if (!Number.isSafeInteger(seq) || seq < 0 || seq >= size)
    return err(`seq ${seq} is not in this chain (it holds seq 0..${size - 1})`);
  const root = treeHeadFrom(tree.read, size);
  const path = inclusionProofFrom(tree.read, seq, size);
  const eventHash = tree.eventHash(seq);
  // Checked before it is printed: a proof berth emits must verify with the RFC's verifier.
  if (!verifyInclusion(leafHash(eventHash), seq, size, path, root))
    throw new Error(`internal: the inclusion proof of seq ${seq} does not verify`);
  return ok({
    chain_id: chainId,
    origin: checkpointOrigin(chainId),
    tree_size: size,
    root: b64(root),
    leaf_index: seq,
    event_hash: eventHash,
    path: path.map(b64),
  });
}

/**
 * Does this chain extend the exported checkpoint? The checkpoint's origin must name this chain, its tree must not be
 * larger than the chain, and the chain's first `size` events must hash to its root; then the consistency proof from
 * its size to the chain's verifies (RFC 9162 §2.1.4.2). Failures name the size and both roots.
 */
export function checkExtends(tree: ChainTreeView, cp: TreeCheckpoint): ExtendsOutcome {
  const { chainId } = tree;
  const origin = checkpointOrigin(chainId);
  const n = tree.size;
  if (cp.origin !== origin)
    return err({
      code: "checkpoint",
      seq: 0,
      detail: `the checkpoint is for ${cp.origin}, this chain is ${origin}`,
    });
  if (cp.size > n) {
    return err({
      code: "truncated",
      seq: n,
      detail: `the checkpoint covers tree size ${cp.size} (root ${b64(cp.root)}) but the chain has only ${n} events`,
    });
  }
  const root = treeHeadFrom(tree.read, n);
  const prefixRoot = treeHeadFrom(tree.read, cp.size);
  const proof = consistencyProofFrom(tree.read, cp.size, n);
  const consistent = verifyConsistency(cp.size, n, proof, cp.root, root);
  const doc: ConsistencyDoc = {
    chain_id: chainId,
    origin,
    old: { tree_size: cp.size, root: b64(cp.root) },
    new: { tree_size: n, root: b64(root) },
    proof: proof.map(b64),
    consistent,
  };
  if (!prefixRoot.equals(cp.root) || !consistent) {
    return err({
      code: "fork",
      seq: Math.max(cp.size - 1, 0),
      detail: `the chain does not extend the exported checkpoint: at tree size ${cp.size} the checkpoint's root is ${b64(cp.root)}, the chain's first ${cp.size} events hash to ${b64(prefixRoot)}; an event at or before seq ${cp.size - 1} was rewritten`,
      proof: doc,
    });
  }
  return ok(doc);
}

/**
 * A checkpoint chained as its own event (`chain.checkpoint`, payload `note`) against the tree its event follows: the
 * note must be signed by the owner key for this chain's origin, name the tree of every event before it (`size`), and
 * carry that tree's root. Undefined when it holds; else the reason, naming both roots.
 */
export function chainedNoteProblem(
  note: unknown,
  ownerKey: string,
  chainId: string,
  size: number,
  root: Buffer,
): string | undefined {
  if (typeof note !== "string") return `the chained checkpoint before seq ${size} carries a note that is not text`;
  const opened = openCheckpointNote(note, ownerKey);
  if (!opened.ok) return `the chained checkpoint note before seq ${size} is refused: ${opened.error}`;
  const cp = opened.value;
  const origin = checkpointOrigin(chainId);
  if (cp.origin !== origin)
    return `the chained checkpoint note before seq ${size} is for ${cp.origin}, this chain is ${origin}`;
  if (cp.size !== size)
    return `the chained checkpoint note at seq ${size} names tree size ${cp.size}; the events before it are a tree of ${size}`;
  if (!cp.root.equals(root))
    return `the chained checkpoint note at seq ${size} signs root ${b64(cp.root)} for tree size ${size}; the events before it hash to ${b64(root)}`;
  return undefined;
}

/**
 * The tree of a list of event hashes held in memory (an export file being verified): each subtree rehashed from its
 * leaves when asked, so a proof costs O(n) hashes. A stored chain is read from its stored tree instead
 * (src/chain/tree-reader.ts), O(log n).
 */
export function listTreeView(chainId: string, eventHashes: readonly string[]): ChainTreeView {
  const leaves = eventHashes.map(leafHash);
  return {
    chainId,
    size: leaves.length,
    read: (level, index) => treeRoot(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level)),
    eventHash: (seq) => eventHashes[seq] as string,
  };
}
