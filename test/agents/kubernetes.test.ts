/**
 * `berth deploy` of a Kubernetes agent against a real kube-apiserver + etcd with the simulated kubelet
 * (test/k8s/control-plane.ts): the same spec vocabulary, outcomes and `agent.deploy` event shape as the mesh
 * (test/agents/mesh-deploy.test.ts), seen through the CLI, the API objects and the backend's own chain.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { NSEC } from "../k8s-provider/cases.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { DEPLOY_EVENT_KEYS } from "./event-shape.js";

const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
const POD = "buzz-agent-7e7e9c42a91b";
const NS = "berth-agents";

let cp: ControlPlane;
const home = mkdtempSync(join(tmpdir(), "berth-agents-k8s-"));
const spec = join(home, "scout.yaml");

function writeSpec(args: string[] = []): void {
  writeFileSync(
    spec,
    `apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: kubernetes
  image: ${IMAGE}
  config: { args: ${JSON.stringify(args)} }
  kubernetes: { relay_url: "wss://relay.example", nsec_env: SCOUT_NSEC, command: goose, owner_pubkey: ${"a".repeat(64)}, provider_config: { namespace: ${NS} } }
`,
  );
}

beforeAll(async () => {
  cp = await startControlPlane();
}, 120_000);
afterAll(async () => {
  killAll();
  await cp?.stop();
});

async function berth(...args: string[]) {
  const r = await runNode([builtPath("src/cli/entry/main.js"), ...args], {
    cwd: tmpdir(),
    env: {
      KUBECONFIG: cp.kubeconfigPath,
      BERTH_HOME: home,
      HOME: home,
      BERTH_K8S_DEADLINE_SECONDS: "30",
      SCOUT_NSEC: NSEC,
    },
  });
  expect(r.stdout + r.stderr, "the nsec never reaches the output").not.toContain(NSEC);
  return r;
}

async function deploy(...extra: string[]): Promise<Record<string, unknown> & { code: number | null }> {
  const r = await berth(...(extra.length > 0 ? extra : ["deploy", spec]), "--json");
  try {
    return { ...(JSON.parse(r.stdout) as Record<string, unknown>), code: r.code };
  } catch {
    throw new Error(`no JSON from berth (exit ${r.code}): ${r.stdout} ${r.stderr}`);
  }
}

function agentEvents(): Array<Record<string, unknown>> {
  const db = new Database(join(home, "k8s.db"), { readonly: true });
  try {
    return (
      db.prepare("SELECT source, payload FROM audit_event WHERE kind = 'agent.deploy' ORDER BY seq").all() as Array<{
        source: string;
        payload: string;
      }>
    ).map((r) => ({
      source: r.source,
      ...(JSON.parse(r.payload) as Record<string, unknown>),
    }));
  } finally {
    db.close();
  }
}

describe("berth deploy of a Kubernetes agent against a real kube-apiserver", () => {
  it("starts the agent once, and a second deploy of the same spec is a no-op", async () => {
    cp.kubelet.defaultState = () => ({ kind: "running" });
    writeSpec();
    const first = await deploy();
    expect([first.code, first.ok, first.outcome, first.row, first.instance], String(first.message)).toEqual([
      0,
      true,
      "started",
      "no-instance",
      POD,
    ]);
    const uid = (await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid;
    const second = await deploy();
    expect([second.code, second.outcome, second.row, second.action]).toEqual([0, "unchanged", "started", "no-op"]);
    expect((await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid, "the same pod").toBe(uid);
    const human = await berth("deploy", spec);
    expect(human.stdout).toContain("nothing to do");
    const events = agentEvents();
    expect(events.map((e) => [e.source, e.outcome])).toEqual([
      ["k8s", "started"],
      ["k8s", "unchanged"],
      ["k8s", "unchanged"],
    ]);
    for (const e of events)
      expect(
        Object.keys(e)
          .filter((k) => k !== "source")
          .sort(),
        "the same payload shape as on the mesh",
      ).toEqual([...DEPLOY_EVENT_KEYS].sort());
  }, 90_000);

  it("a terminated agent is replaced through the fence of the observation, as on the mesh", async () => {
    const old = await cp.core.readNamespacedPod({ name: POD, namespace: NS });
    await cp.kubelet.setState(NS, POD, { kind: "terminated", exitCode: 0, reason: "Completed" });
    const r = await deploy();
    expect([r.code, r.outcome, r.row, r.action], String(r.message)).toEqual([
      0,
      "started",
      "terminated",
      "replace (terminated)",
    ]);
    expect(r.fence).toEqual({ uid: old.metadata?.uid, resource_version: expect.any(String) });
    expect((await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid).not.toBe(old.metadata?.uid);
  }, 90_000);

  it("an edit to a running agent waits for a stop, and berth agent replace applies it at once", async () => {
    writeSpec(["--v2"]);
    const before = (await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid;
    const pending = await deploy();
    expect([pending.code, pending.outcome, pending.pending_edit]).toEqual([0, "unchanged", true]);
    expect(String(pending.message)).toContain("takes effect after it stops");
    expect((await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid).toBe(before);

    const replaced = await deploy("agent", "replace", "scout");
    expect([replaced.code, replaced.outcome, replaced.action], String(replaced.message)).toEqual([
      0,
      "started",
      "replace (user)",
    ]);
    expect((await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid).not.toBe(before);

    const listed = await deploy("agents");
    expect(
      (listed.agents as Array<Record<string, unknown>>).map((a) => [a.name, a.target, a.state, a.instance]),
    ).toEqual([["scout", "kubernetes", "running", POD]]);
    const status = await deploy("agent", "status", "scout");
    expect([status.state, status.row, status.next]).toEqual(["running", "started", "no-op"]);
  }, 120_000);
});
