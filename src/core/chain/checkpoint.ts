/** Signed checkpoints (spec/audit-chain.md §10): the owner's signed statement "the head at seq N was H". */
import { canonicalJson } from "../crypto/canonical.js";
import { type SigningKey, signTagged, verifyTagged } from "../crypto/ed25519.js";

export const CHECKPOINT_FORMAT = "berth.audit.checkpoint.v1";

export interface CheckpointBody {
  readonly chain_id: string;
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly head_hash: string;
  readonly key: string;
  readonly seq: number;
  readonly ts: number;
}

export interface SignedCheckpoint {
  readonly checkpoint: CheckpointBody;
  readonly sig: string;
}

export function signCheckpoint(
  key: SigningKey,
  head: { chainId: string; seq: number; hash: string },
  ts: number,
): SignedCheckpoint {
  const checkpoint: CheckpointBody = {
    chain_id: head.chainId,
    format: CHECKPOINT_FORMAT,
    head_hash: head.hash,
    key: key.publicKey,
    seq: head.seq,
    ts,
  };
  return { checkpoint, sig: signTagged(key, "berth.audit.checkpoint.v1", canonicalJson({ ...checkpoint })) };
}

export function checkpointSignatureValid(cp: SignedCheckpoint): boolean {
  try {
    return verifyTagged(cp.checkpoint.key, "berth.audit.checkpoint.v1", canonicalJson({ ...cp.checkpoint }), cp.sig);
  } catch {
    return false;
  }
}
