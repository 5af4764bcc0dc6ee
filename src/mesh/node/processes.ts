/**
 * The node's process handling (spec/mesh.md §11.2, §13, §14.3): spawning an instance's entry with its launch
 * environment, stopping its group, and recording exits, whether the daemon saw them (its own children) or found them
 * by probing a re-adopted process. Every state change commits with its chain event.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { EventDraft } from "../../core/chain/event.js";
import { isLoaderHook } from "../../core/packages/loader-hooks.js";
import { truncateUtf8 } from "../../core/protocol/messages.js";
import type { WriteTx } from "../../store/sqlite.js";
import type { NodeContext } from "./context.js";
import { isDiskFull } from "./disk-reserve.js";
import { runtimeEvent } from "./events.js";
import { hostBootId, type ProcessIdentity, sameProcess } from "./runtime.js";
import { type InstanceRow, isLive } from "./store.js";
import { ensureWorkspace } from "./workspace.js";

/** The detail of an instance whose group leader (the wrapper) was killed: what it left behind was ended too. */
export const LEADER_KILLED =
  "the group leader was killed; the processes it left behind were ended (nothing an agent forks outlives it)";

export function identityOf(row: InstanceRow): ProcessIdentity | null {
  return row.pid !== null && row.host_boot_id !== null && row.start_marker !== null
    ? { pid: row.pid, host_boot_id: row.host_boot_id, start_marker: row.start_marker }
    : null;
}

/**
 * How a caller folds its own steps into the start's transactions (issue 19: one `place` commits fewer times, each
 * state still with its chain event): `startingCommitted` when the caller already wrote state `starting` in its own
 * transaction; `alsoOnRunning` runs inside the transaction that records `running`, and returns the events to chain
 * with it.
 */
export interface StartGrouping {
  readonly startingCommitted?: boolean;
  readonly alsoOnRunning?: (tx: WriteTx) => EventDraft[];
}

/** Spawns the instance's process and records its identity with state `running` (one transaction each step). */
export async function spawnInstance(
  ctx: NodeContext,
  row: InstanceRow,
  grouping: StartGrouping = {},
): Promise<ProcessIdentity> {
  const { store, runtime, o } = ctx;
  if (!grouping.startingCommitted) {
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { state: "starting", detail: null });
      return { result: null, events: [] };
    });
  }
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
  for (const secret of l.secrets)
    env[secret] = readFileSync(join(o.dataDir, "secrets", secret), "utf8").replace(/\n$/, "");
  Object.assign(env, {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    // Issue 15: $HOME is the agent's workspace, kept per name outside the instance directory (workspace.ts).
    HOME: ensureWorkspace(
      o.dataDir,
      row.name,
      runtime.confinement.agent.kind === "unprivileged" ? runtime.confinement.agent : null,
    ),
    TMPDIR: join(runtime.dirOf(row.instance_id), "tmp"),
    BERTH_INSTANCE_ID: row.instance_id,
    BERTH_NAME: row.name,
    BERTH_NODE_ID: ctx.nodeId,
    BERTH_DECISION_ID: row.decision_id,
    BERTH_PACKAGE_ID: row.package_id,
  });
  // Issue 16: on a leased node the watchdog needs its deadline before the group exists (runtime.ts WRAPPER).
  if (ctx.leaseDeadlineOf) runtime.writeLeaseDeadline(row.instance_id, ctx.leaseDeadlineOf(row.requester));
  let identity: ProcessIdentity;
  try {
    identity = await runtime.start(row.instance_id, {
      program,
      args: l.args,
      env,
      network: l.network,
      memory_mb: l.memory_mb,
    });
  } catch (error) {
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, {
        state: "failed",
        detail: `spawn failed: ${(error as Error).message}`,
      });
      return {
        result: null,
        events: [
          runtimeEvent("workload.start", row, { outcome: "error", error: truncateUtf8((error as Error).message, 512) }),
        ],
      };
    });
    ctx.log.warn(
      { instance_id: row.instance_id, name: row.name, error: (error as Error).message },
      "instance start failed",
    );
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
    const also = grouping.alsoOnRunning?.(tx) ?? [];
    return {
      result: null,
      events: [runtimeEvent("workload.start", row, { outcome: "ok", pid: identity.pid, generation }), ...also],
    };
  });
  ctx.log.info(
    {
      instance_id: row.instance_id,
      name: row.name,
      pid: identity.pid,
      generation,
      containment: runtime.confinement.plan.kind,
    },
    "instance started",
  );
  return identity;
}

