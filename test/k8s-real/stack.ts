/**
 * The real node stack (tools/k8s/stack.sh) seen from a test: start, stop, its facts, and what a test reads from
 * outside it — a container's process in /proc, the processes, mounts and cgroups the stack may leave behind.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/built.js";

export const STACK = join(repoRoot, "tools", "k8s", "stack.sh");

export interface RealNode {
  readonly dir: string;
  readonly cgroup: string;
  readonly kubeconfig: string;
  readonly server: string;
  readonly nodeName: string;
  readonly containerd: string;
  readonly holderPid: number;
  /** Digest-pinned images built by the stack: `agent` runs and exits 0 on SIGTERM, `stubborn` ignores SIGTERM, `crash` exits 3 at once. */
  readonly images: {
    readonly agent: string;
    readonly stubborn: string;
    readonly crash: string;
    readonly pause: string;
  };
  /** A registry host inside the node's namespace: repository `locked` answers 401, every other one 404. */
  readonly registry: string;
  readonly startMs: number;
}

function stack(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync("bash", [STACK, ...args], {
    env: { ...process.env, ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** null when this machine can run the stack, else the reasons it cannot. */
export function stackCheck(): string | null {
  const r = stack(["check"], {});
  return r.code === 0 ? null : (r.stdout + r.stderr).trim() || `stack.sh check exited ${r.code}`;
}

const stackEnv = (o: { dir: string; cgroup: string }) => ({ BERTH_STACK_DIR: o.dir, BERTH_STACK_CGROUP: o.cgroup });

export function startStack(o: { dir: string; cgroup: string }): RealNode {
  const r = stack(["up"], stackEnv(o));
  if (r.code !== 0) throw new Error(`tools/k8s/stack.sh up failed (${r.code}):\n${r.stderr.slice(-4000)}`);
  return readStackEnv(r.stdout.trim(), o);
}

/** The facts of a stack that is up, from the env file `stack.sh up` printed. */
export function readStackEnv(file: string, o: { dir: string; cgroup: string }): RealNode {
  const vars = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^export ([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) vars.set(m[1] as string, (m[2] as string).replace(/^'(.*)'$/, "$1"));
  }
  const v = (k: string) => {
    const value = vars.get(k);
    if (value === undefined) throw new Error(`the stack's env file has no ${k}`);
    return value;
  };
  return {
    dir: o.dir,
    cgroup: o.cgroup,
    kubeconfig: v("KUBECONFIG"),
    server: v("BERTH_NODE_SERVER"),
    nodeName: v("BERTH_NODE_NAME"),
    containerd: v("BERTH_NODE_CONTAINERD"),
    holderPid: Number(v("BERTH_NODE_HOLDER_PID")),
    images: {
      agent: v("BERTH_NODE_IMAGE_AGENT"),
      stubborn: v("BERTH_NODE_IMAGE_STUBBORN"),
      crash: v("BERTH_NODE_IMAGE_CRASH"),
      pause: v("BERTH_NODE_PAUSE_IMAGE"),
    },
    registry: v("BERTH_NODE_REGISTRY"),
    startMs: Number(v("BERTH_NODE_START_MS")),
  };
}

/** Stops the stack; returns how long `down` took. */
export function stopStack(node: { dir: string; cgroup: string }): number {
  const started = Date.now();
  const r = stack(["down"], stackEnv(node));
  if (r.code !== 0) throw new Error(`tools/k8s/stack.sh down failed (${r.code}):\n${r.stderr.slice(-4000)}`);
  return Date.now() - started;
}

export function kubelet(node: RealNode, verb: "stop" | "start"): void {
  const r = stack([`kubelet-${verb}`], stackEnv(node));
  if (r.code !== 0) throw new Error(`stack.sh kubelet-${verb} failed: ${r.stderr}`);
}

// ---- judged from /proc ------------------------------------------------------------------------------------------

const pids = () =>
  readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .map(Number);
const read = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
};

/** A live (not zombie) process. */
export function alive(pid: number): boolean {
  const stat = read(`/proc/${pid}/stat`);
  const state = /\) ([A-Z]) /.exec(stat)?.[1];
  return state !== undefined && state !== "Z" && state !== "X";
}

/** The host pid of a container's first process: the live process whose cgroup names the container id and whose parent is a shim. */
export function containerPid(containerId: string): number | undefined {
  const id = containerId.replace(/^containerd:\/\//, "");
  const members = pids().filter((p) => alive(p) && read(`/proc/${p}/cgroup`).includes(id));
  // The first process is the one whose parent is outside the container (containerd-shim-runc-v2).
  return members.find((p) => {
    const ppid = Number(/^PPid:\s+(\d+)$/m.exec(read(`/proc/${p}/status`))?.[1] ?? 0);
    return !members.includes(ppid);
  });
}

export function uidOf(pid: number): number | undefined {
  const m = /^Uid:\s+(\d+)/m.exec(read(`/proc/${pid}/status`));
  return m ? Number(m[1]) : undefined;
}

/** Every live process that belongs to the stack: its state directory on the command line or in cwd, or its cgroup. */
export function stackProcesses(node: { dir: string; cgroup: string }): string[] {
  const out: string[] = [];
  for (const p of pids()) {
    if (!alive(p)) continue;
    const cmd = read(`/proc/${p}/cmdline`).replace(/\0/g, " ");
    let cwd = "";
    try {
      cwd = readlinkSync(`/proc/${p}/cwd`);
    } catch {}
    const cg = read(`/proc/${p}/cgroup`);
    if (
      cmd.includes(node.dir) ||
      cwd.startsWith(node.dir) ||
      cg.includes(`/${node.cgroup}/`) ||
      cg.includes(`/${node.cgroup}\n`)
    )
      out.push(`${p} ${cmd.slice(0, 160)}`);
  }
  return out;
}

/** Mounts of this (the host's) mount namespace under the stack's directory. */
export function stackMounts(node: { dir: string }): string[] {
  return read("/proc/self/mountinfo")
    .split("\n")
    .filter((l) => l.includes(node.dir));
}

/** The stack's cgroup directories still present in any hierarchy. */
export function stackCgroups(node: { cgroup: string }): string[] {
  const hierarchies = read("/proc/self/mounts")
    .split("\n")
    .map((l) => l.split(" "))
    .filter((f) => f[2] === "cgroup" || f[2] === "cgroup2")
    .map((f) => f[1] as string);
  return hierarchies.map((h) => join(h, node.cgroup)).filter((d) => existsSync(d));
}

export const SYSCTLS = ["vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"] as const;
export function sysctls(): Record<string, string> {
  return Object.fromEntries(SYSCTLS.map((s) => [s, read(`/proc/sys/${s}`).trim()]));
}
