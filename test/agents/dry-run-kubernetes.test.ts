/**
 * `berth deploy --dry-run` of a Kubernetes agent (issue 36) against a real kube-apiserver + etcd with the simulated
 * kubelet (test/k8s/control-plane.ts): the plan names the row of the state machine and the action — create, no-op, the
 * fenced replace of which pod — and sends no write. Judged from the apiserver's side, by its own audit log: between
 * the marks, no create, update, patch or delete by berth's user (the simulated kubelet writes only pod status); and
 * from the home's side: the Kubernetes chain (k8s.db) is byte-for-byte the same.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { NSEC } from "../k8s-provider/cases.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";

const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
const POD = "buzz-agent-7e7e9c42a91b";
const NS = "berth-agents";

let cp: ControlPlane;
const home = mkdtempSync(join(tmpdir(), "berth-dry-run-k8s-"));
const spec = join(home, "scout.yaml");

writeFileSync(
  spec,
  `apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: kubernetes
  image: ${IMAGE}
  kubernetes: { relay_url: "wss://relay.example", nsec_env: SCOUT_NSEC, command: goose, owner_pubkey: "${"a".repeat(64)}", provider_config: { namespace: ${NS} } }
`,
);

beforeAll(async () => {
  cp = await startControlPlane({ auditLog: true });
  cp.kubelet.defaultState = () => ({ kind: "running" });
}, 120_000);
afterAll(async () => {
  killAll();
  await cp?.stop();
});

async function berth(...args: string[]): Promise<Record<string, unknown> & { code: number | null; stdout: string }> {
  const r = await runNode([builtPath("src/cli/entry/main.js"), ...args, "--json"], {
    cwd: tmpdir(),
    env: {
      KUBECONFIG: cp.kubeconfigPath,
      BERTH_HOME: home,
      HOME: home,
      BERTH_K8S_DEADLINE_SECONDS: "30",
      SCOUT_NSEC: NSEC,
    },
  });
  try {
    return { ...(JSON.parse(r.stdout) as Record<string, unknown>), code: r.code, stdout: r.stdout };
  } catch {
    throw new Error(`no JSON from berth (exit ${r.code}): ${r.stdout} ${r.stderr}`);
  }
}

interface AuditRecord {
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; name?: string };
}

/** The apiserver's audit records from line `from` on. */
function auditLines(from: number): AuditRecord[] {
  const path = cp.auditLogPath as string;
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .slice(from)
    .map((l) => JSON.parse(l) as AuditRecord);
}

const auditMark = () => auditLines(0).length;

/** Writes by the kubeconfig's user berth runs as, other than the simulated kubelet's status writes. */
const writesSince = (mark: number) =>
  auditLines(mark)
    .filter(
      (r) =>
        r.user.username === "berth-admin" &&
        ["create", "update", "patch", "delete", "deletecollection"].includes(r.verb) &&
        r.objectRef?.subresource !== "status",
    )
    .map((r) => `${r.verb} ${r.objectRef?.resource}/${r.objectRef?.subresource ?? ""} ${r.objectRef?.name ?? ""}`);

const k8sDb = () =>
  existsSync(join(home, "k8s.db"))
    ? createHash("sha256")
        .update(readFileSync(join(home, "k8s.db")))
        .digest("hex")
    : "absent";

describe("berth deploy --dry-run of a Kubernetes agent against a real kube-apiserver", () => {
  it("names the row and action (create, no-op, a fenced replace of the pod) and sends no write to the apiserver", async () => {
    // Nothing deployed yet: a deploy would create the pod.
    let mark = auditMark();
    const db0 = k8sDb();
    const first = await berth("deploy", spec, "--dry-run");
    expect([first.code, first.dry_run, first.row, first.action, first.instance], String(first.message)).toEqual([
      0,
      true,
      "no-instance",
      "create",
      null,
    ]);
    expect(String(first.message)).toContain(`would create pod ${POD} in namespace ${NS}`);
    expect(
      auditLines(mark).some((r) => r.user.username === "berth-admin" && r.verb === "get"),
      "the plan read the pod",
    ).toBe(true);
    expect(writesSince(mark), "no write reached the apiserver").toEqual([]);
    expect(k8sDb(), "the Kubernetes chain was not touched").toBe(db0);

    const deployed = await berth("deploy", spec);
    expect([deployed.code, deployed.outcome], String(deployed.message)).toEqual([0, "started"]);
    expect(
      writesSince(mark).some((w) => w.startsWith("create pods")),
      "a deploy is a create the audit log sees",
    ).toBe(true);

    // Running with this spec: a deploy would do nothing.
    mark = auditMark();
    const db1 = k8sDb();
    const same = await berth("deploy", spec, "--dry-run");
    expect([same.code, same.row, same.action, same.instance]).toEqual([0, "started", "no-op", POD]);

    // Terminated: a deploy would replace it, fenced on the observed uid and resourceVersion.
    const old = await cp.kubelet.setState(NS, POD, { kind: "terminated", exitCode: 0, reason: "Completed" });
    const replace = await berth("deploy", spec, "--dry-run");
    expect([replace.code, replace.row, replace.action], String(replace.message)).toEqual([
      0,
      "terminated",
      "replace (terminated)",
    ]);
    expect(replace.replaces).toEqual({
      instance: POD,
      node: null,
      fence: { uid: old.metadata?.uid, resource_version: expect.any(String) },
    });
    expect(String(replace.message)).toContain(
      `would replace pod ${POD} (terminated): a delete fenced on uid ${old.metadata?.uid}`,
    );
    expect(writesSince(mark), "no write reached the apiserver").toEqual([]);
    expect(
      (await cp.core.readNamespacedPod({ name: POD, namespace: NS })).metadata?.uid,
      "the pod is still there",
    ).toBe(old.metadata?.uid);
    expect(k8sDb(), "nothing chained").toBe(db1);
  }, 120_000);
});
