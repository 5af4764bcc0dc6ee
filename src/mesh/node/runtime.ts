/**
 * The native process runtime (spec/mesh.md §13). One process group per instance (and one cgroup where the node can
 * (About 460 lines, one concept: an instance's process from spawn to reaped exit — start, identity, signals, status and
 * usage read from its group and cgroup; the pure parts live in core/node.)
 * make one, `confine.ts`), started detached with stdout and stderr appended to files (not pipes), so an instance
 * outlives the daemon. A tiny POSIX sh wrapper leads the group (`core/node/containment-script.ts`): it joins the
 * instance's cgroups, runs the entry, survives a graceful TERM long enough to write the entry's status to
 * `exit_status`, and ends whatever the entry left behind. A process is "the same one" only if pid, host boot id and
 * the kernel's start time all match.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import type { Network } from "../../core/governance/policy.js";
import { WATCHDOG_LAG_S } from "../../core/mesh/lease.js";
import { LEASE_DEADLINE_FILE } from "../../core/node/containment-script.js";
import { groupMembers, type ProcRow } from "../../core/node/process-group.js";
import { bootId } from "../../store/lease.js";
import type { Confinement } from "./confine.js";
import { sha256OfFile } from "./content.js";
import { DEFAULT_ROTATION, type LogRotation, rotateLogs, tailStream } from "./log-files.js";

export interface ProcessIdentity {
  readonly pid: number;
  readonly host_boot_id: string;
  readonly start_marker: string;
}

export type Probe =
  | { readonly state: "running" }
  | {
      readonly state: "exited";
      readonly exit_code: number | null;
      readonly signal: string | null;
      readonly detail: string;
    }
  | { readonly state: "lost"; readonly detail: string }
  | { readonly state: "unknown"; readonly detail: string };

export const SIGNALS_BY_NUMBER: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
  6: "SIGABRT",
  9: "SIGKILL",
  15: "SIGTERM",
};

/** Read once per process (store/lease.ts): a host's boot id cannot change under a running process (issue 19). */
export function hostBootId(): string {
  return bootId();
}

/** The start-time field (22) and state (3) of /proc/<pid>/stat; the command name may hold spaces and parentheses. */
export function procStat(pid: number): { state: string; startMarker: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  // After the comm field: [0] is state (field 3) ... [19] is starttime (field 22).
  const state = fields[0];
  const start = fields[19];
  return state && start ? { state, startMarker: start } : undefined;
}

/** Linux's USER_HZ: the unit of /proc/<pid>/stat's times on every architecture berth runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time of a process and of its reaped children (fields 14–17 of /proc/<pid>/stat), in microseconds; 0 when gone. */
export function procCpuUsec(pid: number): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return 0;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // After the comm field: [11] utime, [12] stime, [13] cutime, [14] cstime (fields 14–17).
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + (Number(fields[i]) || 0), 0);
  return (ticks * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}

/** Resident memory of a process (VmRSS of /proc/<pid>/status), in bytes; 0 when gone or a kernel thread. */
export function procRssBytes(pid: number): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return 0;
  }
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Every process in /proc as (pid, pgrp, state, start time); processes that vanish mid-scan are skipped. */
export function scanProc(): ProcRow[] {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const rows: ProcRow[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // After the comm field: [0] state (field 3), [2] pgrp (field 5), [19] starttime (field 22).
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    const pgrp = Number(fields[2]);
    const start = fields[19];
    if (state && start && Number.isInteger(pgrp)) rows.push({ pid: Number(name), pgrp, state, startMarker: start });
  }
  return rows;
}

/**
 * Issue 21: the live members of an instance's process group, judged from /proc (core/node/process-group.ts), the
 * leader's recorded start time guarding against a reused group id. On another boot nothing of it can be alive.
 */
export function liveMembers(identity: ProcessIdentity): number[] {
  if (identity.host_boot_id !== hostBootId()) return [];
  return groupMembers(scanProc(), identity).map((r) => r.pid);
}

export function instanceAlive(identity: ProcessIdentity): boolean {
  return liveMembers(identity).length > 0;
}

