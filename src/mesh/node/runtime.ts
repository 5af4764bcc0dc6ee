/**
 * The native process runtime (spec/mesh.md §13). One process group per instance, started detached with stdout and stderr
 * appended to files (not pipes), so an instance outlives the daemon. A tiny POSIX sh wrapper leads the group: it
 * runs the entry, ignores nothing the child inherits, survives a graceful TERM long enough to write the child's
 * status to `exit_status`, and exits with that status, so even an exit that happened while the daemon was down has
 * a code. A process is "the same one" only if pid, host boot id and the kernel's start time all match.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { groupMembers, type ProcRow } from "../../core/node/process-group.js";
import { sha256OfFile } from "./content.js";

export interface ProcessIdentity {
  readonly pid: number;
  readonly host_boot_id: string;
  readonly start_marker: string;
}

export type Probe =
  | { readonly state: "running" }
  | { readonly state: "exited"; readonly exit_code: number | null; readonly signal: string | null; readonly detail: string }
  | { readonly state: "lost"; readonly detail: string }
  | { readonly state: "unknown"; readonly detail: string };

/** Leads the group; `$0` is the exit-status file, `$@` the entry. See the module comment for why it exists. */
const WRAPPER = [
  '"$@" &',
  "c=$!",
  "trap ':' TERM INT HUP",
  // Issue 16: on a leased node a watchdog in the group enforces the lease even while no daemon runs (assumption A3 of
  // docs/concepts.md "The node lease"): past the deadline in `lease_deadline` (whole seconds, rounded down, so it
  // never stops later than the daemon would) it terminates the entry, and 2 s later kills the whole group.
  'l="${0%/*}/lease_deadline"',
  'if [ -f "$l" ]; then (',
  "  trap - TERM INT HUP",
  "  while kill -0 $c 2>/dev/null; do",
  '    d=; read -r d < "$l" 2>/dev/null',
  '    if [ -n "$d" ] && [ "$(date +%s)" -ge "$d" ]; then kill -TERM $c 2>/dev/null; sleep 2; kill -KILL 0; fi',
  "    sleep 1",
  "  done",
  ") & fi",
  "wait $c; s=$?",
  'while kill -0 $c 2>/dev/null; do wait $c; s=$?; done',
  'printf "%s\\n" "$s" > "$0.tmp" && mv "$0.tmp" "$0"',
  "exit $s",
].join("\n");

const LOG_TRIM_AT = 1024 * 1024;
const LOG_KEEP = 64 * 1024;

export const SIGNALS_BY_NUMBER: Record<number, string> = { 1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM" };

export function hostBootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "unknown";
  }
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
  return stat !== undefined && stat.state !== "Z" && stat.startMarker === identity.start_marker && identity.host_boot_id === hostBootId();
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
}

export type ExitListener = (instanceId: string, exit: { code: number | null; signal: string | null }) => void;

export class NativeRuntime {
  private readonly children = new Map<string, ChildProcess>();
  private exitListener: ExitListener | undefined;