export interface StopResult {
  readonly stopped: boolean;
  readonly already: boolean;
  readonly exit_code: number | null;
  readonly signal: string | null;
}

/** Stops a running instance's group; records state `stopped` with the chain event. */
export async function stopInstance(
  ctx: NodeContext,
  row: InstanceRow,
  graceMs: number,
  kind: string,
  decisionId: string | null,
): Promise<StopResult> {
  const { store, runtime } = ctx;
  const identity = identityOf(row);
  // Issue 21 case 5: whatever the row's state, a live member of the instance's group (or cgroup) is stopped too.
  if (!runtime.alive(row.instance_id, identity)) {
    return { stopped: true, already: true, exit_code: row.exit_code, signal: row.signal };
  }
  ctx.stopping.add(row.instance_id);
  try {
    const stopped = await runtime.stop(row.instance_id, identity, graceMs);
    if (!stopped.stopped) return { stopped: false, already: false, exit_code: null, signal: stopped.signal };
    const status = runtime.exitStatus(row.instance_id);
    const exitCode = status?.exit_code ?? null;
    const signal = status?.signal ?? stopped.signal;
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { state: "stopped", exit_code: exitCode, signal, detail: null });
      return {
        result: null,
        events: [
          runtimeEvent(kind, row, {
            outcome: "ok",
            exit_code: exitCode,
            signal,
            ...(decisionId ? { decision_id: decisionId } : {}),
          }),
        ],
      };
    });
    ctx.log.info(
      { instance_id: row.instance_id, name: row.name, exit_code: exitCode, signal, kind },
      "instance stopped",
    );
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
  // Issue 15: an instance the kernel ended for its memory limit is reported as such, not as a bare SIGKILL.
  const memoryLimit = state === "exited" && ctx.runtime.memoryKilled(row.instance_id);
  const why = memoryLimit ? `killed by the kernel: over its memory limit of ${row.launch.memory_mb} MiB` : detail;
  ctx.store.commit((tx) => {
    ctx.store.updateInstance(tx, row.instance_id, { state, exit_code: exitCode, signal, detail: why });
    return {
      result: null,
      events: [
        {
          source: "runtime",
          kind: "workload.exit",
          payload: {
            instance_id: row.instance_id,
            exit_code: exitCode,
            signal,
            runtime_ms: row.started_ms ? Math.max(0, ctx.o.clock() - row.started_ms) : 0,
            ...(memoryLimit ? { reason: "memory_limit", memory_mb: row.launch.memory_mb } : {}),
          },
        },
      ],
    };
  });
  ctx.log.info(
    { instance_id: row.instance_id, name: row.name, exit_code: exitCode, signal, state, detail: why },
    "instance exited",
  );
  // Issue 15: the restart policy decides what comes next (supervisor.ts).
  ctx.supervision.ended(row.instance_id);
}

/**
 * `recordExit`, for the callers no one awaits (the exit listener, the reaper, the poll): an exit that cannot be written
 * (issue 37 finding B: a full disk threw SQLITE_FULL out of the exit listener and ended the daemon) leaves the row
 * live, and `pollAdopted` finds the process gone and records it at its next round that can write. Never throws.
 */
function recordExitLater(
  ctx: NodeContext,
  row: InstanceRow,
  exitCode: number | null,
  signal: string | null,
  detail: string,
  state: "exited" | "lost" = "exited",
): void {
  try {
    recordExit(ctx, row, exitCode, signal, detail, state);
  } catch (error) {
    const full = isDiskFull(error);
    ctx.log[full ? "warn" : "error"](
      { instance_id: row.instance_id, err: (error as Error).message },
      "the instance's exit could not be recorded; tried again at the next poll",
    );
  }
}