export function sameProcess(identity: ProcessIdentity): boolean {
  const stat = procStat(identity.pid);
  return (
    stat !== undefined &&
    stat.state !== "Z" &&
    stat.startMarker === identity.start_marker &&
    identity.host_boot_id === hostBootId()
  );
}

const waitUntil = async (cond: () => boolean, deadlineMs: number, stepMs = 10): Promise<boolean> => {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return cond();
};

export interface SpawnSpec {
  readonly program: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** What the package declares, for the network namespace and the memory limit. */
  readonly network: Network;
  readonly memory_mb: number;
}

export type ExitListener = (instanceId: string, exit: { code: number | null; signal: string | null }) => void;

export class NativeRuntime {
  private readonly children = new Map<string, ChildProcess>();
  private exitListener: ExitListener | undefined;

  constructor(
    readonly root: string,
    readonly confinement: Confinement,
    private readonly rotation: LogRotation = DEFAULT_ROTATION,
  ) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    // An agent user must reach its own directories: search (never read) permission on the way there.
    if (confinement.agent.kind === "unprivileged") {
      chmodSync(root, 0o711);
      chmodSync(dirname(root), (statSync(dirname(root)).mode & 0o7777) | 0o711);
    }
  }

  onExit(listener: ExitListener): void {
    this.exitListener = listener;
  }

  dirOf(instanceId: string): string {
    return join(this.root, instanceId);
  }

  workDirOf(instanceId: string): string {
    return join(this.dirOf(instanceId), "work");
  }

  /** Whether the daemon itself spawned (and so is notified about) this instance's process. */
  isChild(instanceId: string): boolean {
    return this.children.has(instanceId);
  }

  /**
   * Lays out `instances/<id>/` (mode 0700) with work/, tmp/ and the pinned files copied from the content store. Each
   * copy is hashed again where it will run (issue 12): a store file changed between its check and the copy throws.
   */
  materialise(
    instanceId: string,
    files: ReadonlyArray<{ path: string; mode: "0644" | "0755"; source: string; sha256: string }>,
  ): void {
    const dir = this.dirOf(instanceId);
    const work = join(dir, "work");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    mkdirSync(work, { recursive: true, mode: 0o700 });
    mkdirSync(join(dir, "tmp"), { recursive: true, mode: 0o700 });
    for (const f of files) {
      const target = join(work, f.path);
      // work/ itself was made above (issue 19: one mkdir and one stat fewer per top-level file).
      if (dirname(target) !== work) mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      copyFileSync(f.source, target);
      if (sha256OfFile(target) !== f.sha256)
        throw new Error(`${f.path}: the stored copy no longer matches its pinned sha256`);
      chmodSync(target, f.mode === "0755" ? 0o755 : 0o644);
    }
  }

  /**
   * Issue 16: the lease deadline the instance's watchdog enforces (core/node/containment-script.ts), written
   * atomically; present before the spawn on a leased node, so the watchdog starts with the instance. Whole seconds,
   * rounded down, plus the watchdog's lag (core/mesh/lease.ts): a running daemon always stops first.
   */
  writeLeaseDeadline(instanceId: string, deadlineMs: number): void {
    const dir = this.dirOf(instanceId);
    if (!existsSync(dir)) return;
    const path = join(dir, LEASE_DEADLINE_FILE);
    writeFileSync(`${path}.tmp`, `${Math.floor(deadlineMs / 1000) + WATCHDOG_LAG_S}\n`, { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
  }

  /**
   * Spawns the entry detached in its own group (and its cgroups, behind its network namespace and privilege drop);
   * resolves once the process exists, with its identity. Throws when the node may not run it (confine.ts).
   */
  async start(instanceId: string, spec: SpawnSpec): Promise<ProcessIdentity> {
    const dir = this.dirOf(instanceId);
    rmSync(join(dir, "exit_status"), { force: true });
    const launch = this.confinement.prepare(dir, instanceId, spec);
    if (launch.owner) {
      // The agent's own directories; the package files in work/ stay the daemon's (readable, not writable).
      chmodSync(dir, 0o711);
      for (const sub of ["work", "tmp"]) chownSync(join(dir, sub), launch.owner.uid, launch.owner.gid);
    }
    const out = openSync(join(dir, "stdout.log"), "a", 0o600);
    const err = openSync(join(dir, "stderr.log"), "a", 0o600);
    let child: ChildProcess;
    try {
      child = spawn(
        "/bin/sh",
        ["-c", launch.script, join(dir, "exit_status"), ...launch.prefix, spec.program, ...spec.args],
        {
          cwd: join(dir, "work"),
          env: { ...spec.env },
          detached: true,
          stdio: ["ignore", out, err],
        },
      );
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", reject);
      });
    } finally {
      closeSync(out);
      closeSync(err);
    }
    const pid = child.pid as number;
    child.unref();
    this.children.set(instanceId, child);
    child.once("exit", (code, signal) => {
      if (this.children.get(instanceId) === child) this.children.delete(instanceId);
      this.exitListener?.(instanceId, { code, signal });
    });
    // Read once, no poll (issue 19): after `spawn` the child exists (it stays a zombie until libuv reaps it), so a
    // missing stat means it has already been reaped, and a later read could only find another process on that pid.
    const stat = procStat(pid);
    return { pid, host_boot_id: hostBootId(), start_marker: stat?.startMarker ?? "" };
  }

  /** Live processes of the instance: its group's members and its cgroup's (a `setsid` escapee is only in the latter). */
  members(instanceId: string, identity: ProcessIdentity | null): number[] {
    const pids = new Set(identity ? liveMembers(identity) : []);
    for (const pid of this.confinement.members(this.dirOf(instanceId))) pids.add(pid);
    return [...pids];
  }

  /**
   * Issue 36 (`berth top`): the instance's CPU time and memory now, from its cgroups; where a cgroup cannot say (a v1
   * host has no cpuacct cgroup per instance, a process-group node none at all) from its live members' /proc files.
   * Null when nothing of it runs.
   */
  usage(
    instanceId: string,
    identity: ProcessIdentity | null,
  ): { cpu_usec: number; memory_bytes: number; source: "cgroup" | "proc"; sampled_ms: number } | null {
    const members = this.members(instanceId, identity);
    if (members.length === 0) return null;
    const fromCgroup = this.confinement.usage(this.dirOf(instanceId));
    const cpu = fromCgroup?.cpuUsec ?? members.reduce((sum, pid) => sum + procCpuUsec(pid), 0);
    const memory = fromCgroup?.memoryBytes ?? members.reduce((sum, pid) => sum + procRssBytes(pid), 0);
    return {
      cpu_usec: cpu,
      memory_bytes: memory,
      source: fromCgroup?.cpuUsec != null && fromCgroup.memoryBytes !== null ? "cgroup" : "proc",
      sampled_ms: Date.now(),
    };
  }

  alive(instanceId: string, identity: ProcessIdentity | null): boolean {
    return this.members(instanceId, identity).length > 0;
  }

  /** Whether the kernel's OOM killer ended a process of the instance's current run (its memory limit). */
  memoryKilled(instanceId: string): boolean {
    return this.confinement.memoryKilled(this.dirOf(instanceId));
  }

  /**
   * Ends what is left of an instance whose group leader is gone (issue 15: nothing an agent forks outlives it):
   * the cgroup killed, the group SIGKILLed. Resolves whether nothing is left.
   */
  async reap(instanceId: string, identity: ProcessIdentity | null): Promise<boolean> {
    if (identity) signalGroup(identity, "SIGKILL");
    await this.confinement.killAll(this.dirOf(instanceId));
    return waitUntil(() => !this.alive(instanceId, identity), 5000);
  }

  /** §14.3 step 3: is the recorded process still the same one, and if not, what became of it. */
  probe(instanceId: string, identity: ProcessIdentity | null): Probe {
    if (identity === null) return { state: "unknown", detail: "no process identity recorded" };
    if (sameProcess(identity)) return { state: "running" };
    if (identity.host_boot_id !== hostBootId()) return { state: "lost", detail: "host restarted" };
    // The leader (the wrapper) died but processes it started still run: the instance is reaped by the caller.
    if (this.alive(instanceId, identity)) return { state: "running" };
    const status = this.exitStatus(instanceId);
    if (status) return { state: "exited", ...status, detail: "process exited" };
    return { state: "exited", exit_code: null, signal: null, detail: "process ended and left no exit status" };
  }

  exitStatus(instanceId: string): { exit_code: number | null; signal: string | null } | undefined {
    try {
      const s = Number(readFileSync(join(this.dirOf(instanceId), "exit_status"), "utf8").trim());
      if (!Number.isInteger(s)) return undefined;
      return s > 128
        ? { exit_code: null, signal: SIGNALS_BY_NUMBER[s - 128] ?? `SIG${s - 128}` }
        : { exit_code: s, signal: null };
    } catch {
      return undefined;
    }
  }

  /**
   * SIGTERM to the group and to every member of the cgroup, wait `graceMs`, then kill the cgroup (confine.ts) and
   * SIGKILL the group, wait ≤ 5 s; stopped only once /proc and the cgroup show nothing left (issue 21 case 5: a leader
   * that is gone does not mean its group is). A group whose id was reused by another process is never signalled.
   */
  async stop(
    instanceId: string,
    identity: ProcessIdentity | null,
    graceMs: number,
  ): Promise<{ stopped: boolean; signal: string | null }> {
    const dir = this.dirOf(instanceId);
    const alive = () => this.alive(instanceId, identity);
    if (!alive()) return { stopped: true, signal: null };
    if (identity) signalGroup(identity, "SIGTERM");
    this.confinement.signal(dir, "SIGTERM");
    if (await waitUntil(() => !alive(), graceMs)) return { stopped: true, signal: "SIGTERM" };
    if (identity) signalGroup(identity, "SIGKILL");
    await this.confinement.killAll(dir);
    return { stopped: await waitUntil(() => !alive(), 5000), signal: "SIGKILL" };
  }

  /** Removes the instance's directory and its cgroups. */
  remove(instanceId: string): void {
    this.confinement.release(this.dirOf(instanceId));
    rmSync(this.dirOf(instanceId), { recursive: true, force: true });
  }

  /** §13, issue 13: rotate each stream over its size, keeping a capped number of older files (log-files.ts). */
  trimLogs(instanceId: string): void {
    rotateLogs(this.dirOf(instanceId), this.rotation);
  }

  /** The last `tailBytes` of each stream across its rotated files, invalid UTF-8 replaced. */
  readLogs(
    instanceId: string,
    tailBytes: number,
  ): { stdout: string; stderr: string; truncated_stdout: boolean; truncated_stderr: boolean } {
    this.trimLogs(instanceId);
    const dir = this.dirOf(instanceId);
    const out = tailStream(dir, "stdout.log", tailBytes, this.rotation.keep);
    const err = tailStream(dir, "stderr.log", tailBytes, this.rotation.keep);
    return { stdout: out.text, stderr: err.text, truncated_stdout: out.truncated, truncated_stderr: err.truncated };
  }

  /** §14.3 row `starting`: a process of ours whose environment names the instance (Linux only). */
  findByInstanceEnv(instanceId: string): ProcessIdentity | undefined {
    const needle = `BERTH_INSTANCE_ID=${instanceId}`;
    let pids: string[];
    try {
      pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
    } catch {
      return undefined;
    }
    for (const p of pids) {
      try {
        if (statSync(`/proc/${p}`).uid !== process.getuid?.()) continue;
        const env = readFileSync(`/proc/${p}/environ`, "utf8").split("\0");
        if (!env.includes(needle)) continue;
        const pid = Number(p);
        // Only the group leader (the wrapper) is the instance's identity.
        const stat = procStat(pid);
        if (stat && readFileSync(`/proc/${p}/stat`, "utf8").includes(`) ${stat.state} `)) {
          const fields = readFileSync(`/proc/${p}/stat`, "utf8")
            .slice(readFileSync(`/proc/${p}/stat`, "utf8").lastIndexOf(")") + 2)
            .split(" ");
          if (Number(fields[2]) === pid) return { pid, host_boot_id: hostBootId(), start_marker: stat.startMarker };
        }
      } catch {
        // raced with an exiting process or not ours
      }
    }
    return undefined;
  }
}

function signalGroup(identity: ProcessIdentity, signal: NodeJS.Signals): void {
  try {
    if (instanceAlive(identity)) process.kill(-identity.pid, signal);
  } catch {
    // the group emptied between the check and the signal
  }
}