  constructor(readonly root: string) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
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
  materialise(instanceId: string, files: ReadonlyArray<{ path: string; mode: "0644" | "0755"; source: string; sha256: string }>): void {
    const dir = this.dirOf(instanceId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    mkdirSync(join(dir, "work"), { recursive: true, mode: 0o700 });
    mkdirSync(join(dir, "tmp"), { recursive: true, mode: 0o700 });
    for (const f of files) {
      const target = join(dir, "work", f.path);
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      copyFileSync(f.source, target);
      if (sha256OfFile(target) !== f.sha256) throw new Error(`${f.path}: the stored copy no longer matches its pinned sha256`);
      chmodSync(target, f.mode === "0755" ? 0o755 : 0o644);
    }
  }

  /**
   * Issue 16: the lease deadline the instance's watchdog enforces (see WRAPPER), written atomically; present before
   * the spawn on a leased node, so the watchdog starts with the instance. Whole seconds, rounded down (never later).
   */
  writeLeaseDeadline(instanceId: string, deadlineMs: number): void {
    const path = join(this.dirOf(instanceId), "lease_deadline");
    if (!existsSync(this.dirOf(instanceId))) return;
    writeFileSync(`${path}.tmp`, `${Math.floor(deadlineMs / 1000)}\n`, { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
  }

  /** Spawns the entry detached in its own group; resolves once the process exists, with its identity. */
  async start(instanceId: string, spec: SpawnSpec): Promise<ProcessIdentity> {
    const dir = this.dirOf(instanceId);
    rmSync(join(dir, "exit_status"), { force: true });
    const out = openSync(join(dir, "stdout.log"), "a", 0o600);
    const err = openSync(join(dir, "stderr.log"), "a", 0o600);
    let child: ChildProcess;
    try {
      child = spawn("/bin/sh", ["-c", WRAPPER, join(dir, "exit_status"), spec.program, ...spec.args], {
        cwd: join(dir, "work"),
        env: { ...spec.env },
        detached: true,
        stdio: ["ignore", out, err],
      });
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
    const stat = await waitForStat(pid);
    return { pid, host_boot_id: hostBootId(), start_marker: stat?.startMarker ?? "" };
  }

  /** §14.3 step 3: is the recorded process still the same one, and if not, what became of it. */
  probe(instanceId: string, identity: ProcessIdentity | null): Probe {
    if (identity === null) return { state: "unknown", detail: "no process identity recorded" };
    if (sameProcess(identity)) return { state: "running" };
    if (identity.host_boot_id !== hostBootId()) return { state: "lost", detail: "host restarted" };
    // Issue 21 case 4: the leader (the wrapper) died but processes it started still run in its group.
    if (instanceAlive(identity)) return { state: "running" };
    const status = this.exitStatus(instanceId);
    if (status) return { state: "exited", ...status, detail: "process exited" };
    return { state: "exited", exit_code: null, signal: null, detail: "process ended and left no exit status" };
  }

  exitStatus(instanceId: string): { exit_code: number | null; signal: string | null } | undefined {
    try {
      const s = Number(readFileSync(join(this.dirOf(instanceId), "exit_status"), "utf8").trim());
      if (!Number.isInteger(s)) return undefined;
      return s > 128 ? { exit_code: null, signal: SIGNALS_BY_NUMBER[s - 128] ?? `SIG${s - 128}` } : { exit_code: s, signal: null };
    } catch {
      return undefined;
    }
  }

  /**
   * SIGTERM to the group, wait `graceMs`, SIGKILL, wait ≤ 5 s; stopped only once /proc shows no member of the group
   * left (issue 21 case 5: a leader that is gone does not mean its group is). A group whose id was reused by another
   * process is never signalled.
   */
  async stop(identity: ProcessIdentity, graceMs: number): Promise<{ stopped: boolean; signal: string | null }> {
    const pgid = identity.pid;
    const alive = () => instanceAlive(identity);
    const signalGroup = (signal: NodeJS.Signals) => {
      try {
        if (alive()) process.kill(-pgid, signal);
      } catch {
        // the group emptied between the check and the signal
      }
    };
    if (!alive()) return { stopped: true, signal: null };
    signalGroup("SIGTERM");
    if (await waitUntil(() => !alive(), graceMs)) return { stopped: true, signal: "SIGTERM" };
    signalGroup("SIGKILL");
    return { stopped: await waitUntil(() => !alive(), 5000), signal: "SIGKILL" };
  }

  remove(instanceId: string): void {
    rmSync(this.dirOf(instanceId), { recursive: true, force: true });
  }

  /**
   * §13: a log file over 1 MiB is trimmed to its last 64 KiB. The instance appends with O_APPEND, so its next write
   * lands after the kept tail; a write racing the trim may be lost, which logs (diagnostics, not audit) tolerate.
   */
  trimLogs(instanceId: string): void {
    for (const name of ["stdout.log", "stderr.log"]) {
      const path = join(this.dirOf(instanceId), name);
      try {
        if (statSync(path).size <= LOG_TRIM_AT) continue;
        const fd = openSync(path, "r+");
        try {
          const size = fstatSync(fd).size;
          const keep = Buffer.alloc(LOG_KEEP);
          const n = readSync(fd, keep, 0, LOG_KEEP, size - LOG_KEEP);
          ftruncateSync(fd, 0);
          writeSync(fd, keep, 0, n, 0);
          // Remember that earlier output was dropped, so readers still learn the stream was truncated.
          writeFileSync(`${path}.trimmed`, "");
        } finally {
          closeSync(fd);
        }
      } catch {
        // no log yet, or the instance is being removed
      }
    }
  }

  /** The last `tailBytes` of each stream, invalid UTF-8 replaced. */
  readLogs(instanceId: string, tailBytes: number): { stdout: string; stderr: string; truncated_stdout: boolean; truncated_stderr: boolean } {
    this.trimLogs(instanceId);
    const tail = (name: string) => {
      const path = join(this.dirOf(instanceId), name);
      if (!existsSync(path)) return { text: "", truncated: false };
      const fd = openSync(path, "r");
      try {
        const size = fstatSync(fd).size;
        const n = Math.min(size, tailBytes);
        const buf = Buffer.alloc(n);
        readSync(fd, buf, 0, n, size - n);
        return { text: new TextDecoder("utf-8").decode(buf), truncated: size > n || existsSync(`${path}.trimmed`) };
      } finally {
        closeSync(fd);
      }
    };
    const out = tail("stdout.log");
    const err = tail("stderr.log");
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
          const fields = readFileSync(`/proc/${p}/stat`, "utf8").slice(readFileSync(`/proc/${p}/stat`, "utf8").lastIndexOf(")") + 2).split(" ");
          if (Number(fields[2]) === pid) return { pid, host_boot_id: hostBootId(), start_marker: stat.startMarker };
        }
      } catch {
        // raced with an exiting process or not ours
      }
    }
    return undefined;
  }
}

async function waitForStat(pid: number): Promise<{ state: string; startMarker: string } | undefined> {
  for (let i = 0; i < 100; i++) {
    const stat = procStat(pid);
    if (stat) return stat;
    await new Promise((r) => setTimeout(r, 2));
  }
  return undefined;
}
