import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { configuredContext, describeKubernetesTarget } from "./kubernetes-target.js";

const dir = mkdtempSync(join(tmpdir(), "berth-kubeconfig-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, body: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(body)); // JSON is YAML
  return path;
}

const dev = kubeconfig("dev", {
  "current-context": "dev",
  contexts: [{ name: "dev", context: { cluster: "dev-cluster", user: "me" } }],
  clusters: [{ name: "dev-cluster", cluster: { server: "https://127.0.0.1:6443" } }],
});
const prod = kubeconfig("prod", {
  "current-context": "prod",
  contexts: [{ name: "prod", context: { cluster: "prod-cluster" } }],
  clusters: [{ name: "prod-cluster", cluster: { server: "https://prod.example:443" } }],
});

describe("which Kubernetes context berth up shows", () => {
  it("is none when there is no kubeconfig, with the way to configure one", () => {
    const found = configuredContext(null, { HOME: join(dir, "nobody") });
    expect(found).toEqual({ ok: false, error: expect.stringContaining("set KUBECONFIG") });
  });

  it("is the current context of the kubeconfig, with its server", () => {
    expect(configuredContext(null, { KUBECONFIG: dev })).toEqual({
      ok: true,
      value: { context: "dev", server: "https://127.0.0.1:6443" },
    });
  });

  it("follows kubectl's merge rule: the first file that sets the current context wins, every file's contexts count", () => {
    expect(configuredContext(null, { KUBECONFIG: `${prod}:${dev}` })).toMatchObject({
      ok: true,
      value: { context: "prod" },
    });
    expect(configuredContext("dev", { KUBECONFIG: `${prod}:${dev}` })).toEqual({
      ok: true,
      value: { context: "dev", server: "https://127.0.0.1:6443" },
    });
  });

  it("names a requested context the kubeconfig does not hold", () => {
    expect(configuredContext("staging", { KUBECONFIG: dev })).toEqual({
      ok: false,
      error: 'context "staging" is not in the kubeconfig',
    });
  });

  it("asks for a context when the kubeconfig has no current one", () => {
    const none = kubeconfig("none", { contexts: [{ name: "a", context: { cluster: "c" } }], clusters: [] });
    expect(configuredContext(null, { KUBECONFIG: none })).toEqual({
      ok: false,
      error: expect.stringContaining("--kube-context"),
    });
  });

  it("reports a kubeconfig it cannot read instead of throwing", () => {
    const broken = join(dir, "broken");
    writeFileSync(broken, "contexts: [unclosed");
    expect(configuredContext(null, { KUBECONFIG: broken })).toMatchObject({
      ok: false,
      error: expect.stringContaining("not a readable kubeconfig"),
    });
  });
});

describe("the berth up line for the Kubernetes target", () => {
  it("says how many agent pods a reachable cluster holds, or why it is not reachable", () => {
    const base = { configured: true as const, context: "dev", server: "https://127.0.0.1:6443" };
    expect(describeKubernetesTarget({ ...base, reachable: true, agents: 1, error: null })).toBe(
      "kubernetes  context dev (https://127.0.0.1:6443): 1 agent pod",
    );
    expect(describeKubernetesTarget({ ...base, reachable: false, agents: null, error: "no answer within 10 s" })).toBe(
      "kubernetes  context dev (https://127.0.0.1:6443): unavailable — no answer within 10 s",
    );
    expect(describeKubernetesTarget({ configured: false, reason: "no kubeconfig" })).toBe(
      "kubernetes  not configured: no kubeconfig",
    );
  });
});
