/**
 * The node stack itself (tools/k8s/stack.sh, issue 34): one command starts it with a real pod running, one stops it,
 * and nothing is left on the host — no process, no mount, no cgroup — and the three kernel-wide sysctls the kubelet
 * rewrites are back, all judged from /proc. It starts its own stack, so scripts/test runs it before the tier's shared
 * one (BERTH_NODE_LIFECYCLE=1 selects it in vitest.config.ts). Start/stop times and memory are printed for the record.
 */
import { readFileSync } from "node:fs";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { until } from "../k8s/conformance/support.js";
import {
  alive,
  containerPid,
  type RealNode,
  stackCgroups,
  stackCheck,
  stackMounts,
  stackProcesses,
  startStack,
  stopStack,
  sysctls,
} from "./stack.js";

const why = stackCheck();
if (why !== null && process.env.CI === "true")
  throw new Error(`the real-node tier cannot run on this CI machine:\n${why}`);
if (why !== null) process.stderr.write(`[k8s-real] skipped: ${why}\n`);

/** Proportional set size of every process of the stack, in MiB. */
function pssMiB(node: RealNode): number {
  let kib = 0;
  for (const line of stackProcesses(node)) {
    const pid = line.split(" ")[0];
    try {
      kib += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
    } catch {}
  }
  return Math.round(kib / 1024);
}

describe.skipIf(why !== null)("the node stack", () => {
  it("starts with one command, runs a digest-pinned pod, and stops leaving no process, mount or cgroup behind and the host's sysctls as they were", async () => {
    const where = { dir: `/tmp/berth-node-life-${process.pid}`, cgroup: `berth-node-life-${process.pid}` };
    const before = sysctls();
    const started = Date.now();
    const node = startStack(where);
    let stopped = false;
    try {
      const upMs = Date.now() - started;
      const kc = new KubeConfig();
      kc.loadFromFile(node.kubeconfig);
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespacedPod({
        namespace: "default",
        body: {
          metadata: { name: "probe" },
          spec: {
            restartPolicy: "Never",
            containers: [
              { name: "agent", image: node.images.agent, resources: { requests: { cpu: "10m", memory: "16Mi" } } },
            ],
          },
        },
      });
      const pod = await until(
        "the probe pod running",
        async () => {
          const p = await core.readNamespacedPod({ namespace: "default", name: "probe" });
          return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
        },
        60_000,
      );
      const pid = containerPid(pod.status?.containerStatuses?.[0]?.containerID ?? "") as number;
      expect(alive(pid)).toBe(true);
      // The container runs in the kubelet's cgroup root of this stack, inside the node's network namespace's pod.
      expect(readFileSync(`/proc/${pid}/cgroup`, "utf8")).toContain(`/${where.cgroup}/kubepods`);
      expect(stackProcesses(node).length).toBeGreaterThan(8);
      // Mounts stay in the node's mount namespace: the host sees none of containerd's.
      expect(stackMounts(node)).toEqual([]);
      const memory = pssMiB(node);

      const downMs = stopStack(node);
      stopped = true;
      process.stderr.write(
        `[k8s-real] stack: up ${upMs} ms (stack.sh's own count ${node.startMs} ms), down ${downMs} ms with one pod, PSS ${memory} MiB\n`,
      );
      expect(alive(pid)).toBe(false);
      expect(stackProcesses(node)).toEqual([]);
      expect(alive(node.holderPid)).toBe(false);
      expect(stackMounts(node)).toEqual([]);
      expect(stackCgroups(node)).toEqual([]);
      expect(sysctls()).toEqual(before);
    } finally {
      if (!stopped) stopStack(node);
    }
  }, 240_000);
});
