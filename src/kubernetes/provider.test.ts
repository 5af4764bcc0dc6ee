import { schnorr } from "@noble/curves/secp256k1.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GOLDEN_IMAGE_REF, GOLDEN_NSEC } from "../../test/support/kubernetes/fixtures.js";
import { attestationDigest } from "../core/kubernetes/identity-policy.js";
import { MemoryAudit } from "./audit.js";
import { VirtualClock } from "../kit/clock.js";
import { FakeCluster } from "../../test/support/kubernetes/fake-cluster.js";
import { memoryLogger } from "../kit/log.js";
import { handleProviderRequest, type ProviderDeps } from "./provider.js";

function deps(overrides: Partial<ProviderDeps> = {}) {
  const clock = new VirtualClock();
  const fake = new FakeCluster(clock);
  const contacts: string[] = [];
  const audit = new MemoryAudit();
  const log = memoryLogger();
  const d: ProviderDeps = {
    clock,
    processStartedAt: 0,
    settings: { deadlineSeconds: 600, wait: { watch: true, resyncMs: 10_000, pollMs: 2000, confirmStartMs: 3000 } },
    version: "9.9.9",
    log,
    random32: () => 0x0f3a91cc,
    randomChars: () => [0, 1, 2, 3, 4, 5],
    openAudit: () => {
      contacts.push("audit");
      return audit;
    },
    openExistingAudit: () => {
      contacts.push("existing-audit");
      return audit;
    },
    connect: async () => {
      contacts.push("connect");
      return { ok: true, value: fake };
    },
    ...overrides,
  };
  return { d, fake, clock, contacts, audit, log };
}

const stdin = (v: unknown) => ({
  ok: true as const,
  value: { bytes: Buffer.from(typeof v === "string" ? v : JSON.stringify(v)), oversized: false },
});
const valid = {
  op: "deploy",
  agent: { relay_url: "wss://relay.example", private_key_nsec: GOLDEN_NSEC, launch: { owner_pubkey: "a".repeat(64) } },
  provider_config: { namespace: "buzz-agents-test", image: GOLDEN_IMAGE_REF },
};

