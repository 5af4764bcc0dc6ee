/**
 * The optional identity policy (issue 18.5), as Buzz's pilot line checks it before any cluster contact
 * (crates/buzz-backend-kubernetes/src/identity.rs at block/buzz@3fac2c2): `provider_config.identity_policy` names the
 * approved agent and owner public keys; the deploy's nsec must be the approved agent (and never the owner), and its
 * `auth_tag` a NIP-OA owner attestation — the JSON tag `["auth", <owner hex>, <conditions>, <signature hex>]`, a
 * BIP-340 Schnorr signature by the owner over SHA-256 of `nostr:agent-auth:<agent hex>:<conditions>` — whose
 * conditions (`kind=`, `created_at<`, `created_at>`, joined by `&`) hold for the AUTH event the agent will send now
 * (kind 22242). The launch owner must be that owner. Errors are Buzz's catalogue, verbatim; none echoes a key or tag.
 * The clock is the caller's (`nowSeconds`).
 */
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

/** NIP-42's AUTH event kind: the event an attestation's conditions are evaluated against. */
export const AUTH_EVENT_KIND = 22242;

export const IDENTITY_ERRORS = {
  preflightNeedsPolicy: "identity preflight requires an approved identity_policy",
  invalidPolicy: "invalid identity_policy",
  invalidAgentKey: "invalid approved agent public key",
  invalidOwnerKey: "invalid approved owner public key",
  ownerAsAgent: "owner identity cannot be deployed as the agent",
  notApprovedAgent: "agent key does not match the approved pilot identity",
  attestationRequired: "owner attestation is required by identity_policy",
  attestationFailed: "owner attestation verification failed",
  wrongOwner: "attestation owner does not match the approved owner",
  launchOwner: "launch owner does not match the verified owner",
  preflightInvalidRequest: "invalid identity preflight request",
  preflightNeedsDeploy: "identity preflight requires a deploy request",
} as const;

export type IdentityVerdict = { ok: true } | { ok: false; error: string };

const LOWER_HEX64 = /^[0-9a-f]{64}$/;
const LOWER_HEX128 = /^[0-9a-f]{128}$/;

/** A public key as nostr's `PublicKey::from_hex` takes it: 64 hex of either case, a point on the curve. */
function publicKeyHex(v: unknown): string | null {
  if (typeof v !== "string" || !/^[0-9a-fA-F]{64}$/.test(v)) return null;
  const hex = v.toLowerCase();
  try {
    schnorr.utils.lift_x(BigInt(`0x${hex}`));
    return hex;
  } catch {
    return null;
  }
}

function clauseHolds(clause: string, event: { kind: number; createdAt: number }): boolean {
  const m = /^(kind=|created_at<|created_at>)(0|[1-9][0-9]*)$/.exec(clause);
  if (!m) return false;
  const value = Number(m[2]);
  if (!Number.isSafeInteger(value)) return false;
  if (m[1] === "kind=") return value <= 65_535 && value === event.kind;
  if (value > 4_294_967_295) return false;
  return m[1] === "created_at<" ? event.createdAt < value : event.createdAt > value;
}

/** The owner a NIP-OA tag attests for `agentHex`, or null when the tag is malformed, forged, or its conditions fail. */
export function verifyOwnerAttestation(tag: string, agentHex: string, nowSeconds: number): string | null {
  if (tag.length > 4096) return null;
  let parts: unknown;
  try {
    parts = JSON.parse(tag);
  } catch {
    return null;
  }
  if (!Array.isArray(parts) || parts.length !== 4 || parts.some((p) => typeof p !== "string")) return null;
  const [label, owner, conditions, signature] = parts as [string, string, string, string];
  if (label !== "auth" || !LOWER_HEX64.test(owner) || !LOWER_HEX128.test(signature) || owner === agentHex) return null;
  if (conditions !== "" && !conditions.split("&").every((c) => clauseHolds(c, { kind: AUTH_EVENT_KIND, createdAt: nowSeconds }))) return null;
  return ownerSigned(owner, conditions, signature, agentHex) ? owner : null;
}

/** NIP-OA's preimage digest: SHA-256 of `nostr:agent-auth:<agent hex>:<conditions>`. */
export function attestationDigest(agentHex: string, conditions: string): Uint8Array {
  return sha256(utf8ToBytes(`nostr:agent-auth:${agentHex}:${conditions}`));
}

/** The BIP-340 signature check alone (conditions not evaluated). */
export function ownerSigned(ownerHex: string, conditions: string, signatureHex: string, agentHex: string): boolean {
  try {
    return schnorr.verify(hexToBytes(signatureHex), attestationDigest(agentHex, conditions), hexToBytes(ownerHex));
  } catch {
    return false;
  }
}

export interface IdentityInputs {
  /** The agent's public key, derived from the deploy's nsec (already decoded: C1 comes first). */
  readonly agentPubkey: string;
  readonly authTag: string | null | undefined;
  readonly launchOwner: string | null | undefined;
  /** `provider_config.identity_policy` as sent (undefined or null: no policy). */
  readonly policy: unknown;
}

/** Buzz's `identity::check`: `required` is the local preflight's (`--check-identity`) demand for a policy. */
export function checkIdentityPolicy(input: IdentityInputs, required: boolean, nowSeconds: number): IdentityVerdict {
  const fail = (error: string): IdentityVerdict => ({ ok: false, error });
  if (input.policy === undefined || input.policy === null) return required ? fail(IDENTITY_ERRORS.preflightNeedsPolicy) : { ok: true };
  const p = input.policy;
  if (typeof p !== "object" || Array.isArray(p)) return fail(IDENTITY_ERRORS.invalidPolicy);
  const keys = Object.keys(p);
  const rec = p as Record<string, unknown>;
  if (keys.some((k) => k !== "agent_pubkey" && k !== "owner_pubkey") || typeof rec.agent_pubkey !== "string" || typeof rec.owner_pubkey !== "string") {
    return fail(IDENTITY_ERRORS.invalidPolicy);
  }
  const agent = publicKeyHex(rec.agent_pubkey);
  if (agent === null) return fail(IDENTITY_ERRORS.invalidAgentKey);
  const owner = publicKeyHex(rec.owner_pubkey);
  if (owner === null) return fail(IDENTITY_ERRORS.invalidOwnerKey);
  if (input.agentPubkey === owner) return fail(IDENTITY_ERRORS.ownerAsAgent);
  if (input.agentPubkey !== agent) return fail(IDENTITY_ERRORS.notApprovedAgent);
  if (input.authTag === null || input.authTag === undefined) return fail(IDENTITY_ERRORS.attestationRequired);
  const attested = verifyOwnerAttestation(input.authTag, agent, nowSeconds);
  if (attested === null) return fail(IDENTITY_ERRORS.attestationFailed);
  if (attested !== owner) return fail(IDENTITY_ERRORS.wrongOwner);
  if (input.launchOwner !== owner) return fail(IDENTITY_ERRORS.launchOwner);
  return { ok: true };
}