/** A process the daemon spawned ended; re-adopted processes are found by `pollAdopted`. */
export function onProcessExit(
  ctx: NodeContext,
  instanceId: string,
  exit: { code: number | null; signal: string | null },
): void {
  if (ctx.stopping.has(instanceId)) return;
  // A child can end after the daemon closed its store (shutdown, or a test tearing a node down): nothing may be
  // written then, and the next start re-adopts or records it from the process table (spec/mesh.md §14.3).
  if (!ctx.store.db.open) return;
  const row = ctx.store.instance(instanceId);
  // Issue 15: an unhealthy instance still runs; its exit is recorded as a running one's.
  if (!row || !isLive(row.state)) return;
  const identity = identityOf(row);
  // Issue 15: processes of the instance outlive its leader (the wrapper). Either the wrapper was killed, so it could
  // not end them, or it did and one is still dying; the daemon ends them and waits: nothing an agent forks outlives it.
  if (ctx.runtime.alive(instanceId, identity)) {
    void endLeftBehind(ctx, row, identity, exit.code, exit.signal);
    return;
  }
  const status = ctx.runtime.exitStatus(instanceId);
  // The status the wrapper wrote is the entry's, whole: the wrapper then kills its own group (itself included), so the
  // child's exit signal is the wrapper's SIGKILL, not how the entry ended.
  recordExitLater(
    ctx,
    row,
    status ? status.exit_code : exit.code,
    status ? status.signal : exit.signal,
    "process exited",
  );
}

async function endLeftBehind(
  ctx: NodeContext,
  row: InstanceRow,
  identity: ProcessIdentity | null,
  code: number | null,
  signal: string | null,
): Promise<void> {
  ctx.stopping.add(row.instance_id);
  try {
    const gone = await ctx.runtime.reap(row.instance_id, identity);
    if (!ctx.store.db.open) return;
    const now = ctx.store.instance(row.instance_id);
    if (!now || !isLive(now.state) || now.generation !== row.generation) return;
    const status = ctx.runtime.exitStatus(row.instance_id);
    // A status file means the wrapper saw the entry end and was reaping what it left when the daemon looked.
    const detail = !gone
      ? "some processes the instance left behind did not end after SIGKILL"
      : status
        ? "process exited"
        : LEADER_KILLED;
    recordExitLater(ctx, now, status ? status.exit_code : code, status ? status.signal : signal, detail);
  } finally {
    ctx.stopping.delete(row.instance_id);
  }
}

/** Instances re-adopted after a restart are not our children: poll their identity. */
export function pollAdopted(ctx: NodeContext): void {
  for (const row of ctx.store.instances()) {
    if (!isLive(row.state) || ctx.runtime.isChild(row.instance_id) || ctx.stopping.has(row.instance_id)) continue;
    const identity = identityOf(row);
    // The re-adopted leader is gone while what it started still runs: end the rest, as for a child of ours.
    if (
      identity &&
      !sameProcess(identity) &&
      identity.host_boot_id === hostBootId() &&
      ctx.runtime.alive(row.instance_id, identity)
    ) {
      void endLeftBehind(ctx, row, identity, null, null);
      continue;
    }
    const probe = ctx.runtime.probe(row.instance_id, identity);
    if (probe.state === "exited") recordExitLater(ctx, row, probe.exit_code, probe.signal, probe.detail);
    else if (probe.state === "lost") recordExitLater(ctx, row, null, null, probe.detail, "lost");
  }
}

/** §13: trim every instance's logs over 1 MiB to the last 64 KiB (the daemon calls this every 10 s). */
export function trimAllLogs(ctx: NodeContext): void {
  for (const row of ctx.store.instances()) ctx.runtime.trimLogs(row.instance_id);
}