describe("the provider protocol handler (spec/kubernetes.md §3.2)", () => {
  it("answers info purely: no audit, no cluster, flat fields and a prefilled namespace", async () => {
    const { d, contacts } = deps();
    const r = await handleProviderRequest([], stdin({ op: "info" }), d);
    expect(r).toMatchObject({
      kind: "answer",
      answer: { ok: true, name: "kubernetes", version: "9.9.9", protocol_version: 1 },
    });
    expect(JSON.stringify(r)).toContain('"default":"buzz-agents-abcdef"');
    expect(contacts).toEqual([]);
  });

  // issue 34: baseline Buzz's main.rs (zbkilla/buzz@2d88ec7d) never reads its arguments, so a launcher passing extras
  // gets its answer; only a preflight with company is refused (a caller asking for one must never get a deploy).
  it("extra arguments are ignored as Buzz ignores them; --check-identity with others is A1", async () => {
    const { d, contacts } = deps();
    const r = await handleProviderRequest(["--verbose", "extra"], stdin({ op: "info" }), d);
    expect(r).toMatchObject({ kind: "answer", answer: { ok: true, name: "kubernetes", protocol_version: 1 } });
    expect(await handleProviderRequest(["--check-identity", "--verbose"], stdin(valid), d)).toEqual({
      kind: "answer",
      answer: { ok: false, error: "unsupported provider arguments" },
    });
    expect(await handleProviderRequest(["x", "--check-identity"], stdin(valid), d)).toEqual({
      kind: "answer",
      answer: { ok: false, error: "unsupported provider arguments" },
    });
    expect(contacts).toEqual([]);
  });

  it("an unreadable stdin is the only non-answer", async () => {
    const { d } = deps();
    expect(await handleProviderRequest([], { ok: false, error: "EIO" }, d)).toEqual({
      kind: "unreadable",
      stderr: "could not read the request from stdin: EIO",
    });
  });

  it("a valid deploy opens the audit chain, then connects, then answers with the agent id", async () => {
    const { d, fake, clock, contacts } = deps();
    fake.addNamespace("buzz-agents-test");
    fake.onPodCreated = ({ ns, name }) => clock.schedule(100, () => fake.start(ns, name));
    const r = await clock.run(handleProviderRequest([], stdin(valid), d));
    expect(r).toEqual({ kind: "answer", answer: { ok: true, agent_id: "buzz-agent-7e7e9c42a91b" } });
    expect(contacts).toEqual(["audit", "connect"]);
  });

  it("measures the budget from process start: a late start answers K1 by 590 − 5 s", async () => {
    const { d, fake, clock } = deps();
    fake.addNamespace("buzz-agents-test");
    const r = await clock.run(handleProviderRequest([], stdin(valid), { ...d, processStartedAt: 0 }));
    expect(r.kind === "answer" && String(r.answer.error)).toMatch(
      /^startup not confirmed within 585s for buzz-agent-7e7e9c42a91b: /,
    );
    expect(clock.now()).toBeGreaterThanOrEqual(585_000);
    expect(clock.now()).toBeLessThan(590_000);
  });

  it("refusals at stages 7–9 are recorded as deploy outcomes in an existing chain, best effort", async () => {
    const { d, audit, contacts } = deps();
    await handleProviderRequest([], stdin({ ...valid, agent: { ...valid.agent, relay_url: " " } }), d);
    expect(audit.of("k8s.deploy.outcome")).toMatchObject([{ ok: false, last_action: "refused" }]);
    expect(contacts).toEqual(["existing-audit"]);
  });

  it("a refusal with no chain yet creates none and answers the same (issue 18.7)", async () => {
    const { d, contacts, log } = deps({ openExistingAudit: () => null });
    const r = await handleProviderRequest([], stdin({ ...valid, agent: { ...valid.agent, relay_url: " " } }), d);
    expect(r).toEqual({
      kind: "answer",
      answer: { ok: false, error: "deploy refused: relay_url is empty — the agent would have no relay to connect to" },
    });
    expect(contacts).toEqual([]);
    expect(log.lines.join("\n")).toMatch(/no audit chain exists yet/);
  });

  it("arbitrary input: one answer object, no cluster contact unless validation passed, no key echoed (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc
            .record({
              op: fc.constantFrom("deploy", "info", "x"),
              agent: fc.jsonValue(),
              provider_config: fc.jsonValue(),
            })
            .map((v) => JSON.stringify(v)),
          fc
            .record({
              relay_url: fc.oneof(fc.string(), fc.constant("wss://r")),
              respond_to: fc.option(fc.string()),
              env_vars: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })),
            })
            .map((a) => JSON.stringify({ ...valid, agent: { ...valid.agent, ...a, launch: null, auth_tag: "t" } })),
        ),
        async (text) => {
          const { d, contacts } = deps({ connect: async () => ({ ok: false, error: "no cluster in this test" }) });
          const r = await handleProviderRequest([], stdin(text), d);
          expect(r.kind).toBe("answer");
          if (r.kind !== "answer") return;
          expect(typeof r.answer.ok).toBe("boolean");
          expect(JSON.stringify(r.answer)).not.toContain(GOLDEN_NSEC);
          if (contacts.includes("connect")) expect(r.answer).toEqual({ ok: false, error: "no cluster in this test" });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the identity policy through the provider (issue 18.5, Buzz main.rs and identity.rs at block/buzz@3fac2c2)", () => {
  const ownerSk = new Uint8Array(32);
  ownerSk[31] = 2;
  const owner = bytesToHex(schnorr.getPublicKey(ownerSk));
  const agentHex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
  const authTag = JSON.stringify([
    "auth",
    owner,
    "",
    bytesToHex(schnorr.sign(attestationDigest(agentHex, ""), ownerSk)),
  ]);
  const withPolicy = {
    ...valid,
    agent: { ...valid.agent, auth_tag: authTag, launch: { owner_pubkey: owner } },
    provider_config: { ...valid.provider_config, identity_policy: { agent_pubkey: agentHex, owner_pubkey: owner } },
  };

  it("identity_policy_refusal_precedes_cluster_connection_and_hides_secrets", async () => {
    const { d, contacts } = deps();
    const forged = { ...withPolicy, agent: { ...withPolicy.agent, auth_tag: "synthetic-secret-not-an-attestation" } };
    const r = await handleProviderRequest([], stdin(forged), d);
    expect(r).toEqual({ kind: "answer", answer: { ok: false, error: "owner attestation verification failed" } });
    expect(contacts).not.toContain("connect");
    expect(await handleProviderRequest(["--check-identity"], stdin(forged), d)).toEqual(r);
  });

  it("local_identity_preflight_returns_only_public_pod_identity", async () => {
    const { d, contacts } = deps();
    expect(await handleProviderRequest(["--check-identity"], stdin(withPolicy), d)).toEqual({
      kind: "answer",
      answer: { ok: true, agent_id: "buzz-agent-7e7e9c42a91b" },
    });
    expect(contacts).toEqual([]);
  });

  it("an approved, attested deploy proceeds to the cluster", async () => {
    const { d, contacts } = deps({ connect: async () => ({ ok: false, error: "no cluster in this test" }) });
    expect(await handleProviderRequest([], stdin(withPolicy), d)).toEqual({
      kind: "answer",
      answer: { ok: false, error: "no cluster in this test" },
    });
    expect(contacts).toContain("audit");
  });
});
