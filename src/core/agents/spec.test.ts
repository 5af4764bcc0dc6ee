import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { kubernetesDeployRequest } from "./kubernetes-request.js";
import { meshIntentFingerprint, parseAgentSpec } from "./spec.js";

const MESH = `apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: mesh
  package: ./packages/scout
  config: { args: ["--once"], env: { LOG_LEVEL: info } }
  mesh: { prefer: [pi5] }
`;

describe("the agent spec", () => {
  it("refuses a placement strategy other than spread or binpack, naming the field", () => {
    const r = parseAgentSpec(
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: a }\nspec:\n  target: mesh\n  package: ./p\n  mesh: { strategy: fill }\n",
    );
    expect(r.ok ? [] : r.error.join("\n")).toMatch(/spec\.mesh\.strategy: must be "spread" or "binpack"/);
  });

  it("accepts a mesh agent and fills the defaults", () => {
    const r = parseAgentSpec(MESH);
    expect(r.ok && r.value.spec.mesh).toEqual({
      pin: null,
      prefer: ["pi5"],
      avoid: [],
      allow_emulated: false,
      start: true,
      strategy: "spread",
    });
  });

  it("keeps an agent alive by default (restart: always) and takes on-failure or never when asked", () => {
    const r = parseAgentSpec(MESH);
    expect(r.ok && r.value.spec.restart).toBe("always");
    const asked = parseAgentSpec(MESH.replace("target: mesh", "target: mesh\n  restart: on-failure"));
    expect(asked.ok && asked.value.spec.restart).toBe("on-failure");
    const bad = parseAgentSpec(MESH.replace("target: mesh", "target: mesh\n  restart: sometimes"));
    expect(bad.ok ? "" : bad.error.join("\n")).toMatch(/spec\.restart: must be "never", "on-failure" or "always"/);
  });

  it("passes a Kubernetes agent's persistent workspace claim to the backend and refuses two settings that disagree", () => {
    const doc = (k: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "k" },
        spec: {
          target: "kubernetes",
          image: "ghcr.io/a/b@sha256:" + "a".repeat(64),
          kubernetes: { relay_url: "wss://relay", nsec_env: "K_NSEC", command: "scout", ...k },
        },
      });
    const r = parseAgentSpec(doc({ workspace_storage: "20Gi", workspace_storage_class: "fast" }));
    expect(r.ok).toBe(true);
    if (r.ok)
      expect(kubernetesDeployRequest(r.value, "nsec1x").provider_config).toMatchObject({
        workspace_storage: "20Gi",
        workspace_storage_class: "fast",
      });
    const classAlone = parseAgentSpec(doc({ workspace_storage_class: "fast" }));
    expect(classAlone.ok ? "" : classAlone.error.join("\n")).toMatch(
      /spec\.kubernetes\.workspace_storage_class: workspace_storage_class needs workspace_storage/,
    );
    const twice = parseAgentSpec(doc({ workspace_storage: "20Gi", provider_config: { workspace_storage: "5Gi" } }));
    expect(twice.ok ? "" : twice.error.join("\n")).toMatch(
      /spec\.kubernetes\.workspace_storage: conflicts with provider_config\.workspace_storage/,
    );
  });

  it("accepts the same document written as JSON", () => {
    const json = JSON.stringify({
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name: "k" },
      spec: {
        target: "kubernetes",
        image: `ghcr.io/a/b@sha256:${"a".repeat(64)}`,
        kubernetes: { relay_url: "wss://relay", nsec_env: "K_NSEC", command: "scout" },
      },
    });
    expect(parseAgentSpec(json).ok).toBe(true);
  });

  it.each([
    ["a wrong version", MESH.replace("berth/v1", "berth/v9"), "apiVersion"],
    ["a name that is not a DNS label", MESH.replace("name: scout", "name: Scout_1"), "metadata.name"],
    ["a mesh agent without a package", MESH.replace("  package: ./packages/scout\n", ""), "spec.package"],
    ["an env key that is not a POSIX name", MESH.replace("LOG_LEVEL", "LOG-LEVEL"), "spec.config.env"],
    ["an unknown field", MESH.replace("target: mesh", "target: mesh\n  replicas: 2"), "spec"],
    ["an unknown target", MESH.replace("target: mesh", "target: cloud"), "spec.target"],
    ["a mesh env name the node would refuse", MESH.replace("LOG_LEVEL", "log_level"), "spec.config.env.log_level"],
    ["a duplicate key", MESH.replace("target: mesh", "target: mesh\n  target: mesh"), "not valid YAML"],
  ])("refuses %s and names the field", (_what, text, field) => {
    const r = parseAgentSpec(text, "scout.yaml");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.join("\n")).toContain(field);
    expect(!r.ok && r.error[0]).toMatch(/^scout\.yaml: /);
  });

  it("refuses a Kubernetes agent with an inline or missing identity", () => {
    const base = {
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name: "k" },
      spec: { target: "kubernetes", image: "img@sha256:" + "a".repeat(64) },
    };
    expect(
      parseAgentSpec(
        JSON.stringify({ ...base, spec: { ...base.spec, kubernetes: { relay_url: "wss://r", command: "scout" } } }),
      ),
    ).toMatchObject({ ok: false, error: [expect.stringContaining("exactly one of nsec_file or nsec_env")] });
    expect(
      parseAgentSpec(
        JSON.stringify({
          ...base,
          spec: { ...base.spec, kubernetes: { relay_url: "wss://r", private_key_nsec: "nsec1…" } },
        }),
      ).ok,
    ).toBe(false);
  });

  it("names an unknown field by its path in the spec and suggests the field it was probably meant to be (issue 36)", () => {
    const r = parseAgentSpec(MESH.replace("target: mesh", "target: mesh\n  restrat: always"), "scout.yaml");
    expect(r).toEqual({
      ok: false,
      error: ["scout.yaml: spec.restrat: unknown field (did you mean restart?); remove it or correct its spelling"],
    });
    const missing = parseAgentSpec(
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "k" },
        spec: { target: "kubernetes", image: "i", kubernetes: { nsec_file: "./n", command: "c" } },
      }),
      null,
    );
    expect(missing).toEqual({ ok: false, error: ["spec.kubernetes.relay_url: missing; give a string"] });
  });

  it("refuses an unquoted all-digit owner_pubkey, which YAML reads as a number, saying to quote it (issue 36)", () => {
    const k8s = (owner: string) =>
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: k }\nspec:\n  target: kubernetes\n  image: i\n  kubernetes:\n    relay_url: wss://r\n    nsec_file: ./n\n    command: c\n    owner_pubkey: ${owner}\n`;
    const digits = "1".repeat(64);
    const r = parseAgentSpec(k8s(digits), "k.yaml");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toEqual([
      expect.stringMatching(
        /^k\.yaml: spec\.kubernetes\.owner_pubkey: YAML read this unquoted all-digit key as a number; quote it/,
      ),
    ]);
    const quoted = parseAgentSpec(k8s(`"${digits}"`));
    expect(quoted.ok && quoted.value.spec.kubernetes?.owner_pubkey).toBe(digits);
  });

  it("never throws on arbitrary text (fuzzed)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        const r = parseAgentSpec(text);
        expect(typeof r.ok).toBe("boolean");
      }),
    );
  });
});

describe("the mesh create-intent fingerprint", () => {
  const base = { agent: "scout", packageId: "p1", config: { args: ["a"], env: { A: "1", B: "2" } } };
  it("is stable under env key order and changes with any part of the configuration", () => {
    const fp = meshIntentFingerprint(base);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(meshIntentFingerprint({ ...base, config: { args: ["a"], env: { B: "2", A: "1" } } })).toBe(fp);
    expect(meshIntentFingerprint({ ...base, packageId: "p2" })).not.toBe(fp);
    expect(meshIntentFingerprint({ ...base, config: { args: ["b"], env: base.config.env } })).not.toBe(fp);
    expect(meshIntentFingerprint({ ...base, config: { args: ["a"], env: { A: "1", B: "3" } } })).not.toBe(fp);
  });
});
