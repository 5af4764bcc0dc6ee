/**
 * The node's process handling (spec/mesh.md §11.2, §13, §14.3): spawning an instance's entry with its launch
 * environment, stopping its group, and recording exits, whether the daemon saw them (its own children) or found them
 * by probing a re-adopted process. Every state change commits with its chain event.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isLoaderHook } from "../../core/packages/loader-hooks.js";
import { truncateUtf8 } from "../../core/protocol/messages.js";
import type { NodeContext } from "./context.js";
import { runtimeEvent } from "./events.js";
import { instanceAlive, type ProcessIdentity } from "./runtime.js";
import { type InstanceRow, isLive } from "./store.js";
import { ensureWorkspace } from "./workspace.js";

/** The detail of a running instance whose group leader exited while other members of its group still run. */
export const GROUP_OUTLIVES_LEADER = "the group leader exited; other processes of the instance's group still run";

export function identityOf(row: InstanceRow): ProcessIdentity | null {
  return row.pid !== null && row.host_boot_id !== null && row.start_marker !== null
    ? { pid: row.pid, host_boot_id: row.host_boot_id, start_marker: row.start_marker }
    : null;
}

/** Spawns the instance's process and records its identity with state `running` (one transaction each step). */
export async function spawnInstance(ctx: NodeContext, row: InstanceRow): Promise<ProcessIdentity> {
  const { store, runtime, o } = ctx;
  store.commit((tx) => {
    store.updateInstance(tx, row.instance_id, { state: "starting", detail: null });
    return { result: null, events: [] };
  });
  const l = row.launch;
  const workDir = runtime.workDirOf(row.instance_id);
  let program = join(workDir, l.program);
  if (l.program.startsWith("@")) {
    const interp = o.config.interpreters.find((i) => i.name === l.program.slice(1));
    if (!interp) throw new Error(`interpreter ${l.program.slice(1)} is not declared`);
    program = interp.path;
  }
  // Issue 12: a clean slate, never the daemon's environment: the placement's declared values first (loader and
  // interpreter hooks dropped again, for rows written before the surface existed), then the provisioned secrets,
  // then the host contract, which nothing before it can override.
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(l.env)) if (!isLoaderHook(name)) env[name] = value;
  if (!("LANG" in env)) env.LANG = "C.UTF-8";
  for (const secret of l.secrets) env[secret] = readFileSync(join(o.dataDir, "secrets", secret), "utf8").replace(/\n$/, "");
  Object.assign(env, {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    // Issue 15: $HOME is the agent's workspace, kept per name outside the instance directory (workspace.ts).
    HOME: ensureWorkspace(o.dataDir, row.name),
    TMPDIR: join(runtime.dirOf(row.instance_id), "tmp"),
    BERTH_INSTANCE_ID: row.instance_id,
    BERTH_NAME: row.name,
    BERTH_NODE_ID: ctx.nodeId,
    BERTH_DECISION_ID: row.decision_id,
    BERTH_PACKAGE_ID: row.package_id,
  });
  let identity: ProcessIdentity;
  try {
    identity = await runtime.start(row.instance_id, { program, args: l.args, env });
  } catch (error) {
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { state: "failed", detail: `spawn failed: ${(error as Error).message}` });
      return { result: null, events: [runtimeEvent("workload.start", row, { outcome: "error", error: truncateUtf8((error as Error).message, 512) })] };
    });
    throw new Error(`spawn failed: ${(error as Error).message}`);
  }
  const generation = (store.instance(row.instance_id)?.generation ?? 0) + 1;
  store.commit((tx) => {
    store.updateInstance(tx, row.instance_id, {
      state: "running",
      pid: identity.pid,
      host_boot_id: identity.host_boot_id,
      start_marker: identity.start_marker,
      started_ms: o.clock(),
      exit_code: null,
      signal: null,
      detail: null,
      generation,
    });
    return { result: null, events: [runtimeEvent("workload.start", row, { outcome: "ok", pid: identity.pid, generation })] };
  });
  return identity;
}

export interface StopResult {
  readonly stopped: boolean;
  readonly already: boolean;
  readonly exit_code: number | null;
  readonly signal: string | null;
}

