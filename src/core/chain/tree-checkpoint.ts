/**
 * What the audit verbs prove with the Merkle tree (issue 38), over a chain's event hashes in seq order (already
 * verified by the caller): the tree head to export, an inclusion proof of one event, and whether the chain extends an
 * exported checkpoint (with the consistency proof that shows it). Pure; outcomes as values.
 */
import { consistencyProof, inclusionProof, leafHash, treeRoot, verifyConsistency, verifyInclusion } from "./merkle.js";
import { checkpointOrigin, type TreeCheckpoint } from "./note.js";

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

export type ExtendsOutcome =
  | { readonly ok: true; readonly proof: ConsistencyDoc }
  | { readonly ok: false; readonly code: "checkpoint" | "truncated" | "fork"; readonly seq: number; readonly detail: string; readonly proof?: ConsistencyDoc };

export function treeHeadOf(chainId: string, eventHashes: readonly string[]): TreeCheckpoint {
  return { origin: checkpointOrigin(chainId), size: eventHashes.length, root: treeRoot(eventHashes.map(leafHash)) };
}

export function proveEvent(chainId: string, eventHashes: readonly string[], seq: number): InclusionProofDoc | { error: string } {
  if (!Number.isSafeInteger(seq) || seq < 0 || seq >= eventHashes.length) return { error: `seq ${seq} is not in this chain (it holds seq 0..${eventHashes.length - 1})` };
  const leaves = eventHashes.map(leafHash);
  const root = treeRoot(leaves);
  const path = inclusionProof(leaves, seq);
  // Checked before it is printed: a proof berth emits must verify with the RFC's verifier.
  if (!verifyInclusion(leaves[seq] as Buffer, seq, leaves.length, path, root)) throw new Error(`internal: the inclusion proof of seq ${seq} does not verify`);
  return { chain_id: chainId, origin: checkpointOrigin(chainId), tree_size: leaves.length, root: b64(root), leaf_index: seq, event_hash: eventHashes[seq] as string, path: path.map(b64) };
}

/**
 * Does this chain extend the exported checkpoint? The checkpoint's origin must name this chain, its tree must not be
 * larger than the chain, and the chain's first `size` events must hash to its root; then the consistency proof from
 * its size to the chain's verifies (RFC 9162 §2.1.4.2). Failures name the size and both roots.
 */
export function checkExtends(chainId: string, eventHashes: readonly string[], cp: TreeCheckpoint): ExtendsOutcome {
  const origin = checkpointOrigin(chainId);
  const n = eventHashes.length;
  if (cp.origin !== origin) return { ok: false, code: "checkpoint", seq: 0, detail: `the checkpoint is for ${cp.origin}, this chain is ${origin}` };
  if (cp.size > n) {
    return { ok: false, code: "truncated", seq: n, detail: `the checkpoint covers tree size ${cp.size} (root ${b64(cp.root)}) but the chain has only ${n} events` };
  }
  const leaves = eventHashes.map(leafHash);
  const root = treeRoot(leaves);
  const prefixRoot = treeRoot(leaves, cp.size);
  const proof = consistencyProof(leaves, cp.size);
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
    return {
      ok: false,
      code: "fork",
      seq: Math.max(cp.size - 1, 0),
      detail: `the chain does not extend the exported checkpoint: at tree size ${cp.size} the checkpoint's root is ${b64(cp.root)}, the chain's first ${cp.size} events hash to ${b64(prefixRoot)}; an event at or before seq ${cp.size - 1} was rewritten`,
      proof: doc,
    };
  }
  return { ok: true, proof: doc };
}
