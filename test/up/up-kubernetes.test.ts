/**
 * `berth up` with a Kubernetes context configured: the real kube-apiserver of test/k8s shows up as a second target,
 * with the number of agent pods it holds; a context whose server does not answer is reported, not waited on.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../src/core/kubernetes/naming.js";
import { probeKubernetesTarget } from "../../src/up/kubernetes-target.js";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { berthBin } from "../support/built.js";
import { killAll, spawnNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";

const home = mkdtempSync(join(tmpdir(), "berth-up-k8s-"));
let cp: ControlPlane;

beforeAll(async () => {
  cp = await startControlPlane();
  // One pod shaped like an agent pod another writer (Buzz) made: berth must count it, and leave it alone.
  await cp.core.createNamespacedPod({
    namespace: "default",
    body: {
      metadata: { name: "buzz-agent-elsewhere", labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
      spec: { containers: [{ name: "agent", image: "registry.example/agent:1" }], restartPolicy: "Never" },
    },
  });
}, 120_000);

afterAll(async () => {
  killAll();
  for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
  await cp?.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("berth up with a Kubernetes context", () => {
  it("shows the context as a second target with its agent pods, and stops cleanly on Ctrl-C", async () => {
    // --json: one document on stdout once ready; the human summary goes to stderr.
    const up = spawnNode([berthBin(), "up", "--data-dir", home, "--port", "0", "--json"], {
      env: { BERTH_HOME: home, KUBECONFIG: cp.kubeconfigPath },
    });
    await up.waitForOutput("\n", 180_000);
    const doc = JSON.parse(up.output()) as {
      kubernetes: unknown;
      nodes: unknown[];
      agents: string[];
      dashboard: string;
    };
    expect(doc.kubernetes).toEqual({
      configured: true,
      context: "berth-test-admin",
      server: cp.server,
      reachable: true,
      agents: 1,
      error: null,
    });
    expect(doc.nodes).toHaveLength(3);
    expect(doc.agents.sort()).toEqual(["heartbeat", "scout"]);
    expect(doc.dashboard).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=/);
    expect(up.errors()).toMatch(/kubernetes {2}context berth-test-admin \(https:\/\/127\.0\.0\.1:\d+\): 1 agent pod\n/);
    up.child.kill("SIGINT");
    expect((await up.exited()).code, up.errors()).toBe(0);
    expect(processesUnder(home)).toEqual([]);
    // berth only looked: the other writer's pod is still there.
    const pod = await cp.core.readNamespacedPod({ namespace: "default", name: "buzz-agent-elsewhere" });
    expect(pod.metadata?.deletionTimestamp).toBeUndefined();
  }, 300_000);

  it("reports a context whose server does not answer within the probe's time instead of waiting on it", async () => {
    const silent = join(home, "silent.kubeconfig");
    // 192.0.2.1 is TEST-NET-1: routed nowhere, so the connection neither succeeds nor is refused quickly.
    writeFileSync(
      silent,
      JSON.stringify({
        "current-context": "silent",
        contexts: [{ name: "silent", context: { cluster: "silent", user: "u" } }],
        clusters: [{ name: "silent", cluster: { server: "https://192.0.2.1:6443", "insecure-skip-tls-verify": true } }],
        users: [{ name: "u", user: { token: "t" } }],
      }),
    );
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = silent;
    try {
      const target = await probeKubernetesTarget(berthBin(), home, null, 3_000);
      expect(target).toMatchObject({ configured: true, context: "silent", reachable: false, agents: null });
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  }, 60_000);
});
