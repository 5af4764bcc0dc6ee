/**
 * Audit events (spec/audit-chain.md §3, §5): the ten fields, the hashing preimage and the signature.
 * Pure: sealing takes the tip, the clock reading and the key as inputs.
 */
import { canonicalJson, type JsonObject } from "../crypto/canonical.js";
import { hexBodySignatures, type SigningKey } from "../crypto/ed25519.js";
import { isLowerHex } from "../crypto/hex.js";
import { taggedSha256Hex } from "../crypto/tagged.js";

export const ZERO_HASH = "0".repeat(64);
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
export const NAME_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;
export const CHAIN_FORMAT = "berth.audit.v1";

export type ChainRole = "controller" | "node" | "k8s";

/** An event exactly as stored, exported and verified: ten fields, no others. */
export interface SealedEvent {
  readonly seq: number;
  readonly chain_id: string;
  readonly ts: number;
  readonly prev_hash: string;
  readonly source: string;
  readonly kind: string;
  readonly payload: JsonObject;
  readonly payload_hash: string;
  readonly hash: string;
  readonly sig: string;
}

export const EVENT_FIELDS = [
  "seq",
  "chain_id",
  "ts",
  "prev_hash",
  "source",
  "kind",
  "payload",
  "payload_hash",
  "hash",
  "sig",
] as const;

export interface EventDraft {
  readonly source: string;
  readonly kind: string;
  readonly payload: JsonObject;
}

export interface ChainTip {
  readonly seq: number;
  readonly hash: string;
  readonly ts: number;
}

/** §5.1: SHA-256 over TAG("berth.audit.payload.v1") ‖ JCS(payload). */
export function payloadHashOf(canonicalPayload: string): string {
  return taggedSha256Hex("berth.audit.payload.v1", canonicalPayload);
}

/** §5.2: the header preimage holds the payload only through its hash; `sig` is never hashed. */
export function eventHashOf(header: {
  chain_id: string;
  kind: string;
  payload_hash: string;
  prev_hash: string;
  seq: number;
  source: string;
  ts: number;
}): string {
  const { chain_id, kind, payload_hash, prev_hash, seq, source, ts } = header;
  // Every member is ASCII (hex, or a name matching NAME_PATTERN) and every number a safe integer, so the JCS form is
  // the members in this fixed order with JSON.stringify escaping; the unit test pins it against canonicalJson.
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(ts)) throw new DraftError("seq and ts must be safe integers");
  const preimage = `{"chain_id":${JSON.stringify(chain_id)},"kind":${JSON.stringify(kind)},"payload_hash":${JSON.stringify(payload_hash)},"prev_hash":${JSON.stringify(prev_hash)},"seq":${seq},"source":${JSON.stringify(source)},"ts":${ts}}`;
  return taggedSha256Hex("berth.audit.event.v1", preimage);
}

/** §5.3: the signed message is TAG("berth.audit.sig.v1") ‖ the 32 raw bytes of the hash (51 bytes). */
const eventSignatures = hexBodySignatures("berth.audit.sig.v1", 32);

export function signEventHash(key: SigningKey, hash: string): string {
  if (!isLowerHex(hash, 32)) throw new Error("event hash must be 64 lowercase hex");
  return eventSignatures.sign(key, hash);
}

export function verifyEventSignature(ownerKey: string, hash: string, sig: string): boolean {
  return eventSignatures.verify(ownerKey, hash, sig);
}

export class DraftError extends Error {
  override name = "DraftError";
}

/** Checks a draft's names and payload and returns its canonical payload text. */
export function canonicalPayloadOf(draft: EventDraft): string {
  for (const field of ["source", "kind"] as const) {
    const name = draft[field];
    if (typeof name !== "string" || name.length > 64 || !NAME_PATTERN.test(name)) {
      throw new DraftError(
        `event ${field} ${JSON.stringify(name)} must match ${NAME_PATTERN} and be at most 64 characters`,
      );
    }
  }
  const text = canonicalJson(draft.payload);
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so a short text needs no byte count.
  if (text.length * 3 > MAX_PAYLOAD_BYTES && Buffer.byteLength(text, "utf8") > MAX_PAYLOAD_BYTES)
    throw new DraftError("event payload exceeds 1 MiB in canonical form");
  return text;
}

/**
 * Seals the next event after `tip` (undefined for genesis). `nowMs` is the caller's clock; `ts` never goes backwards.
 */
export function sealEvent(args: {
  chainId: string;
  tip: ChainTip | undefined;
  nowMs: number;
  draft: EventDraft;
  key: SigningKey;
}): { event: SealedEvent; canonicalPayload: string } {
  const { chainId, tip, nowMs, draft, key } = args;
  const canonicalPayload = canonicalPayloadOf(draft);
  const seq = tip ? tip.seq + 1 : 0;
  const prev_hash = tip ? tip.hash : ZERO_HASH;
  const ts = tip ? Math.max(nowMs, tip.ts) : nowMs;
  const payload_hash = payloadHashOf(canonicalPayload);
  const hash = eventHashOf({
    chain_id: chainId,
    kind: draft.kind,
    payload_hash,
    prev_hash,
    seq,
    source: draft.source,
    ts,
  });
  const sig = signEventHash(key, hash);
  const payload = JSON.parse(canonicalPayload) as JsonObject;
  return {
    event: {
      seq,
      chain_id: chainId,
      ts,
      prev_hash,
      source: draft.source,
      kind: draft.kind,
      payload,
      payload_hash,
      hash,
      sig,
    },
    canonicalPayload,
  };
}

/** §6: the genesis payload. `predecessor` only for a chain that replaces a broken one. */
export function genesisPayload(args: {
  role: ChainRole;
  ownerKey: string;
  ownerId: string;
  predecessor?: { chain_id: string; seq: number; hash: string; reason: string };
}): JsonObject {
  const payload: JsonObject = {
    format: CHAIN_FORMAT,
    owner_id: args.ownerId,
    owner_key: args.ownerKey,
    role: args.role,
  };
  if (args.predecessor) payload.predecessor = { ...args.predecessor };
  return payload;
}

/** The JSON-lines form of an event (§9): the JCS form of all ten fields. */
export function exportLine(event: SealedEvent): string {
  return canonicalJson({ ...event });
}
