/**
 * `berth up --local-cluster` (issue 34): one command shows both targets with real processes — the local mesh's node
 * daemons and a real single-node Kubernetes (tools/k8s/stack.sh) as the second target, answering `berth k8s list` —
 * and `berth down` stops the cluster with the rest, leaving no process or cgroup of it, judged from /proc. It starts
 * a stack of its own, so it runs in the tier's first invocation (BERTH_NODE_LIFECYCLE=1), never beside the shared one.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";
import { stackCgroups, stackCheck, stackProcesses, sysctls } from "./stack.js";

const why = stackCheck();
const home = mkdtempSync(join(tmpdir(), "berth-up-cluster-"));
const env = { BERTH_HOME: home };
afterAll(async () => {
  await runNode([berthBin(), "down", "--data-dir", home], { env });
  for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

describe.skipIf(why !== null)("berth up --local-cluster", () => {
  it("starts a real node as the second target beside the local mesh, and berth down stops it leaving no process or cgroup", async () => {
    const before = sysctls();
    const up = await runNode(
      [berthBin(), "up", "--local-cluster", "--detach", "--json", "--port", "0", "--data-dir", home],
      { env },
    );
    expect(up.code, up.stderr.slice(-3000)).toBe(0);
    const doc = JSON.parse(up.stdout.trim().split("\n").at(-1) as string) as {
      nodes: unknown[];
      kubernetes: { configured: boolean; reachable: boolean; server: string | null; agents: number | null };
      local_cluster: { kubeconfig: string; state_dir: string } | null;
    };
    expect(doc.nodes).toHaveLength(3);
    expect(doc.kubernetes).toMatchObject({ configured: true, reachable: true, agents: 0 });
    expect(doc.kubernetes.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const tag = createHash("sha256").update(resolve(home)).digest("hex").slice(0, 8);
    const stack = { dir: `/tmp/berth-up-${tag}`, cgroup: `berth-up-${tag}` };
    expect(doc.local_cluster?.state_dir).toBe(stack.dir);
    const running = stackProcesses(stack).join("\n");
    for (const daemon of ["kube-apiserver", "kubelet", "containerd", "etcd"]) expect(running).toContain(`/${daemon}`);

    const down = await runNode([berthBin(), "down", "--json", "--data-dir", home], { env });
    expect(down.code, down.stderr).toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({ was_up: true, local_cluster_stopped: true });
    expect(stackProcesses(stack)).toEqual([]);
    expect(stackCgroups(stack)).toEqual([]);
    expect(sysctls()).toEqual(before);
  }, 240_000);
});
