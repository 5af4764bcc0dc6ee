/**
 * Nodes as witnesses of the controller's history (issue 38): the node's side, pure.
 *
 * Every request a controller sends (but describe) carries its newest Merkle checkpoint, a C2SP signed note over its
 * audit chain (core/chain/note.ts), with the RFC 9162 consistency proof from the checkpoint the node already holds.
 * The node keeps, per controller key, the newest checkpoint it accepted, and so becomes a witness: a controller that
 * rewrites or forks its chain — a stolen key re-signing the tail, a store restored from a backup that then diverges —
 * cannot show this node a history that does not extend the one it saw.
 *
 * Structural rules (one row each in witness.test.ts):
 * - the first checkpoint from a key is taken as it comes (trust on first use, like the binding of epoch-fence.ts);
 * - a checkpoint is accepted only if its note is signed by the requesting key, names the chain the node witnesses,
 *   and is the held one or extends it (same root at the same size; a larger tree with a proof that verifies);
 * - an older tree than the one held is refused: the node cannot check it is a prefix, and a controller whose store
 *   went back in time (a restored backup) is exactly what a witness is for;
 * - once a node holds a checkpoint from a key, a mutating request from that key without one is refused (an attacker
 *   would otherwise drop the member); a read without one is served, it changes nothing;
 * - a proof that starts at another size than the held one is `witness_proof` (describe again, resend), never a
 *   verdict on the history; every other refusal is `witness`, the evidence the node chains.
 */
import { verifyConsistency } from "../chain/merkle.js";
import { openCheckpointNote, type TreeCheckpoint } from "../chain/note.js";
import type { CheckpointClaim } from "../protocol/messages.js";

export interface HeldCheckpoint extends TreeCheckpoint {
  /** The signed note as received, kept so the node can show what the controller signed. */
  readonly note: string;
}

export type WitnessVerdict =
  /** `accept`: a newer checkpoint to record (and chain) before the request is served; null when nothing changes. */
  | { readonly kind: "serve"; readonly accept: (HeldCheckpoint & { readonly from: number | null }) | null }
  | {
      readonly kind: "refuse";
      readonly code: "witness" | "witness_proof" | "invalid_request";
      readonly reason: string;
    };

const b64 = (h: Buffer) => h.toString("base64");
const BASE64_HASH = /^[A-Za-z0-9+/]{43}=$/;

export function judgeCheckpoint(
  held: HeldCheckpoint | null,
  claim: CheckpointClaim | undefined,
  controllerKey: string,
  mutating: boolean,
): WitnessVerdict {
  const refuse = (code: "witness" | "witness_proof" | "invalid_request", reason: string): WitnessVerdict => ({
    kind: "refuse",
    code,
    reason,
  });
  if (claim === undefined) {
    if (held === null || !mutating) return { kind: "serve", accept: null };
    return refuse(
      "invalid_request",
      `payload.checkpoint must carry the controller's newest checkpoint: this node has witnessed tree size ${held.size} of ${held.origin} from this key, and serves it no mutating request without one`,
    );
  }
  const opened = openCheckpointNote(claim.note, controllerKey);
  if (!opened.ok) return refuse("invalid_request", `payload.checkpoint.note: ${opened.error}`);
  const cp = opened.value;
  const incoming = `tree size ${cp.size} (root ${b64(cp.root)})`;
  if (held === null) return { kind: "serve", accept: { ...cp, note: claim.note, from: null } };
  const mine = `tree size ${held.size} (root ${b64(held.root)})`;
  if (cp.origin !== held.origin) {
    return refuse(
      "witness",
      `the controller's checkpoint is of ${cp.origin}, but this node witnesses ${held.origin} for this key at ${mine}: the controller's chain was replaced`,
    );
  }
  if (cp.size < held.size) {
    return refuse(
      "witness",
      `the controller's checkpoint at ${incoming} is older than the one this node holds, ${mine}: the controller's history was rolled back or forked`,
    );
  }
  if (cp.size === held.size) {
    if (cp.root.equals(held.root)) return { kind: "serve", accept: null };
    return refuse(
      "witness",
      `the controller's checkpoint at ${incoming} differs from the one this node holds at the same size, ${mine}: the controller's history was rewritten`,
    );
  }
  if (claim.proof_from !== held.size) {
    return refuse(
      "witness_proof",
      `payload.checkpoint.proof_from is ${claim.proof_from}, but this node holds ${mine}; describe the node again and send the proof from there`,
    );
  }
  if (!claim.proof.every((h) => BASE64_HASH.test(h)))
    return refuse("invalid_request", "payload.checkpoint.proof: every hash must be 32 bytes in base64");
  const proof = claim.proof.map((h) => Buffer.from(h, "base64"));
  if (!verifyConsistency(held.size, cp.size, proof, held.root, cp.root)) {
    return refuse(
      "witness",
      `the controller's checkpoint at ${incoming} does not extend the one this node holds, ${mine}: the consistency proof fails, so the controller's history was rewritten or forked`,
    );
  }
  return { kind: "serve", accept: { ...cp, note: claim.note, from: held.size } };
}
