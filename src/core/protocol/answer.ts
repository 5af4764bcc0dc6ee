/**
 * Controller-side answer verification (spec/mesh.md §4.7): a response counts only if it is signed by the key the controller
 * expects and is bound to the request it answers (nonce, method, responder, boot). Anything else is *no valid answer*.
 */
import { err, ok, type Result } from "../../kit/result.js";
import { parseCanonical } from "../crypto/canonical.js";
import { isPublicKeyHex, nodeIdOf, verifyTagged } from "../crypto/ed25519.js";
import {
  describeIssues,
  HEX128,
  LIMITS,
  type RequestPayload,
  type ResponsePayload,
  ResponsePayloadSchema,
  type SignedMessage,
} from "./messages.js";
import { RESPONSE_TAG } from "./sign.js";

/** A valid answer: the response and the key that signed it. */
export interface VerifiedAnswer {
  readonly response: ResponsePayload;
  readonly key: string;
}

/** Why an answer is no valid answer. */
export interface AnswerRejection {
  readonly reason: string;
  /** The answer was signed by this well-formed key instead of the expected one (§3.4 key_refused). */
  readonly offered_key?: string;
}

export type AnswerCheck = Result<VerifiedAnswer, AnswerRejection>;

/**
 * @param expectedKey the target's stored key, or `null` only for the trust-on-first-use describe of §3.3.
 */
export function verifyAnswer(signed: SignedMessage, request: RequestPayload, expectedKey: string | null): AnswerCheck {
  if (Buffer.byteLength(signed.payload, "utf8") > LIMITS.responsePayloadBytes)
    return err({ reason: "response payload exceeds 4 MiB" });
  if (!isPublicKeyHex(signed.key) || !HEX128.test(signed.sig))
    return err({ reason: "response key or sig is malformed" });
  if (expectedKey !== null && signed.key !== expectedKey)
    return err({ reason: `response signed by ${signed.key}, not the stored key`, offered_key: signed.key });
  if (expectedKey === null && request.method !== "describe") return err({ reason: "only a describe may learn a key" });
  if (!verifyTagged(signed.key, RESPONSE_TAG, signed.payload, signed.sig))
    return err({ reason: "response signature does not verify" });
  const parsed = parseCanonical(signed.payload);
  if (!parsed.ok) return err({ reason: `response payload: ${parsed.error}` });
  const shape = ResponsePayloadSchema.safeParse(parsed.value);
  if (!shape.success) return err({ reason: describeIssues("response", shape.error.issues) });
  const response = shape.data;
  if (response.responder !== nodeIdOf(signed.key))
    return err({ reason: "response.responder is not the node id of its key" });
  if (response.request_nonce !== request.nonce)
    return err({ reason: "response.request_nonce does not echo the request's nonce" });
  if (response.method !== request.method) return err({ reason: "response.method does not echo the request's method" });
  if (request.target !== "*" && response.responder !== request.target)
    return err({ reason: "response.responder is not the addressed target" });
  // A stale_boot refusal proves the node did nothing and necessarily names the node's *current* boot: it is the one
  // answer exempt from the boot check, so the controller can re-describe and resend (§4.7 last sentence).
  const staleBoot = response.outcome.status === "refused" && response.outcome.code === "stale_boot";
  if (request.method !== "describe" && response.boot_id !== request.target_boot && !staleBoot) {
    return err({ reason: "response.boot_id is not the boot the request named" });
  }
  return ok({ response, key: signed.key });
}
