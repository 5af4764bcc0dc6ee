/**
 * The control protocol's vocabulary and shapes (spec/mesh.md §4.2, §4.4, §4.8): methods, refusal codes, the signed
 * envelope, request and response payloads and the five message frames. Every schema is strict: an unknown member is
 * refused, never ignored, because a member a verifier skips is a member an attacker can use.
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";

export const METHODS = [
  "describe",
  "place",
  "load",
  "start",
  "stop",
  "unload",
  "status",
  "logs",
  "rehome",
  "revocations",
] as const;
export type Method = (typeof METHODS)[number];
/** `rehome` (issue 20) moves the node's binding of this controller key to the requesting store: mutating, chained. */
export const MUTATING_METHODS: ReadonlySet<string> = new Set([
  "place",
  "load",
  "start",
  "stop",
  "unload",
  "rehome",
  "revocations",
]);
export const READ_METHODS: ReadonlySet<string> = new Set(["describe", "status", "logs"]);

export function isMethod(value: string): value is Method {
  return (METHODS as readonly string[]).includes(value);
}

export const REFUSAL_CODES = [
  "signature",
  "invalid_request",
  "not_for_me",
  "stale_boot",
  "expired",
  "unauthorized",
  "busy",
  "replay",
  "unknown_method",
  "governance",
  "admission",
  "fetch",
  "verify",
  "runtime",
  "unknown_instance",
  /** A placement set configuration outside the package's signed surface, or a loader hook (issue 12). */
  "config_refused",
  /** A fence did not hold: the instance is not at the generation (or epoch) the request named (issue 14 item 3). */
  "precondition_failed",
  /** The node serves this controller key for another controller store; only `berth node rehome` moves it (issue 20). */
  "foreign_store",
  /** The request's leader epoch is below the highest this node has seen from the key's store: a deposed leader (issue 20). */
  "stale_epoch",
  /**
   * Issue 38: the request's controller checkpoint is not consistent with the newest one this node holds from the key
   * (another history: a rewritten or forked controller chain). Final; chained on the node as the evidence.
   */
  "witness",
  /**
   * Issue 38: the request's consistency proof does not start at the checkpoint this node holds: describe the node
   * again (its answer names the size it holds) and resend. Nothing was done.
   */
  "witness_proof",
  /** The node's disk is full: it refuses new work and lease renewals it cannot record, and keeps what runs (issue 37). */
  "disk_full",
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** §4.9 limits. */
export const LIMITS = {
  frameBytes: 16 * 1024 * 1024,
  requestPayloadBytes: 256 * 1024,
  responsePayloadBytes: 4 * 1024 * 1024,
  fetchRangeBytes: 1024 * 1024,
  manifestBytes: 1024 * 1024,
  validityMs: 300_000,
  clockLeadMs: 30_000,
  nonceGuardEntries: 8192,
  reasonBytes: 1024,
  nestedReasonBytes: 512,
  logTailBytes: 65_536,
  graceDefaultMs: 2000,
  graceMaxMs: 60_000,
} as const;

export const HEX32 = /^[0-9a-f]{32}$/;
export const HEX64 = /^[0-9a-f]{64}$/;
export const HEX128 = /^[0-9a-f]{128}$/;

/** `{payload, key, sig}`: the payload is the exact signed text; never re-serialised before verifying. */
export const SignedMessageSchema = z.strictObject({
  payload: z.string(),
  key: z.string(),
  sig: z.string(),
});
export type SignedMessage = z.infer<typeof SignedMessageSchema>;

/**
 * Issue 20: who, behind the controller key, sends a request: the controller store (`store_id`, random, created once
 * with the store and kept by `berth migrate`) and the leader epoch it acts under. Member types only; the values are
 * check 11a of §4.6.
 */
export const AuthoritySchema = z.strictObject({ store_id: z.string(), epoch: z.number().int() });
export type Authority = z.infer<typeof AuthoritySchema>;

/**
 * Issue 38: the controller's newest checkpoint as a C2SP signed note (note.ts) and the RFC 9162 consistency proof from
 * the tree size the node holds (`proof_from`, as the node's describe said) to the note's. Absent when the controller
 * has no checkpoint yet or the node does not witness (an older node refuses an unknown member, so a controller sends
 * it only to a node whose describe answer carries `witness`).
 */
export const CheckpointClaimSchema = z.strictObject({
  note: z.string().max(1024),
  proof_from: z.number().int(),
  proof: z.array(z.string().max(64)).max(64),
});
export type CheckpointClaim = z.infer<typeof CheckpointClaimSchema>;

/** Check 4 of §4.6: the exact member set and member types. Values are checked by later steps with their own codes. */
export const RequestPayloadSchema = z.strictObject({
  version: z.number().int(),
  method: z.string().max(64),
  requester: z.string(),
  target: z.string(),
  target_boot: z.string().nullable(),
  nonce: z.string(),
  issued_at_ms: z.number().int(),
  expires_at_ms: z.number().int(),
  decision_id: z.string().nullable(),
  /** Required on mutating methods; on read methods optional (null), and it only binds an unbound node (issue 20). */
  authority: AuthoritySchema.nullable(),
  body: z.record(z.string(), z.unknown()),
  /** Issue 38, optional: see CheckpointClaimSchema. */
  checkpoint: CheckpointClaimSchema.optional(),
});
export type RequestPayload = z.infer<typeof RequestPayloadSchema>;

export const OutcomeSchema = z.discriminatedUnion("status", [
  z.strictObject({ status: z.literal("ok"), result: z.record(z.string(), z.unknown()) }),
  z.strictObject({ status: z.literal("refused"), code: z.enum(REFUSAL_CODES), reason: z.string() }),
]);
export type Outcome = z.infer<typeof OutcomeSchema>;

export const ResponsePayloadSchema = z.strictObject({
  version: z.literal(1),
  method: z.string().max(64),
  responder: z.string(),
  boot_id: z.string(),
  request_nonce: z.string(),
  outcome: OutcomeSchema,
});
export type ResponsePayload = z.infer<typeof ResponsePayloadSchema>;

const fetchMembers = {
  what: z.enum(["manifest", "file"]),
  package_id: z.string().regex(HEX64, "package_id must be 64 lowercase hex"),
  /** `null` for the manifest, the pinned hash for a file. */
  sha256: z.string().regex(HEX64, "sha256 must be 64 lowercase hex").nullable(),
  offset: z.number().int().min(0),
  length: z.number().int().min(1).max(LIMITS.fetchRangeBytes),
};

/** §4.2: the frames of one exchange. A data frame (raw bytes) follows a `data` message and is not listed here. */
export const MessageFrameSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("request"), signed: SignedMessageSchema }),
  z.strictObject({ type: z.literal("fetch"), ...fetchMembers }),
  z.strictObject({
    type: z.literal("data"),
    ...fetchMembers,
    data_length: z.number().int().min(0).max(LIMITS.fetchRangeBytes),
  }),
  z.strictObject({ type: z.literal("fetch_error"), reason: z.string().max(LIMITS.reasonBytes) }),
  z.strictObject({ type: z.literal("response"), signed: SignedMessageSchema }),
]);
export type MessageFrame = z.infer<typeof MessageFrameSchema>;
export type FetchFrame = Extract<MessageFrame, { type: "fetch" }>;
export type DataFrame = Extract<MessageFrame, { type: "data" }>;

/** Parses a frame as a message frame; anything else (not UTF-8 JSON, unknown type or member) is a protocol error. */
export function parseMessageFrame(bytes: Uint8Array): Result<MessageFrame> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return { ok: false, error: "frame is not a UTF-8 JSON message" };
  }
  const parsed = MessageFrameSchema.safeParse(value);
  if (!parsed.success) return { ok: false, error: describeIssues("frame", parsed.error.issues) };
  return { ok: true, value: parsed.data };
}

export function encodeMessageFrame(frame: MessageFrame): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(frame));
}

/** One line naming the field of the first few issues, for refusal reasons and errors. */
export function describeIssues(what: string, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 3)
    .map((i) => `${what}${i.path.length ? `.${i.path.map(String).join(".")}` : ""}: ${i.message}`)
    .join("; ");
}

/** Truncates text to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over continuation bytes so the cut falls on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/** §4.8: reason ≤ 1024 bytes; a nested error ≤ 512 bytes so the fixed prefix and suffix survive. */
export function composeReason(prefix: string, nested: string, suffix = ""): string {
  return truncateUtf8(`${prefix}${truncateUtf8(nested, LIMITS.nestedReasonBytes)}${suffix}`, LIMITS.reasonBytes);
}
