import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ProviderConfig, parseProviderConfig } from "./config.js";
import { buildEnv } from "./env.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { classify } from "./classify.js";
import { equivalentFingerprints, fingerprint, intentTemplate } from "./intent.js";
import { verified } from "../../../test/support/kubernetes/pods.js";
import { agentA, agentB, configA } from "../../../test/support/kubernetes/fixtures.js";

function config(raw: Record<string, unknown>): ProviderConfig {
  const r = parseProviderConfig(raw);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

function keysOf(agent: ReturnType<typeof agentA>, cfg: ProviderConfig): string[] {
  const env = buildEnv(agent, cfg, "0f3a91cc");
  if (!env.ok) throw new Error(env.error);
  return Object.keys(env.value);
}

const TEMPLATE_A =
  '{"template_version":1,"namespace":"buzz-agents-test","image":"ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76","cpu_request":"1","memory_request":"2Gi","cpu_limit":"2","memory_limit":"4Gi","service_account":null,"restart_policy":"Never","termination_grace_period_seconds":60,"env_keys":["BUZZ_ACP_AGENT_OWNER","BUZZ_ACP_EXIT_AFTER_INACTIVITY","BUZZ_ACP_MCP_COMMAND","BUZZ_MANAGED_AGENT_START_NONCE","BUZZ_PRIVATE_KEY","BUZZ_RELAY_URL","NOSTR_PRIVATE_KEY"],"env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","run_as_user":10001,"run_as_group":10001}';

/** Buzz's persistent-workspace line's ephemeral template for inputs A (intent.rs at block/buzz@25ddc1c): v2, nulls. */
const TEMPLATE_A_V2 =
  '{"template_version":2,"namespace":"buzz-agents-test","image":"ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76","cpu_request":"1","memory_request":"2Gi","cpu_limit":"2","memory_limit":"4Gi","service_account":null,"restart_policy":"Never","termination_grace_period_seconds":60,"env_keys":["BUZZ_ACP_AGENT_OWNER","BUZZ_ACP_EXIT_AFTER_INACTIVITY","BUZZ_ACP_MCP_COMMAND","BUZZ_MANAGED_AGENT_START_NONCE","BUZZ_PRIVATE_KEY","BUZZ_RELAY_URL","NOSTR_PRIVATE_KEY"],"env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","workspace_storage":null,"workspace_storage_class":null,"run_as_user":10001,"run_as_group":10001}';
const sha = (text: string) => bytesToHex(sha256(utf8ToBytes(text)));

describe("the create-intent fingerprint (spec/kubernetes.md §9)", () => {
  it("vector A, template v1 (Buzz's baseline, accepted): the spec's 624-byte template and its SHA-256", () => {
    const cfg = config(configA);
    const text = intentTemplate(cfg, keysOf(agentA(), cfg), 1);
    expect(text).toBe(TEMPLATE_A);
    expect(Buffer.byteLength(text)).toBe(624);
    expect(sha(text)).toBe("056e0a4de0a216f7e1839f0a1d27e3907526d67aec07acc96d94af3014eb3cfa");
    expect(equivalentFingerprints(cfg, keysOf(agentA(), cfg))).toEqual([
      "056e0a4de0a216f7e1839f0a1d27e3907526d67aec07acc96d94af3014eb3cfa",
    ]);
  });

  it("vector A, template v2 (Buzz's persistent-workspace line, written): 680 bytes with null workspace fields", () => {
    const cfg = config(configA);
    const text = intentTemplate(cfg, keysOf(agentA(), cfg));
    expect(text).toBe(TEMPLATE_A_V2);
    expect(Buffer.byteLength(text)).toBe(680);
    expect(fingerprint(cfg, keysOf(agentA(), cfg))).toBe(
      "eb6cb9786525464542d7595483bea8992d4fd7a44048234fc51be1facdf66fbb",
    );
    expect(sha(TEMPLATE_A_V2)).toBe("eb6cb9786525464542d7595483bea8992d4fd7a44048234fc51be1facdf66fbb");
  });

  it("vector B has 24 env keys with BUZZ_ACP_AGENTS sorted before BUZZ_ACP_AGENT_ARGS", () => {
    const cfg = config(configA);
    const keys = keysOf(agentB(), cfg);
    expect(keys).toHaveLength(24);
    const text = intentTemplate(cfg, keys);
    expect(text.indexOf('"BUZZ_ACP_AGENTS"')).toBeLessThan(text.indexOf('"BUZZ_ACP_AGENT_ARGS"'));
    expect(sha(intentTemplate(cfg, keys, 1))).toBe("26f63b0b9893503156fedfb57987d0cad8273728c65f362ccdcc5a8ae876a237");
    expect(fingerprint(cfg, keys)).toBe("7ca8babd31c7bc966618bb7cb23681db8e990d4e36b758e26bd44ea9b80f135d");
  });

  it("vector C adds the persistent workspace as template v2", () => {
    const cfg = config({ ...configA, workspace_storage: "20Gi" });
    const keys = keysOf(agentB(), cfg);
    expect(intentTemplate(cfg, keys)).toContain(
      '"workspace_mount_path":"/home/agent","workspace_storage":"20Gi","workspace_storage_class":null,"run_as_user"',
    );
    expect(fingerprint(cfg, keys)).toBe("0ae46881df14cc5be685679fa5411bd97ea876587370cefef278bdfc611d80ef");
  });

  it("vector D appends the set pod options as the last key", () => {
    const cfg = config({
      ...configA,
      pod_options: { node_selector: { "kubernetes.io/arch": "arm64" }, active_deadline_seconds: 3600 },
    });
    const keys = keysOf(agentA(), cfg);
    expect(
      intentTemplate(cfg, keys).endsWith(
        ',"pod_options":{"node_selector":{"kubernetes.io/arch":"arm64"},"active_deadline_seconds":3600}}',
      ),
    ).toBe(true);
    expect(sha(intentTemplate(cfg, keys, 1))).toBe("0f2bd310d34f08fd4e6049d98181d37b328ba6bf21ef9000f8e7e23e63c126d1");
    expect(fingerprint(cfg, keys)).toBe("e4907e3b650c7e07d65adc17bc4b683106e4ae49551e43332e419c1f1611a692");
  });

  // pod.rs at block/buzz@0c7b698, each_optional_pod_control_changes_intent: setup_pending: true is part of the intent,
  // serialised last in pod_options; false is the default and leaves the template as it was.
  it("each_optional_pod_control_changes_intent: setup_pending true is the last pod_options key, false changes nothing", () => {
    const plain = config(configA);
    const keys = keysOf(agentA(), plain);
    const on = config({ ...configA, pod_options: { active_deadline_seconds: 3600, setup_pending: true } });
    expect(
      intentTemplate(on, keys).endsWith(',"pod_options":{"active_deadline_seconds":3600,"setup_pending":true}}'),
    ).toBe(true);
    expect(fingerprint(config({ ...configA, pod_options: { setup_pending: true } }), keys)).not.toBe(
      fingerprint(plain, keys),
    );
    expect(fingerprint(config({ ...configA, pod_options: { setup_pending: false } }), keys)).toBe(
      fingerprint(plain, keys),
    );
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
      fc.property(
        fc.string(),
        fc.stringMatching(/^[0-9a-f]{8}$/),
        fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/),
        (value, generation, extraKey) => {
          const a = agentA();
          const withValue = { ...a, relay_url: `wss://${value.replace(/\s/g, "x")}x` };
          const env1 = buildEnv(a, cfg, "00000000");
          const env2 = buildEnv(withValue, cfg, generation);
          if (!env1.ok || !env2.ok) return;
          expect(fingerprint(cfg, Object.keys(env2.value))).toBe(fingerprint(cfg, Object.keys(env1.value)));
          const env3 = buildEnv({ ...a, launch: { ...a.launch, env: { [extraKey]: "v" } } }, cfg, generation);
          if (!env3.ok) return;
          const reserved = Object.keys(env1.value).includes(extraKey);
          expect(fingerprint(cfg, Object.keys(env3.value)) === fingerprint(cfg, Object.keys(env1.value))).toBe(
            reserved,
          );
        },
      ),
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
    const text = intentTemplate(cfg, Object.keys(env.value));
    expect(text).not.toContain("nsec1");
    expect(text).not.toContain("0f3a91cc");
    expect(text).not.toContain("wss://relay.example");
    expect(text).not.toContain("goose");
  });
});

