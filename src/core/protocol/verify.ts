/**
 * Target-side verification of a control request (spec/mesh.md §4.6), one check per step, in the spec's order, answering
 * with the first failing check's code. Structural rules:
 *
 * - the signature is verified over the payload text exactly as received, before anything parses it;
 * - the nonce is recorded last (check 15), so a forged, malformed, misaddressed or unauthorised request can never
 *   burn a nonce that a legitimate request will use;
 * - checks 1–12 failing makes the request *unauthenticated*: the shell closes the connection after the refusal and
 *   chains it under a budget.
 */
import { parseCanonical } from "../crypto/canonical.js";
import { isPublicKeyHex, nodeIdOf, verifyTagged } from "../crypto/ed25519.js";
import {
  describeIssues,
  HEX32,
  HEX64,
  HEX128,
  isMethod,
  LIMITS,
  MUTATING_METHODS,
  READ_METHODS,
  type RefusalCode,
  type RequestPayload,
  RequestPayloadSchema,
  type SignedMessage,
} from "./messages.js";
import type { NonceGuard } from "./nonce-guard.js";
import { REQUEST_TAG } from "./sign.js";

export interface TargetContext {
  readonly nodeId: string;
  readonly bootId: string;
  readonly nowMs: number;
  /** Authorised controller keys (node.json `controllers`, §3.2). Empty: nobody is served. */
  readonly authorised: ReadonlySet<string>;
  readonly guard: NonceGuard;
}

declare const verifiedBrand: unique symbol;
/** A request that passed every check of §4.6; only `verifyRequest` makes one. */
export type VerifiedRequest = RequestPayload & { readonly [verifiedBrand]: true; readonly key: string };

export type RequestVerdict =
  | { readonly kind: "accepted"; readonly request: VerifiedRequest }
  | {
      readonly kind: "refused";
      readonly code: RefusalCode;
      readonly reason: string;
      /** false for checks 1–12: the sender is not known to be an authorised controller. */
      readonly authenticated: boolean;
      /** What could be read back for the answer's echo fields (`""` when unreadable). */
      readonly method: string;
      readonly nonce: string;
      readonly requester: string | null;
      readonly decisionId: string | null;
    };

export function verifyRequest(signed: SignedMessage, ctx: TargetContext): RequestVerdict {
  let echo = { method: "", nonce: "", requester: null as string | null, decisionId: null as string | null };
  const refuse = (code: RefusalCode, reason: string, authenticated = false): RequestVerdict => ({
    kind: "refused",
    code,
    reason,
    authenticated,
    ...echo,
  });

  // 1. sizes and encodings
  if (Buffer.byteLength(signed.payload, "utf8") > LIMITS.requestPayloadBytes)
    return refuse("signature", "payload exceeds 262144 bytes");
  if (!isPublicKeyHex(signed.key)) return refuse("signature", "key is not 64 lowercase hex");
  if (!HEX128.test(signed.sig)) return refuse("signature", "sig is not 128 lowercase hex");
  // 2. the signature, over the bytes as received
  if (!verifyTagged(signed.key, REQUEST_TAG, signed.payload, signed.sig))
    return refuse("signature", "signature does not verify");
  // 3. a canonical JSON object
  const parsed = parseCanonical(signed.payload);
  if (!parsed.ok) return refuse("signature", `payload: ${parsed.error}`);
  if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
    return refuse("signature", "payload is not a JSON object");
  }
  // 4. exact member set and member types
  const shape = RequestPayloadSchema.safeParse(parsed.value);
  if (!shape.success) return refuse("signature", describeIssues("payload", shape.error.issues));
  const req = shape.data;
  echo = { method: req.method, nonce: req.nonce, requester: req.requester, decisionId: req.decision_id };
  // 5.
  if (req.version !== 1)
    return refuse("invalid_request", `payload.version: unsupported version ${req.version}, expected 1`);
  // 6.
  const keyId = nodeIdOf(signed.key);
  if (req.requester !== keyId) return refuse("signature", "payload.requester is not the node id of the signing key");
  // 7.
  const forMe = req.target === ctx.nodeId || (req.target === "*" && req.method === "describe");
  if (!forMe) {
    return refuse(
      "not_for_me",
      req.target === "*"
        ? `payload.target "*" is only allowed for describe, not ${req.method}`
        : `payload.target ${req.target} is not this node`,
    );
  }
  // 8.
  if (req.method === "describe" ? req.target_boot !== null : req.target_boot !== ctx.bootId) {
    return refuse(
      "stale_boot",
      req.method === "describe"
        ? "payload.target_boot must be null for describe"
        : "payload.target_boot names another boot of this node; describe it again",
    );
  }
  // 9.
  const validity = req.expires_at_ms - req.issued_at_ms;
  if (req.expires_at_ms <= ctx.nowMs) return refuse("expired", "payload.expires_at_ms is in the past");
  if (req.issued_at_ms > ctx.nowMs + LIMITS.clockLeadMs)
    return refuse("expired", "payload.issued_at_ms is more than 30 s in the future");
  if (validity <= 0 || validity > LIMITS.validityMs) return refuse("expired", "payload validity must be 1…300000 ms");
  // 10.
  if (!HEX32.test(req.nonce)) return refuse("invalid_request", "payload.nonce must be 32 lowercase hex");
  // 11.
  const decisionOk = MUTATING_METHODS.has(req.method)
    ? req.decision_id !== null && HEX64.test(req.decision_id)
    : READ_METHODS.has(req.method)
      ? req.decision_id === null
      : req.decision_id === null || HEX64.test(req.decision_id);
  if (!decisionOk) {
    return refuse(
      "invalid_request",
      MUTATING_METHODS.has(req.method)
        ? `payload.decision_id must be 64 lowercase hex on ${req.method}`
        : `payload.decision_id must be null on ${req.method}`,
    );
  }
  // 11a. (issue 20) who behind the key: a store id and a leader epoch, on every mutating method
  const authority = authorityProblem(req);
  if (authority !== null) return refuse("invalid_request", authority);
  // 12.
  if (!ctx.authorised.has(signed.key))
    return refuse("unauthorized", "the signing key is not an authorised controller of this node");
  // 13., 14.
  const admission = ctx.guard.admit(req.nonce, ctx.nowMs);
  if (admission === "busy") return refuse("busy", "nonce guard is full; retry later", true);
  if (admission === "replay") return refuse("replay", "payload.nonce was already used", true);
  // 15. record last
  ctx.guard.record(req.nonce, req.expires_at_ms);
  return { kind: "accepted", request: { ...req, key: signed.key } as unknown as VerifiedRequest };
}

/** After check 15, a method that is not one of the eight is gated as `workload.<method>` and answered unknown_method. */
export function isKnownMethod(request: VerifiedRequest): boolean {
  return isMethod(request.method);
}

/** Check 11a (issue 20): the authority's values, and its presence on a mutating method. */
function authorityProblem(req: RequestPayload): string | null {
  if (req.authority === null) {
    return MUTATING_METHODS.has(req.method)
      ? `payload.authority must name the controller store and leader epoch on ${req.method}`
      : null;
  }
  if (!HEX32.test(req.authority.store_id)) return "payload.authority.store_id must be 32 lowercase hex";
  if (req.authority.epoch < 0 || !Number.isSafeInteger(req.authority.epoch))
    return "payload.authority.epoch must be an integer 0…2^53-1";
  return null;
}
