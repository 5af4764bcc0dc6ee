import { schnorr } from "@noble/curves/secp256k1.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import {
  attestationDigest,
  checkIdentityPolicy,
  IDENTITY_ERRORS,
  ownerSigned,
  verifyOwnerAttestation,
} from "./identity-policy.js";

/** The NIP-OA spec vector (docs/nips/NIP-OA.md in block/buzz, as lifted verbatim by Buzz's own nip-oa tests). */
const VECTOR = {
  agentPubkey: "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5",
  ownerPubkey: "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
  conditions: "kind=1&created_at<1713957000",
  digest: "08cdecd55af4c28d3801fd69615dcf5cc04fab3bc134b38a840bf157197069a6",
  signature:
    "8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369",
};

const key = (n: number) => {
  const sk = new Uint8Array(32);
  sk[31] = n;
  return { sk, pk: bytesToHex(schnorr.getPublicKey(sk)) };
};
const agent = key(3);
const owner = key(2); // fixed keys where Buzz generates them (identity.rs tests use Keys::generate)
const stranger = key(5);
const NOW = 1_800_000_000;
const tag = (by: { sk: Uint8Array; pk: string }, forAgent: string, conditions = "") =>
  JSON.stringify(["auth", by.pk, conditions, bytesToHex(schnorr.sign(attestationDigest(forAgent, conditions), by.sk))]);
const input = (over: Partial<Parameters<typeof checkIdentityPolicy>[0]> = {}) => ({
  agentPubkey: agent.pk,
  authTag: tag(owner, agent.pk),
  launchOwner: owner.pk,
  policy: { agent_pubkey: agent.pk, owner_pubkey: owner.pk },
  ...over,
});
const check = (over: Partial<Parameters<typeof checkIdentityPolicy>[0]> = {}, required = true) =>
  checkIdentityPolicy(input(over), required, NOW);

