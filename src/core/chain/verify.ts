/**
 * Offline verification of a chain (spec/audit-chain.md §8): needs nothing but the events, the owner's public key and
 * optional checkpoints. Events are checked in order; the first failure stops the walk and is named by the sequence
 * number expected at that position and one stable failure code.
 */
import { canonicalJson, isJsonObject, type JsonObject, parseCanonical } from "../crypto/canonical.js";
import { isPublicKeyHex, nodeIdOf } from "../crypto/ed25519.js";
import { isLowerHex } from "../crypto/hex.js";
import { CHECKPOINT_FORMAT, checkpointSignatureValid, type SignedCheckpoint } from "./checkpoint.js";
import {
  CHAIN_FORMAT,
  EVENT_FIELDS,
  eventHashOf,
  MAX_PAYLOAD_BYTES,
  NAME_PATTERN,
  payloadHashOf,
  verifyEventSignature,
  ZERO_HASH,
} from "./event.js";
import { leafHash } from "./merkle.js";
import { chainedNoteProblem } from "./tree-checkpoint.js";
import { type Frontier, frontierRoot, pushLeaf } from "./tree-hashes.js";

export type FailureCode =
  | "format"
  | "chain_id"
  | "seq"
  | "genesis"
  | "prev_hash"
  | "ts"
  | "payload_hash"
  | "hash"
  | "signature"
  | "checkpoint"
  | "truncated"
  | "fork"
  // §8 check 10 (issue 35): a stored gate summary does not hash to the name its decision event signed.
  | "summary"
  // §8 check 12 (issue 38): a stored Merkle tree node is not the hash of the events under it.
  | "tree";

export interface VerifyFailure {
  readonly seq: number;
  readonly code: FailureCode;
  readonly detail: string;
  /**
   * Issue 36: set when the only fault found is that a well-formed genesis names another owner key than the pinned one:
   * that key signed the chain. Most often the wrong key was given (a typo, another home's key, a package signer's key),
   * which says nothing about the chain; a chain replaced whole by one signed with another key looks the same.
   */
  readonly signed_by?: string;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly chain_id: string | null;
  readonly events: number;
  readonly head: { seq: number; hash: string } | null;
  readonly checkpoints: number;
  /** True when no key was pinned, so the genesis key vouched for itself. */
  readonly keySelfAsserted: boolean;
  readonly failure?: VerifyFailure;
}

