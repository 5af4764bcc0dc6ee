/**
 * A smoke run of the real provider executable against a real kube-apiserver + etcd with the simulated kubelet
 * (test/k8s/control-plane.ts): create, strict no-op, terminated replace, stop — seen in API effects and in the audit
 * chain. The full conformance suite (spec/kubernetes.md §19.5) lives in test/k8s/conformance.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { NSEC } from "./cases.js";

const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
const POD = "buzz-agent-7e7e9c42a91b";
const NS = "berth-smoke";

let cp: ControlPlane;
const home = mkdtempSync(join(tmpdir(), "berth-real-"));

beforeAll(async () => {
  cp = await startControlPlane();
}, 120_000);
afterAll(async () => {
  killAll();
  await cp?.stop();
});

const request = {
  op: "deploy",
  agent: {
    relay_url: "wss://relay.example",
    private_key_nsec: NSEC,
    launch: { owner_pubkey: "a".repeat(64), command: "goose" },
  },
  provider_config: { namespace: NS, image: IMAGE },
};

async function provider() {
  const r = await runNode([builtPath("src/cli/entry/main.js"), "provider", "kubernetes"], {
    input: JSON.stringify(request),
    cwd: tmpdir(),
    env: { KUBECONFIG: cp.kubeconfigPath, BERTH_HOME: home, HOME: home, BERTH_K8S_DEADLINE_SECONDS: "30" },
  });
  return { ...r, answer: JSON.parse(r.stdout.trim()) as Record<string, unknown> };
}

function outcomes(): Array<Record<string, unknown>> {
  const db = new Database(join(home, "k8s.db"), { readonly: true });
  try {
    return (
      db.prepare("SELECT payload FROM audit_event WHERE kind = 'k8s.deploy.outcome' ORDER BY seq").all() as Array<{
        payload: string;
      }>
    ).map((r) => JSON.parse(r.payload) as Record<string, unknown>);
  } finally {
    db.close();
  }
}

describe("the provider against a real kube-apiserver", () => {
  it("creates the namespace, the Secret and the Pod, and answers once the container runs", async () => {
    cp.kubelet.defaultState = () => ({ kind: "running" });
    const r = await provider();
    expect(r.answer).toEqual({ ok: true, agent_id: POD });
    const pod = await cp.core.readNamespacedPod({ name: POD, namespace: NS });
    expect(pod.metadata?.labels?.["app.kubernetes.io/managed-by"]).toBe("buzz-backend-kubernetes");
    const secret = pod.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name ?? "";
    const s = await cp.core.readNamespacedSecret({ name: secret, namespace: NS });
    expect(s.immutable).toBe(true);
  }, 60_000);

  it("a second deploy of the started agent is a one-request no-op", async () => {
    const before = (await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid;
    const r = await provider();
    expect(r.answer).toEqual({ ok: true, agent_id: POD });
    expect((await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid).toBe(before);
    expect(outcomes().at(-1)).toMatchObject({ ok: true, created_this_call: false, api_requests: 1 });
  }, 60_000);

  it("a terminated agent is replaced by a new generation on the next deploy", async () => {
    const old = await cp.core.readNamespacedPod({ name: POD, namespace: NS });
    await cp.kubelet.setState(NS, POD, { kind: "terminated", exitCode: 0, reason: "Completed" });
    const r = await provider();
    expect(r.answer).toEqual({ ok: true, agent_id: POD });
    const now = await cp.core.readNamespacedPod({ name: POD, namespace: NS });
    expect(now.metadata?.uid).not.toBe(old.metadata?.uid);
    expect(r.stdout + r.stderr).not.toContain(NSEC);
  }, 60_000);
});
