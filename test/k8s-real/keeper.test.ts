/**
 * A berth agent spec with `target: kubernetes` on a real kubelet (issue 34): `berth deploy` starts a real harness,
 * `berth agent logs` shows what that container wrote, and `berth serve`'s keeper replaces the pod once its harness is
 * killed (-9: the pod is Failed 137 under restartPolicy Never), per the spec's `restart: on-failure` — judged from
 * /proc: the old process is gone and a new one runs.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  auditOf,
  freshNamespace,
  newAgent,
  readPod,
  removeTempDirs,
  tempHome,
  until,
} from "../k8s/conformance/support.js";
import { berthBin } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { alive, containerPid } from "./stack.js";
import { agentStatus, core, dropNamespace, node, skipReason } from "./support.js";

const namespaces: string[] = [];
afterEach(() => killAll());
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
  removeTempDirs();
});

describe.skipIf(skipReason !== null)("a Kubernetes agent spec on a real kubelet", () => {
  it("berth deploy runs the harness, berth agent logs shows its real output, and berth serve replaces it after kill -9 (restart: on-failure)", async () => {
    const MAIN = berthBin();
    const ns = freshNamespace("real-keeper");
    namespaces.push(ns);
    const home = tempHome("real-keeper");
    const agent = newAgent();
    writeFileSync(join(home, "scout.nsec"), `${agent.nsec}\n`, { mode: 0o600 });
    const spec = join(home, "scout.yaml");
    writeFileSync(
      spec,
      `apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: kubernetes
  image: ${node.images.agent}
  restart: on-failure
  kubernetes: { relay_url: "wss://relay.example", nsec_file: scout.nsec, command: goose, owner_pubkey: ${"a".repeat(64)}, provider_config: { namespace: ${ns}, cpu_request: 10m, memory_request: 32Mi } }
`,
    );
    const env = { KUBECONFIG: node.kubeconfig, BERTH_HOME: home, HOME: home, BERTH_K8S_DEADLINE_SECONDS: "60" };
    const deployed = await runNode([MAIN, "deploy", spec, "--json"], { cwd: home, env });
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    const first = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    const pid = containerPid(agentStatus(first)?.containerID ?? "") as number;
    expect(alive(pid)).toBe(true);

    const logs = await until(
      "the harness's line in berth agent logs",
      async () => {
        const r = await runNode([MAIN, "agent", "logs", "scout"], { cwd: home, env });
        return r.stdout.includes("berth-node harness up as 10001") ? r : undefined;
      },
      30_000,
    );
    expect(logs.code).toBe(0);

    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home, "--json"], { cwd: home, env });
    await serve.waitForOutput(/\n/);
    process.kill(pid, "SIGKILL");
    const replaced = await until(
      "a new running pod with a live harness",
      async () => {
        const p = await readPod(core(), ns, agent.podName);
        const s = agentStatus(p);
        if (!s?.state?.running || p?.metadata?.deletionTimestamp || p?.metadata?.uid === first.metadata?.uid)
          return undefined;
        const next = containerPid(s.containerID ?? "");
        return next !== undefined && alive(next) ? { pod: p, pid: next } : undefined;
      },
      90_000,
    );
    expect(alive(pid)).toBe(false);
    expect(replaced.pid).not.toBe(pid);
    const deletes = auditOf(home, "k8s.pod.delete", "intent").filter((r) => r.object === agent.podName);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatchObject({
      mode: "reconcile-loop",
      fence: { kind: "precondition", uid: first.metadata?.uid },
    });
    serve.child.kill("SIGTERM");
    expect(await serve.exited()).toEqual({ code: 0, signal: null });
  }, 180_000);
});