describe("template v1 and v2 across Buzz's versions (issue 18.2)", () => {
  const cfg = config(configA);
  const keys = keysOf(agentA(), cfg);
  const v1 = sha(intentTemplate(cfg, keys, 1));
  const v2 = fingerprint(cfg, keys);

  it("a persistent workspace has no v1 equivalent: only its own v2 matches", () => {
    const claim = config({ ...configA, workspace_storage: "20Gi" });
    expect(equivalentFingerprints(claim, keys)).toEqual([]);
    expect(() => intentTemplate(claim, keys, 1)).toThrow();
  });

  it("no sequence of deploys alternating between Buzz's templates and berth replaces a never-started pod of unchanged intent", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("buzz-baseline", "buzz-persistent", "berth"), { minLength: 1, maxLength: 12 }),
        (writers) => {
          for (const writer of writers) {
            // The pod the last writer created, as berth then reads it.
            const recorded = writer === "buzz-baseline" ? v1 : v2;
            const action = classify(verified({ kind: "recoverable" }, recorded), v2, equivalentFingerprints(cfg, keys));
            expect(action.kind).toBe("observe");
          }
        },
      ),
    );
  });

  it("a changed intent still diverges under either recorded template", () => {
    const other = config({ ...configA, cpu_request: "4" });
    for (const recorded of [v1, v2]) {
      expect(
        classify(
          verified({ kind: "recoverable" }, recorded),
          fingerprint(other, keys),
          equivalentFingerprints(other, keys),
        ).kind,
      ).toBe("delete");
    }
  });
});