// crates/buzz-backend-kubernetes/src/identity.rs at block/buzz@3fac2c2: each test below is named after Buzz's.
describe("the identity policy (issue 18.5, Buzz identity.rs)", () => {
  it("NIP-OA: the spec vector's digest and signature verify, and not for another agent or conditions", () => {
    expect(bytesToHex(attestationDigest(VECTOR.agentPubkey, VECTOR.conditions))).toBe(VECTOR.digest);
    expect(ownerSigned(VECTOR.ownerPubkey, VECTOR.conditions, VECTOR.signature, VECTOR.agentPubkey)).toBe(true);
    expect(ownerSigned(VECTOR.ownerPubkey, VECTOR.conditions, VECTOR.signature, `${"a".repeat(63)}1`)).toBe(false);
    expect(ownerSigned(VECTOR.ownerPubkey, "kind=2", VECTOR.signature, VECTOR.agentPubkey)).toBe(false);
    // Buzz's verify_auth_tag_for_auth_event (crates/buzz-sdk/src/nip_oa.rs, as identity.rs at block/buzz@3fac2c2 calls
    // it): `kind=1` is checked for form only, never against the AUTH event's kind; `created_at<1713957000` is strict.
    const vectorTag = JSON.stringify(["auth", VECTOR.ownerPubkey, VECTOR.conditions, VECTOR.signature]);
    expect(verifyOwnerAttestation(vectorTag, VECTOR.agentPubkey, 1_713_956_999)).toBe(VECTOR.ownerPubkey);
    expect(verifyOwnerAttestation(vectorTag, VECTOR.agentPubkey, 1_713_957_000)).toBeNull();
  });

  it("binds_agent_signature_owner_and_descriptor", () => {
    expect(check()).toEqual({ ok: true });
    expect(check({ launchOwner: agent.pk })).toEqual({ ok: false, error: IDENTITY_ERRORS.launchOwner });
  });

  it("rejects_wrong_key_human_key_and_forged_or_wrong_owner_tag", () => {
    expect(check({ agentPubkey: stranger.pk })).toEqual({ ok: false, error: IDENTITY_ERRORS.notApprovedAgent });
    expect(check({ agentPubkey: owner.pk })).toEqual({ ok: false, error: IDENTITY_ERRORS.ownerAsAgent });
    const forged = check({ authTag: "synthetic-secret-not-a-tag" });
    expect(forged).toEqual({ ok: false, error: IDENTITY_ERRORS.attestationFailed });
    expect(JSON.stringify(forged)).not.toContain("synthetic-secret");
    expect(check({ authTag: tag(stranger, agent.pk) })).toEqual({ ok: false, error: IDENTITY_ERRORS.wrongOwner });
    expect(check({ authTag: tag(owner, agent.pk, "created_at<1") })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.attestationFailed,
    });
  });

  it("requires_policy_only_for_preflight_and_refuses_unknown_policy_fields", () => {
    expect(check({ policy: { agent_pubkey: agent.pk, owner_pubkey: owner.pk, extra: true } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.invalidPolicy,
    });
    expect(check({ policy: undefined })).toEqual({ ok: false, error: IDENTITY_ERRORS.preflightNeedsPolicy });
    expect(check({ policy: undefined }, false)).toEqual({ ok: true });
  });

  // nip_oa.rs auth_event_time_conditions_are_enforced_strictly, test_reject_* (the version identity.rs at 3fac2c2 calls).
  it("auth_event_time_conditions_are_enforced_strictly: created_at bounds at the caller's clock, kind= for form only", () => {
    const failed = { ok: false, error: IDENTITY_ERRORS.attestationFailed };
    expect(check({ authTag: tag(owner, agent.pk, `kind=9&created_at>${NOW - 1}&created_at<${NOW + 1}`) })).toEqual({
      ok: true,
    });
    expect(check({ authTag: tag(owner, agent.pk, "kind=1") })).toEqual({ ok: true });
    expect(check({ authTag: tag(owner, agent.pk, `created_at>${NOW}`) })).toEqual(failed);
    expect(check({ authTag: tag(owner, agent.pk, `created_at<${NOW}`) })).toEqual(failed);
    expect(check({ authTag: tag(owner, agent.pk, `created_at<${NOW + 1}&created_at<${NOW}`) })).toEqual(failed);
    for (const bad of [
      "kind=01",
      "kind=65536",
      "kind=1&",
      "&kind=1",
      "kind=1&&created_at<9",
      "kind=1 ",
      "Kind=1",
      "created_at=1",
      "kind=-1",
      "kind=",
      "created_at<4294967296",
    ]) {
      expect(check({ authTag: tag(owner, agent.pk, bad) }), bad).toEqual(failed);
    }
    // Lowercase hex only inside the tag (test_verify_rejects_noncanonical_hex).
    const [l, o, c, sig] = JSON.parse(tag(owner, agent.pk)) as string[];
    expect(check({ authTag: JSON.stringify([l, o?.toUpperCase(), c, sig]) })).toEqual(failed);
    expect(check({ authTag: JSON.stringify([l, o, c, sig?.toUpperCase()]) })).toEqual(failed);
  });

  it("an identity_policy present as null is invalid; serde's sequence form [agent, owner] is a policy", () => {
    expect(check({ policy: null }, false)).toEqual({ ok: false, error: IDENTITY_ERRORS.invalidPolicy });
    expect(check({ policy: [agent.pk, owner.pk] })).toEqual({ ok: true });
    expect(check({ policy: [agent.pk, owner.pk, "x"] })).toEqual({ ok: false, error: IDENTITY_ERRORS.invalidPolicy });
    expect(check({ policy: { agent_pubkey: agent.pk } })).toEqual({ ok: false, error: IDENTITY_ERRORS.invalidPolicy });
    expect(check({ policy: { agent_pubkey: agent.pk, owner_pubkey: 7 } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.invalidPolicy,
    });
  });

  it("approved keys are read as nostr 0.44's PublicKey::from_hex reads them: 64 hex of either case, the curve unchecked", () => {
    expect(check({ policy: { agent_pubkey: agent.pk.toUpperCase(), owner_pubkey: owner.pk.toUpperCase() } })).toEqual({
      ok: true,
    });
    // An off-curve approved owner is a well-formed key that no attestation can match.
    expect(check({ policy: { agent_pubkey: agent.pk, owner_pubkey: "0".repeat(64) } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.wrongOwner,
    });
    expect(check({ policy: { agent_pubkey: "0".repeat(64), owner_pubkey: owner.pk } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.notApprovedAgent,
    });
    expect(check({ policy: { agent_pubkey: agent.pk.slice(1), owner_pubkey: owner.pk } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.invalidAgentKey,
    });
  });

  it("the rest of the catalogue: invalid keys, a missing attestation", () => {
    expect(check({ policy: { agent_pubkey: "zz", owner_pubkey: owner.pk } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.invalidAgentKey,
    });
    expect(check({ policy: { agent_pubkey: agent.pk, owner_pubkey: `${"0".repeat(63)}g` } })).toEqual({
      ok: false,
      error: IDENTITY_ERRORS.invalidOwnerKey,
    });
    expect(check({ authTag: null })).toEqual({ ok: false, error: IDENTITY_ERRORS.attestationRequired });
    expect(check({ policy: [1] })).toEqual({ ok: false, error: IDENTITY_ERRORS.invalidPolicy });
  });
});
