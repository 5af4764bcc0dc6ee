/**
 * The package's health check, run by the node (issue 15, spec/mesh.md §15): `health.exec` every `health.interval_s`
 * for each live instance that declares one, in the instance's working directory, as the agent's user, with the host
 * contract's variables (but not `BERTH_INSTANCE_ID`) and the placement's declared config (never its secrets). Exit 0
 * within the deadline is healthy; anything else is a miss, and `judgeHealth` (core/node/health-check.ts) turns
 * `misses` in a row into `unhealthy`. The check runs in its own process group, killed whole at the deadline, so a
 * hanging check leaves nothing behind.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { type HealthProbe, type HealthSpec, type HealthVerdict, judgeHealth } from "../../core/node/health-check.js";
import { isLoaderHook } from "../../core/packages/loader-hooks.js";
import type { NodeContext } from "./context.js";
import { isLive, type InstanceRow } from "./store.js";
import { workspaceDir } from "./workspace.js";

/** A check that takes longer than its interval (at most 30 s) is a miss. */
const MAX_CHECK_MS = 30_000;

export type HealthListener = (instanceId: string, verdict: HealthVerdict, generation: number) => void;

export class HealthChecks {
  private readonly due = new Map<string, number>();
  private readonly misses = new Map<string, number>();
  private readonly running = new Set<string>();

  constructor(
    private readonly ctx: NodeContext,
    private readonly onVerdict: HealthListener,
  ) {}

  /** Starts every check that is due; called by the supervisor's tick. */
  tick(rows: readonly InstanceRow[], nowMs: number): void {
    const live = new Set<string>();
    for (const row of rows) {
      const spec = row.launch.health;
      if (!spec || !isLive(row.state) || this.ctx.stopping.has(row.instance_id)) continue;
      const key = `${row.instance_id}@${row.generation}`;
      live.add(key);
      // The first check of a run waits one interval: a process is given that long to come up.
      const due = this.due.get(key) ?? nowMs + spec.interval_s * 1000;
      this.due.set(key, due);
      if (due > nowMs || this.running.has(key)) continue;
      this.due.set(key, nowMs + spec.interval_s * 1000);
      this.running.add(key);
      void runCheck(this.ctx, row, spec).then((probe) => {
        this.running.delete(key);
        if (!this.due.has(key)) return; // the run ended meanwhile
        const verdict = judgeHealth(spec, this.misses.get(key) ?? 0, probe);
        this.misses.set(key, verdict.misses);
        this.onVerdict(row.instance_id, verdict, row.generation);
      });
    }
    // Forget runs that ended (a restart is a new generation, so its count starts again).
    for (const key of this.due.keys()) {
      if (!live.has(key)) {
        this.due.delete(key);
        this.misses.delete(key);
      }
    }
  }
}

function runCheck(ctx: NodeContext, row: InstanceRow, spec: HealthSpec): Promise<HealthProbe> {
  const workDir = ctx.runtime.workDirOf(row.instance_id);
  const [first, ...rest] = spec.exec;
  if (first === undefined) return Promise.resolve({ ok: false, error: "health.exec is empty" });
  // A relative program names a file of the package (as the entry does); otherwise it is looked up on PATH.
  const program = !isAbsolute(first) && existsSync(join(workDir, first)) ? join(workDir, first) : first;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(row.launch.env)) if (!isLoaderHook(name)) env[name] = value;
  Object.assign(env, {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    LANG: env.LANG ?? "C.UTF-8",
    HOME: workspaceDir(ctx.o.dataDir, row.name),
    // Not BERTH_INSTANCE_ID: the node's recovery finds an instance's process by that variable (§14.3), and a
    // check is not the instance.
    BERTH_NAME: row.name,
    BERTH_NODE_ID: ctx.nodeId,
  });
  const deadlineMs = Math.min(spec.interval_s * 1000, MAX_CHECK_MS);
  return new Promise((resolve) => {
    let settled = false;
    const done = (probe: HealthProbe) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(probe);
    };
    // A root daemon's agents run as the agent user (confine.ts): so does their health check, with the same network
    // namespace and seal (issue 33 item 7: the package's code reaches no more in a check than in its entry).
    const [cmd, ...argv] = [...ctx.runtime.confinement.prefix(row.launch.network), program, ...rest];
    const child = spawn(cmd as string, argv, { cwd: workDir, env, detached: true, stdio: "ignore" });
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // the check ended between the deadline and the signal
      }
      done({ ok: false, error: `timed out after ${deadlineMs} ms` });
    }, deadlineMs);
    child.once("error", (error) => done({ ok: false, error: `could not run: ${error.message}` }));
    child.once("exit", (code, signal) => {
      if (code === 0) done({ ok: true, value: undefined });
      else done({ ok: false, error: signal ? `killed by ${signal}` : `exit code ${code}` });
    });
    child.unref();
  });
}
