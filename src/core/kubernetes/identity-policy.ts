/**
 * The optional identity policy (issue 18.5), as Buzz's pilot line checks it before any cluster contact
 * (crates/buzz-backend-kubernetes/src/identity.rs at block/buzz@3fac2c2): `provider_config.identity_policy` names the
 * approved agent and owner public keys; the deploy's nsec must be the approved agent (and never the owner), and its
 * `auth_tag` a NIP-OA owner attestation — the JSON tag `["auth", <owner hex>, <conditions>, <signature hex>]`, a
 * BIP-340 Schnorr signature by the owner over SHA-256 of `nostr:agent-auth:<agent hex>:<conditions>` — whose
 * conditions (`kind=`, `created_at<`, `created_at>`, joined by `&`) are well formed and whose time bounds hold at the
 * caller's clock (the AUTH event the agent will send now). The launch owner must be that owner. Errors are Buzz's
 * catalogue, verbatim; none echoes a key or tag. The clock is the caller's (`nowSeconds`).
 */
import { ok, type Result } from "../../kit/result.js";
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

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

export type IdentityVerdict = Result<void>;

const LOWER_HEX64 = /^[0-9a-f]{64}$/;
const LOWER_HEX128 = /^[0-9a-f]{128}$/;

/**
 * A public key as nostr 0.44's `PublicKey::from_hex` takes it: exactly 64 hex digits of either case, lowered. It does
 * not check the curve (nostr 0.44 defers that to `xonly()`), so an off-curve approved key is not "invalid" here: it
 * simply never matches the nsec's key, and no attestation can verify for it.
 */
function publicKeyHex(v: string): string | null {
  return /^[0-9a-fA-F]{64}$/.test(v) ? v.toLowerCase() : null;
}

/** NIP-OA's clause grammar: canonical decimals (no sign, no leading zero), kind ≤ 65535, created_at ≤ 2^32 - 1. */
function clauseValue(clause: string): { op: "kind=" | "created_at<" | "created_at>"; value: number } | null {
  const m = /^(kind=|created_at<|created_at>)(0|[1-9][0-9]*)$/.exec(clause);
  if (!m) return null;
  const value = Number(m[2]);
  const op = m[1] as "kind=" | "created_at<" | "created_at>";
  if (value > (op === "kind=" ? 65_535 : 4_294_967_295)) return null;
  return { op, value };
}

/**
 * Buzz's `verify_auth_tag_for_auth_event` (crates/buzz-sdk/src/nip_oa.rs, the version identity.rs at block/buzz@3fac2c2
 * calls): the conditions must be well formed, every `created_at<`/`created_at>` bound holds strictly at `authEventAt`,
 * and `kind=` clauses are checked for form only — deliberately not evaluated at connection admission (NIP-AA's
 * connection-wide credential), so `kind=1` does not refuse a deploy.
 */
function conditionsHold(conditions: string, authEventAt: number): boolean {
  if (conditions === "") return true;
  for (const clause of conditions.split("&")) {
    const c = clauseValue(clause);
    if (c === null) return false;
    if (c.op === "created_at<" && !(authEventAt < c.value)) return false;
    if (c.op === "created_at>" && !(authEventAt > c.value)) return false;
  }
  return true;
}

/** The owner a NIP-OA tag attests for `agentHex`, or null when the tag is malformed, forged, or a time bound fails. */
export function verifyOwnerAttestation(tag: string, agentHex: string, nowSeconds: number): string | null {
  let parts: unknown;
  try {
    parts = JSON.parse(tag);
  } catch {
    return null;
  }
  if (!Array.isArray(parts) || parts.length !== 4 || parts.some((p) => typeof p !== "string")) return null;
  const [label, owner, conditions, signature] = parts as [string, string, string, string];
  if (label !== "auth" || !LOWER_HEX64.test(owner) || !LOWER_HEX128.test(signature) || owner === agentHex) return null;
  if (!conditionsHold(conditions, nowSeconds)) return null;
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

/**
 * `identity_policy` as serde reads Buzz's `IdentityPolicy` (two `String` fields, `deny_unknown_fields`) from a JSON
 * value: an object with exactly those keys, or — serde's sequence form of a struct — an array of exactly two strings
 * in declaration order. Anything else, `null` included, is "invalid identity_policy".
 */
function policyFields(p: unknown): { agent: string; owner: string } | null {
  if (Array.isArray(p)) {
    return p.length === 2 && typeof p[0] === "string" && typeof p[1] === "string" ? { agent: p[0], owner: p[1] } : null;
  }
  if (typeof p !== "object" || p === null) return null;
  const rec = p as Record<string, unknown>;
  if (Object.keys(rec).some((k) => k !== "agent_pubkey" && k !== "owner_pubkey")) return null;
  return typeof rec.agent_pubkey === "string" && typeof rec.owner_pubkey === "string"
    ? { agent: rec.agent_pubkey, owner: rec.owner_pubkey }
    : null;
}

/**
 * Buzz's `identity::check`: `required` is the local preflight's (`--check-identity`) demand for a policy. Only an
 * absent `identity_policy` (undefined) means "no policy": Buzz's `provider_config.get(..)` finds a `null` one.
 */
export function checkIdentityPolicy(input: IdentityInputs, required: boolean, nowSeconds: number): IdentityVerdict {
  const fail = (error: string): IdentityVerdict => ({ ok: false, error });
  if (input.policy === undefined)
    return required ? fail(IDENTITY_ERRORS.preflightNeedsPolicy) : { ok: true, value: undefined };
  const fields = policyFields(input.policy);
  if (fields === null) return fail(IDENTITY_ERRORS.invalidPolicy);
  const agent = publicKeyHex(fields.agent);
  if (agent === null) return fail(IDENTITY_ERRORS.invalidAgentKey);
  const owner = publicKeyHex(fields.owner);
  if (owner === null) return fail(IDENTITY_ERRORS.invalidOwnerKey);
  if (input.agentPubkey === owner) return fail(IDENTITY_ERRORS.ownerAsAgent);
  if (input.agentPubkey !== agent) return fail(IDENTITY_ERRORS.notApprovedAgent);
  if (input.authTag === null || input.authTag === undefined) return fail(IDENTITY_ERRORS.attestationRequired);
  const attested = verifyOwnerAttestation(input.authTag, agent, nowSeconds);
  if (attested === null) return fail(IDENTITY_ERRORS.attestationFailed);
  if (attested !== owner) return fail(IDENTITY_ERRORS.wrongOwner);
  if (input.launchOwner !== owner) return fail(IDENTITY_ERRORS.launchOwner);
  return ok();
}