/** Stops a running instance's group; records state `stopped` with the chain event. */
export async function stopInstance(ctx: NodeContext, row: InstanceRow, graceMs: number, kind: string, decisionId: string | null): Promise<StopResult> {
  const { store, runtime } = ctx;
  const identity = identityOf(row);
  // Issue 21 case 5: whatever the row's state, a live member of the instance's group is stopped too.
  if (!identity || !instanceAlive(identity)) {
    return { stopped: true, already: true, exit_code: row.exit_code, signal: row.signal };
  }
  ctx.stopping.add(row.instance_id);
  try {
    const stopped = await runtime.stop(identity, graceMs);
    if (!stopped.stopped) return { stopped: false, already: false, exit_code: null, signal: stopped.signal };
    const status = runtime.exitStatus(row.instance_id);
    const exitCode = status?.exit_code ?? null;
    const signal = status?.signal ?? stopped.signal;
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { state: "stopped", exit_code: exitCode, signal, detail: null });
      return {
        result: null,
        events: [runtimeEvent(kind, row, { outcome: "ok", exit_code: exitCode, signal, ...(decisionId ? { decision_id: decisionId } : {}) })],
      };
    });
    return { stopped: true, already: false, exit_code: exitCode, signal };
  } finally {
    ctx.stopping.delete(row.instance_id);
  }
}

export function recordExit(
  ctx: NodeContext,
  row: InstanceRow,
  exitCode: number | null,
  signal: string | null,
  detail: string,
  state: "exited" | "lost" = "exited",
): void {
  ctx.store.commit((tx) => {
    ctx.store.updateInstance(tx, row.instance_id, { state, exit_code: exitCode, signal, detail });
    return {
      result: null,
      events: [
        {
          source: "runtime",
          kind: "workload.exit",
          payload: { instance_id: row.instance_id, exit_code: exitCode, signal, runtime_ms: row.started_ms ? Math.max(0, ctx.o.clock() - row.started_ms) : 0 },
        },
      ],
    };
  });
  // Issue 15: the restart policy decides what comes next (supervisor.ts).
  ctx.supervision.ended(row.instance_id);
}

/** A process the daemon spawned ended; re-adopted processes are found by `pollAdopted`. */
export function onProcessExit(ctx: NodeContext, instanceId: string, exit: { code: number | null; signal: string | null }): void {
  if (ctx.stopping.has(instanceId)) return;
  // A child can end after the daemon closed its store (shutdown, or a test tearing a node down): nothing may be
  // written then, and the next start re-adopts or records it from the process table (spec/mesh.md §14.3).
  if (!ctx.store.db.open) return;
  const row = ctx.store.instance(instanceId);
  if (!row || !isLive(row.state)) return;
  // Issue 21 case 4: the leader exited but its group still runs; the instance is alive, and `pollAdopted` (it is no
  // longer our child) records the exit once the last member is gone.
  const identity = identityOf(row);
  if (identity && instanceAlive(identity)) {
    ctx.store.commit((tx) => {
      ctx.store.updateInstance(tx, row.instance_id, { detail: GROUP_OUTLIVES_LEADER });
      return {
        result: null,
        events: [{ source: "runtime", kind: "workload.lifecycle", payload: { phase: "group", instance_id: row.instance_id, from: "running", to: "running", reason: GROUP_OUTLIVES_LEADER } }],
      };
    });
    return;
  }
  const status = ctx.runtime.exitStatus(instanceId);
  recordExit(ctx, row, status?.exit_code ?? exit.code, status?.signal ?? exit.signal, "process exited");
}

/** Instances re-adopted after a restart are not our children: poll their identity. */
export function pollAdopted(ctx: NodeContext): void {
  for (const row of ctx.store.instances()) {
    if (!isLive(row.state) || ctx.runtime.isChild(row.instance_id) || ctx.stopping.has(row.instance_id)) continue;
    const probe = ctx.runtime.probe(row.instance_id, identityOf(row));
    if (probe.state === "exited") recordExit(ctx, row, probe.exit_code, probe.signal, probe.detail);
    else if (probe.state === "lost") recordExit(ctx, row, null, null, probe.detail, "lost");
  }
}

/** §13: trim every instance's logs over 1 MiB to the last 64 KiB (the daemon calls this every 10 s). */
export function trimAllLogs(ctx: NodeContext): void {
  for (const row of ctx.store.instances()) ctx.runtime.trimLogs(row.instance_id);
}