export interface VerifyOptions {
  /** The owner's public key (64 hex). Without it the genesis key is trusted and the result says so. */
  readonly key?: string;
  /** The chain to expect; defaults to the first event's. */
  readonly chainId?: string;
  readonly checkpoints?: readonly SignedCheckpoint[];
  readonly expectHead?: { seq: number; hash: string };
  /**
   * Resume after an already verified event (the start-up check from a checkpoint, §7): the walk expects
   * `after.seq + 1` first, linked to `after.hash`. Requires `key` (the genesis is not re-read).
   */
  readonly after?: { seq: number; hash: string; ts: number };
  /** The exact stored payload text for an item, when it came from storage (checked for canonical form). */
  readonly payloadTextOf?: (item: unknown, index: number) => string | undefined;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function formatProblem(e: Record<string, unknown>): string | undefined {
  const keys = Object.keys(e);
  const extra = keys.filter((k) => !(EVENT_FIELDS as readonly string[]).includes(k));
  if (extra.length > 0) return `unexpected field ${extra.map((k) => JSON.stringify(k)).join(", ")}`;
  const missing = EVENT_FIELDS.filter((k) => !(k in e));
  if (missing.length > 0) return `missing field ${missing.join(", ")}`;
  if (!Number.isSafeInteger(e.seq) || (e.seq as number) < 0) return "seq must be a non-negative integer";
  if (!Number.isSafeInteger(e.ts) || (e.ts as number) < 0 || (e.ts as number) > MAX_SAFE)
    return "ts must be a non-negative integer";
  if (!isLowerHex(e.chain_id, 16)) return "chain_id must be 32 lowercase hex";
  if (!isLowerHex(e.prev_hash, 32)) return "prev_hash must be 64 lowercase hex";
  if (!isLowerHex(e.payload_hash, 32)) return "payload_hash must be 64 lowercase hex";
  if (!isLowerHex(e.hash, 32)) return "hash must be 64 lowercase hex";
  if (!isLowerHex(e.sig, 64)) return "sig must be 128 lowercase hex";
  for (const f of ["source", "kind"] as const) {
    const v = e[f];
    if (typeof v !== "string" || v.length > 64 || !NAME_PATTERN.test(v)) return `${f} must match ${NAME_PATTERN}`;
  }
  if (!isJsonObject(e.payload)) return "payload must be a JSON object";
  return undefined;
}

function genesisProblem(e: Record<string, unknown>, pinnedKey: string | undefined): string | undefined {
  if (e.prev_hash !== ZERO_HASH) return "genesis prev_hash must be 64 zeros";
  if (e.source !== "chain" || e.kind !== "chain.genesis")
    return `genesis must be chain/chain.genesis, got ${String(e.source)}/${String(e.kind)}`;
  const p = e.payload as JsonObject;
  if (p.format !== CHAIN_FORMAT) return `genesis format must be ${CHAIN_FORMAT}`;
  if (p.role !== "controller" && p.role !== "node" && p.role !== "k8s")
    return "genesis role must be controller, node or k8s";
  if (!isPublicKeyHex(p.owner_key)) return "genesis owner_key must be 64 lowercase hex";
  if (p.owner_id !== nodeIdOf(p.owner_key)) return "genesis owner_id does not match owner_key";
  const allowed = new Set(["format", "role", "owner_key", "owner_id", "predecessor"]);
  const extra = Object.keys(p).filter((k) => !allowed.has(k));
  if (extra.length > 0) return `genesis payload has unexpected member ${extra.join(", ")}`;
  if (pinnedKey !== undefined && p.owner_key !== pinnedKey) {
    return `genesis owner_key ${p.owner_key} is not the pinned key ${pinnedKey}`;
  }
  return undefined;
}

export function verifyEvents(items: Iterable<unknown>, opts: VerifyOptions = {}): VerifyResult {
  const pinned = opts.key;
  let chainId: string | null = opts.chainId ?? null;
  let ownerKey: string | undefined = pinned;
  const hashes: string[] = [];
  let prevTs = 0;
  let index = 0;
  // Walking from genesis, the Merkle tree's right edge follows the walk, so each chained checkpoint note is checked
  // against the tree of the events before it (§8 check 11, issue 38). A walk resumed after a checkpoint has no edge.
  const frontier: Frontier | undefined = opts.after ? undefined : { size: 0, levels: [] };
  if (opts.after) {
    if (pinned === undefined) throw new Error("verifyEvents: resuming after a checkpoint needs the owner key");
    // Earlier hashes are not needed; keep the array indexed by seq.
    hashes.length = opts.after.seq;
    hashes[opts.after.seq] = opts.after.hash;
    prevTs = opts.after.ts;
    index = opts.after.seq + 1;
  }

  const result = (failure?: VerifyFailure): VerifyResult => ({
    ok: failure === undefined,
    chain_id: chainId,
    events: hashes.length,
    head: hashes.length > 0 ? { seq: hashes.length - 1, hash: hashes[hashes.length - 1] as string } : null,
    checkpoints: opts.checkpoints?.length ?? 0,
    keySelfAsserted: pinned === undefined,
    ...(failure ? { failure } : {}),
  });

  for (const item of items) {
    const expected = index;
    const fail = (code: FailureCode, detail: string) => result({ seq: expected, code, detail });
    if (typeof item !== "object" || item === null || Array.isArray(item))
      return fail("format", "event is not a JSON object");
    const e = item as Record<string, unknown>;
    // 1. format
    const bad = formatProblem(e);
    if (bad) return fail("format", bad);
    // 2. chain id
    if (chainId === null) chainId = e.chain_id as string;
    if (e.chain_id !== chainId)
      return fail("chain_id", `event seq ${String(e.seq)} has chain_id ${String(e.chain_id)}, expected ${chainId}`);
    // 3. seq
    if (e.seq !== expected) return fail("seq", `found seq ${String(e.seq)} where seq ${expected} was expected`);
    // 4. genesis
    if (expected === 0) {
      const g = genesisProblem(e, pinned);
      const owner = (e.payload as JsonObject | null)?.owner_key;
      if (
        g &&
        pinned !== undefined &&
        typeof owner === "string" &&
        owner !== pinned &&
        genesisProblem(e, undefined) === undefined
      ) {
        return result({ seq: expected, code: "genesis", detail: g, signed_by: owner });
      }
      if (g) return fail("genesis", g);
      ownerKey = (e.payload as JsonObject).owner_key as string;
    }
    // 5. link
    if (expected > 0 && e.prev_hash !== hashes[expected - 1]) {
      return fail("prev_hash", `prev_hash ${String(e.prev_hash)} is not the hash of seq ${expected - 1}`);
    }
    // 6. time never goes backwards
    if (expected > 0 && (e.ts as number) < prevTs)
      return fail("ts", `ts ${String(e.ts)} is before the previous event's ${prevTs}`);
    // 7. payload
    let canonical: string;
    const storedText = opts.payloadTextOf?.(item, index);
    if (storedText !== undefined) {
      const parsed = parseCanonical(storedText);
      if (!parsed.ok) return fail("payload_hash", `stored payload ${parsed.error}`);
      canonical = storedText;
    } else {
      try {
        canonical = canonicalJson(e.payload);
      } catch (error) {
        return fail("payload_hash", `payload is not representable: ${(error as Error).message}`);
      }
    }
    if (Buffer.byteLength(canonical, "utf8") > MAX_PAYLOAD_BYTES) return fail("payload_hash", "payload exceeds 1 MiB");
    if (payloadHashOf(canonical) !== e.payload_hash)
      return fail("payload_hash", "payload does not hash to payload_hash");
    // 8. header hash
    const recomputed = eventHashOf({
      chain_id: e.chain_id as string,
      kind: e.kind as string,
      payload_hash: e.payload_hash as string,
      prev_hash: e.prev_hash as string,
      seq: e.seq as number,
      source: e.source as string,
      ts: e.ts as number,
    });
    if (recomputed !== e.hash) return fail("hash", `header hashes to ${recomputed}, event says ${String(e.hash)}`);
    // 9. signature under the owner key
    if (!ownerKey || !verifyEventSignature(ownerKey, e.hash as string, e.sig as string)) {
      return fail("signature", `signature does not verify under ${ownerKey ?? "no key"}`);
    }
    // 11. a checkpoint chained with its Merkle note (issue 38) signs the tree of every event before it.
    if (frontier !== undefined) {
      const note = e.kind === "chain.checkpoint" && e.source === "chain" ? (e.payload as JsonObject).note : undefined;
      if (note !== undefined) {
        const problem = chainedNoteProblem(note, ownerKey, chainId, expected, frontierRoot(frontier));
        if (problem !== undefined) return fail("checkpoint", problem);
      }
      pushLeaf(frontier, leafHash(e.hash as string));
    }
    hashes.push(e.hash as string);
    prevTs = e.ts as number;
    index++;
  }

  const lastSeq = hashes.length - 1;
  for (const cp of opts.checkpoints ?? []) {
    const body = cp?.checkpoint;
    const cpSeq = typeof body?.seq === "number" ? body.seq : -1;
    const fail = (code: FailureCode, detail: string) => result({ seq: Math.min(cpSeq, lastSeq + 1), code, detail });
    if (
      !body ||
      body.format !== CHECKPOINT_FORMAT ||
      !checkpointSignatureValid(cp) ||
      (ownerKey !== undefined && body.key !== ownerKey) ||
      (chainId !== null && body.chain_id !== chainId)
    ) {
      return fail("checkpoint", `checkpoint at seq ${cpSeq} is not signed by the owner key for this chain`);
    }
    if (cpSeq > lastSeq)
      return fail("truncated", `checkpoint covers seq ${cpSeq} but the chain ends at seq ${lastSeq}`);
    if (hashes[cpSeq] !== body.head_hash) {
      return fail("fork", `checkpoint says seq ${cpSeq} is ${body.head_hash}, the chain has ${hashes[cpSeq]}`);
    }
  }
  if (opts.expectHead) {
    const { seq, hash } = opts.expectHead;
    if (seq > lastSeq)
      return result({
        seq: lastSeq + 1,
        code: "truncated",
        detail: `expected head at seq ${seq} but the chain ends at seq ${lastSeq}`,
      });
    if (hashes[seq] !== hash)
      return result({ seq, code: "fork", detail: `expected ${hash} at seq ${seq}, the chain has ${hashes[seq]}` });
  }
  if (hashes.length === 0) return result({ seq: 0, code: "seq", detail: "the chain has no events (no genesis)" });
  return result();
}
