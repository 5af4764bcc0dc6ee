/**
 * Producing signed control messages (spec/mesh.md §4.4, §4.5): the payload is the canonical JSON text of the object and
 * the signature covers TAG ‖ that exact text. Randomness and time come from the caller.
 */
import { canonicalJson, type JsonObject } from "../crypto/canonical.js";
import { nodeIdOf, type SigningKey, signTagged } from "../crypto/ed25519.js";
import {
  type Authority,
  type CheckpointClaim,
  LIMITS,
  type Method,
  type Outcome,
  type RequestPayload,
  type ResponsePayload,
  type SignedMessage,
} from "./messages.js";

export const REQUEST_TAG = "berth.ctl.request.v1";
export const RESPONSE_TAG = "berth.ctl.response.v1";

export interface RequestDraft {
  readonly method: Method | string;
  readonly target: string;
  readonly targetBoot: string | null;
  readonly nonce: string;
  readonly issuedAtMs: number;
  /** Validity window; default 30 s, capped at the §4.9 maximum. */
  readonly validityMs?: number;
  readonly decisionId: string | null;
  /** The controller store and leader epoch behind the key (issue 20); required by the node on mutating methods. */
  readonly authority?: Authority | null;
  readonly body: JsonObject;
  /** Issue 38: the controller's checkpoint and the proof the node needs; the member is left out when absent. */
  readonly checkpoint?: CheckpointClaim | null;
}

export function requestPayloadOf(key: SigningKey, draft: RequestDraft): RequestPayload {
  const validity = Math.min(draft.validityMs ?? 30_000, LIMITS.validityMs);
  return {
    version: 1,
    method: draft.method,
    requester: nodeIdOf(key.publicKey),
    target: draft.target,
    target_boot: draft.targetBoot,
    nonce: draft.nonce,
    issued_at_ms: draft.issuedAtMs,
    expires_at_ms: draft.issuedAtMs + validity,
    decision_id: draft.decisionId,
    authority: draft.authority ?? null,
    body: draft.body,
    ...(draft.checkpoint ? { checkpoint: draft.checkpoint } : {}),
  };
}

/** Signs any object as a control request; used by the client and, with odd payloads, by the tests. */
export function signRequestObject(key: SigningKey, payload: unknown): SignedMessage {
  const text = canonicalJson(payload);
  return { payload: text, key: key.publicKey, sig: signTagged(key, REQUEST_TAG, text) };
}

export function signRequest(key: SigningKey, draft: RequestDraft): { signed: SignedMessage; request: RequestPayload } {
  const request = requestPayloadOf(key, draft);
  return { signed: signRequestObject(key, request), request };
}

export function signResponse(
  key: SigningKey,
  answer: { method: string; bootId: string; requestNonce: string; outcome: Outcome },
): { signed: SignedMessage; response: ResponsePayload } {
  const response: ResponsePayload = {
    version: 1,
    method: answer.method,
    responder: nodeIdOf(key.publicKey),
    boot_id: answer.bootId,
    request_nonce: answer.requestNonce,
    outcome: answer.outcome,
  };
  const text = canonicalJson(response);
  return { signed: { payload: text, key: key.publicKey, sig: signTagged(key, RESPONSE_TAG, text) }, response };
}
