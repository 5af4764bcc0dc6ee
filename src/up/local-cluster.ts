/**
 * `berth up --local-cluster` (issue 34): a real single-node Kubernetes — etcd, kube-apiserver, controller-manager,
 * scheduler, containerd and a kubelet in a private network + mount namespace (tools/k8s/stack.sh) — started beside
 * the local mesh and shown as up's second target, so one command shows both targets with real processes and real
 * containers. Linux and root only, from a berth checkout whose tools/k8s binaries are built; `berth down` (or up's
 * Ctrl-C) stops it. Where it runs is recorded in `<home>/up/local-cluster.json`.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

const RecordSchema = z.object({ dir: z.string(), cgroup: z.string(), kubeconfig: z.string(), script: z.string() });
export type LocalCluster = z.infer<typeof RecordSchema>;

const recordPath = (home: string) => join(resolve(home), "up", "local-cluster.json");

/** tools/k8s/stack.sh of the checkout this berth runs from (src/up or dist/src/up), or null in an installed package. */
export function stackScript(): string | null {
  for (const rel of ["../../tools/k8s/stack.sh", "../../../tools/k8s/stack.sh"]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  return null;
}

function run(script: string, verb: string, where: { dir: string; cgroup: string }) {
  const r = spawnSync("bash", [script, verb], {
    env: { ...process.env, BERTH_STACK_DIR: where.dir, BERTH_STACK_CGROUP: where.cgroup },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** Starts the stack for this home; an Error says why it cannot run here. */
export function startLocalCluster(home: string, log: (line: string) => void): LocalCluster {
  if (process.platform !== "linux")
    throw new Error("--local-cluster runs on Linux only (network and mount namespaces, cgroups)");
  const script = stackScript();
  if (script === null)
    throw new Error("--local-cluster needs a berth checkout: tools/k8s/stack.sh is not beside this berth");
  const check = run(script, "check", { dir: "", cgroup: "" });
  if (check.code !== 0) throw new Error(`--local-cluster cannot run here:\n${(check.stdout + check.stderr).trim()}`);
  // Short and per home: containerd's socket path must stay under 108 bytes, and two homes get two stacks.
  const tag = createHash("sha256").update(resolve(home)).digest("hex").slice(0, 8);
  const where = { dir: `/tmp/berth-up-${tag}`, cgroup: `berth-up-${tag}` };
  log("local cluster: starting etcd, kube-apiserver, controller-manager, scheduler, containerd and a kubelet…");
  const up = run(script, "up", where);
  if (up.code !== 0)
    throw new Error(`the local cluster did not start:\n${up.stderr.trim().split("\n").slice(-8).join("\n")}`);
  const cluster: LocalCluster = { ...where, kubeconfig: join(where.dir, "admin.kubeconfig"), script };
  mkdirSync(dirname(recordPath(home)), { recursive: true });
  writeFileSync(recordPath(home), `${JSON.stringify(cluster)}\n`);
  log(`local cluster: node berth-node Ready (KUBECONFIG=${cluster.kubeconfig})`);
  return cluster;
}

/** Stops the stack `up` started in this home, if any; true when one was stopped. */
export function stopLocalCluster(home: string, log: (line: string) => void): boolean {
  let cluster: LocalCluster;
  try {
    cluster = RecordSchema.parse(JSON.parse(readFileSync(recordPath(home), "utf8")));
  } catch {
    return false;
  }
  const r = run(cluster.script, "down", cluster);
  if (r.code !== 0) {
    log(`local cluster: stopping it failed (${cluster.script} down):\n${r.stderr.trim()}`);
    return false;
  }
  rmSync(recordPath(home), { force: true });
  log("local cluster: stopped");
  return true;
}
