import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ProviderConfig, parseProviderConfig } from "./config.js";
import { buildEnv } from "./env.js";
import { fingerprint, intentTemplate } from "./intent.js";
import { agentA, agentB, configA } from "../../../test/support/kubernetes/fixtures.js";

function config(raw: Record<string, unknown>): ProviderConfig {
  const r = parseProviderConfig(raw);
  if (!r.ok) throw new Error(r.error);
  return r.config;
}

function keysOf(agent: ReturnType<typeof agentA>, cfg: ProviderConfig): string[] {
  const env = buildEnv(agent, cfg, "0f3a91cc");
  if (!env.ok) throw new Error(env.error);
  return Object.keys(env.env);
}

const TEMPLATE_A =
  '{"template_version":1,"namespace":"buzz-agents-test","image":"ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76","cpu_request":"1","memory_request":"2Gi","cpu_limit":"2","memory_limit":"4Gi","service_account":null,"restart_policy":"Never","termination_grace_period_seconds":60,"env_keys":["BUZZ_ACP_AGENT_OWNER","BUZZ_ACP_EXIT_AFTER_INACTIVITY","BUZZ_ACP_MCP_COMMAND","BUZZ_MANAGED_AGENT_START_NONCE","BUZZ_PRIVATE_KEY","BUZZ_RELAY_URL","NOSTR_PRIVATE_KEY"],"env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","run_as_user":10001,"run_as_group":10001}';

describe("the create-intent fingerprint (spec/kubernetes.md §9)", () => {
  it("vector A reproduces the spec's 624-byte template and its SHA-256", () => {
    const cfg = config(configA);
    const text = intentTemplate(cfg, keysOf(agentA(), cfg));
    expect(text).toBe(TEMPLATE_A);
    expect(Buffer.byteLength(text)).toBe(624);
    expect(fingerprint(cfg, keysOf(agentA(), cfg))).toBe("056e0a4de0a216f7e1839f0a1d27e3907526d67aec07acc96d94af3014eb3cfa");
  });

  it("vector B has 24 env keys with BUZZ_ACP_AGENTS sorted before BUZZ_ACP_AGENT_ARGS", () => {
    const cfg = config(configA);
    const keys = keysOf(agentB(), cfg);
    expect(keys).toHaveLength(24);
    const text = intentTemplate(cfg, keys);
    expect(text.indexOf('"BUZZ_ACP_AGENTS"')).toBeLessThan(text.indexOf('"BUZZ_ACP_AGENT_ARGS"'));
    expect(fingerprint(cfg, keys)).toBe("26f63b0b9893503156fedfb57987d0cad8273728c65f362ccdcc5a8ae876a237");
  });

  it("vector C adds the persistent workspace as template v2", () => {
    const cfg = config({ ...configA, workspace_storage: "20Gi" });
    const keys = keysOf(agentB(), cfg);
    expect(intentTemplate(cfg, keys)).toContain('"workspace_mount_path":"/home/agent","workspace_storage":"20Gi","workspace_storage_class":null,"run_as_user"');
    expect(fingerprint(cfg, keys)).toBe("0ae46881df14cc5be685679fa5411bd97ea876587370cefef278bdfc611d80ef");
  });

  it("vector D appends the set pod options as the last key", () => {
    const cfg = config({ ...configA, pod_options: { node_selector: { "kubernetes.io/arch": "arm64" }, active_deadline_seconds: 3600 } });
    const keys = keysOf(agentA(), cfg);
    expect(intentTemplate(cfg, keys).endsWith(',"pod_options":{"node_selector":{"kubernetes.io/arch":"arm64"},"active_deadline_seconds":3600}}')).toBe(true);
    expect(fingerprint(cfg, keys)).toBe("0f2bd310d34f08fd4e6049d98181d37b328ba6bf21ef9000f8e7e23e63c126d1");
  });

  it("is deterministic and ignores the order env keys arrive in", () => {
    const cfg = config(configA);
    const keys = keysOf(agentB(), cfg);
    fc.assert(
      fc.property(fc.shuffledSubarray(keys, { minLength: keys.length, maxLength: keys.length }), (shuffled) => {
        expect(fingerprint(cfg, shuffled)).toBe(fingerprint(cfg, keys));
      }),
    );
  });

  it("ignores env values and the generation but changes with any env key", () => {
    const cfg = config(configA);
    fc.assert(
      fc.property(fc.string(), fc.stringMatching(/^[0-9a-f]{8}$/), fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/), (value, generation, extraKey) => {
        const a = agentA();
        const withValue = { ...a, relay_url: `wss://${value.replace(/\s/g, "x")}x` };
        const env1 = buildEnv(a, cfg, "00000000");
        const env2 = buildEnv(withValue, cfg, generation);
        if (!env1.ok || !env2.ok) return;
        expect(fingerprint(cfg, Object.keys(env2.env))).toBe(fingerprint(cfg, Object.keys(env1.env)));
        const env3 = buildEnv({ ...a, launch: { ...a.launch, env: { [extraKey]: "v" } } }, cfg, generation);
        if (!env3.ok) return;
        const reserved = Object.keys(env1.env).includes(extraKey);
        expect(fingerprint(cfg, Object.keys(env3.env)) === fingerprint(cfg, Object.keys(env1.env))).toBe(reserved);
      }),
    );
  });

  it("changes when any single configured field changes", () => {
    const base = config(configA);
    const keys = keysOf(agentA(), base);
    const original = fingerprint(base, keys);
    const variants: Array<Record<string, unknown>> = [
      { namespace: "other-ns" },
      { image: `ghcr.io/block/buzz-sprig@sha256:${"0".repeat(64)}` },
      { cpu_request: "1000m" },
      { memory_request: "3Gi" },
      { cpu_limit: "3" },
      { memory_limit: "5Gi" },
      { service_account: "runner" },
      { workspace_storage: "1Gi" },
      { pod_options: { tolerations: [{ key: "k", operator: "Exists" }] } },
      { pod_options: { ephemeral_storage_limit: "1Gi" } },
    ];
    for (const change of variants) {
      const cfg = config({ ...configA, ...change });
      expect(fingerprint(cfg, keys), JSON.stringify(change)).not.toBe(original);
    }
  });

  it("never carries an env value, the nsec or the generation", () => {
    const cfg = config(configA);
    const env = buildEnv(agentB(), cfg, "0f3a91cc");
    if (!env.ok) throw new Error(env.error);
    const text = intentTemplate(cfg, Object.keys(env.env));
    expect(text).not.toContain("nsec1");
    expect(text).not.toContain("0f3a91cc");
    expect(text).not.toContain("wss://relay.example");
    expect(text).not.toContain("goose");
  });
});
