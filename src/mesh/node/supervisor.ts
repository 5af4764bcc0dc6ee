/**
 * Supervision on the node (issue 15, spec/mesh.md §15): keeps instances alive per their restart policy without a
 * controller, so it works through partitions. The decisions are core/node/restart-policy.ts and health-check.ts; this
 * is the shell that reads the clock, runs timers and health checks, and restarts.
 *
 *   exit recorded (processes.ts) ─▶ ended ─▶ decideRestart ─▶ finished │ exited │ failed │ backoff ─timer─▶ restart
 *   health tick ─▶ health.ts ─▶ misses in a row ─▶ unhealthy ─▶ (policy ≠ never) stop the group ─▶ decideRestart
 *   daemon start ─▶ tick: exits recorded while the daemon was down are decided; a pending backoff is resumed
 *
 * Structural rules:
 * - a restart happens in place: same instance id, same workspace (workspace.ts), a new generation (spawnInstance), so
 *   a fence taken before it still refuses; each step is chained `workload.lifecycle {phase: "supervise"}`;
 * - a restart spawns only from `backoff`, re-read when its timer fires, and only once the old group has no member
 *   left (an exit is recorded only then), so there is never more than one live process group for an instance;
 * - one step at a time per instance (`serial`): an operator verb first `quiesce`s, which cancels a pending restart and
 *   waits out one in progress, so a stop through berth is final and is never followed by a restart;
 * - `failed` and `stopped` are never left automatically; an operator start clears the budget.
 */
import {
  describeEnd,
  type RestartDecision,
  decideRestart,
  pruneRestarts,
  type RunEnd,
} from "../../core/node/restart-policy.js";
import { leaseExpired } from "../../core/mesh/lease.js";
import type { HealthVerdict } from "../../core/node/health-check.js";
import { truncateUtf8 } from "../../core/protocol/messages.js";
import type { NodeContext, SupervisionHooks } from "./context.js";
import { HealthChecks } from "./health.js";
import { identityOf, spawnInstance } from "./processes.js";
import { type InstanceRow, type InstanceState, isLive } from "./store.js";
import { SupervisionStore } from "./supervisor-store.js";

/** How often the supervisor looks at every instance (health checks due, backoffs to resume, exits to decide). */
export const SUPERVISE_TICK_MS = 1000;
const UNHEALTHY_GRACE_MS = 2000;

export class Supervisor implements SupervisionHooks {
  readonly records: SupervisionStore;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly busy = new Map<string, Promise<void>>();
  private readonly health: HealthChecks;
  private ticker: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly ctx: NodeContext) {
    this.records = new SupervisionStore(ctx.store.db);
    this.health = new HealthChecks(ctx, (id, verdict, generation) => this.onHealth(id, verdict, generation));
  }

  /** After the daemon's recovery (§14.3): forget departed instances, decide what died meanwhile, then tick. */
  start(tickMs = SUPERVISE_TICK_MS): void {
    this.records.dropDeparted();
    this.tick();
    this.ticker = setInterval(() => this.tick(), tickMs);
    this.ticker.unref();
  }

  close(): void {
    this.closed = true;
    if (this.ticker) clearInterval(this.ticker);
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  // -- hooks (context.ts) ----------------------------------------------------------------------------------------

  ended(instanceId: string): void {
    this.serial(instanceId, async () => this.decideEnded(instanceId));
  }

  async quiesce(instanceId: string): Promise<void> {
    for (;;) {
      this.cancel(instanceId);
      const pending = this.busy.get(instanceId);
      if (pending === undefined) break;
      await pending;
    }
    this.cancel(instanceId);
  }

  operatorStarted(instanceId: string): void {
    this.ctx.store.commit((tx) => {
      this.records.reset(tx, instanceId);
      return { result: null, events: [] };
    });
  }

  restartCounts(): ReadonlyMap<string, number> {
    return this.records.counts();
  }

  // -- the loop --------------------------------------------------------------------------------------------------

  /** One look at every instance: due health checks, backoffs without a timer (a daemon restart), undecided exits. */
  tick(): void {
    if (this.closed || !this.ctx.store.db.open) return;
    const rows = this.ctx.store.instances();
    this.health.tick(rows, this.ctx.o.clock());
    for (const row of rows) {
      const id = row.instance_id;
      if (this.busy.has(id) || this.timers.has(id) || this.ctx.stopping.has(id)) continue;
      if (row.state === "backoff")
        this.schedule(id, Math.max(0, (this.records.get(id).next_restart_ms ?? 0) - this.ctx.o.clock()));
      else if ((row.state === "exited" || row.state === "lost") && (row.launch.restart ?? "never") !== "never")
        this.ended(id);
      else if (row.state === "loaded" && this.records.get(id).next_restart_ms !== null) this.interruptedRestart(row);
    }
  }

  /** Runs `step` after any earlier step for the same instance; a failing step is logged in the row, never thrown. */
  private serial(instanceId: string, step: () => Promise<void>): void {
    const previous = this.busy.get(instanceId) ?? Promise.resolve();
    const next = previous
      .then(() => (this.closed || !this.ctx.store.db.open ? undefined : step()))
      .catch((error: unknown) => {
        if (!this.ctx.store.db.open) return;
        this.ctx.store.commit((tx) => {
          this.ctx.store.updateInstance(tx, instanceId, {
            detail: truncateUtf8(`supervisor: ${(error as Error).message}`, 1024),
          });
          return { result: null, events: [] };
        });
      })
      .finally(() => {
        if (this.busy.get(instanceId) === next) this.busy.delete(instanceId);
      });
    this.busy.set(instanceId, next);
  }

  private cancel(instanceId: string): void {
    const timer = this.timers.get(instanceId);
    if (timer) clearTimeout(timer);
    this.timers.delete(instanceId);
  }

  private schedule(instanceId: string, delayMs: number): void {
    this.cancel(instanceId);
    const timer = setTimeout(() => {
      this.timers.delete(instanceId);
      this.serial(instanceId, () => this.restart(instanceId));
    }, delayMs);
    timer.unref();
    this.timers.set(instanceId, timer);
  }

  // -- steps -----------------------------------------------------------------------------------------------------

  private decideEnded(instanceId: string): void {
    const row = this.ctx.store.instance(instanceId);
    if (!row || (row.state !== "exited" && row.state !== "lost") || this.ctx.stopping.has(instanceId)) return;
    const end: RunEnd =
      row.state === "lost"
        ? { kind: "lost", detail: row.detail ?? "lost" }
        : { kind: "exited", exitCode: row.exit_code, signal: row.signal };
    this.apply(row, end);
  }

  /** Commits the policy's decision for a run that ended (`row.state` is where it ended: exited, lost, unhealthy). */
  private apply(row: InstanceRow, end: RunEnd): void {
    const now = this.ctx.o.clock();
    const record = this.records.get(row.instance_id);
    const restartsMs = pruneRestarts(record.restarts_ms, now);
    const d: RestartDecision = decideRestart({
      policy: row.launch.restart ?? "never",
      mode: row.launch.mode,
      end,
      restartsMs,
      nowMs: now,
    });
    const to: InstanceState = d.kind === "final" ? d.state : d.kind === "failed" ? "failed" : "backoff";
    if (to === row.state) return;
    this.ctx.store.commit((tx) => {
      this.ctx.store.updateInstance(tx, row.instance_id, { state: to, detail: truncateUtf8(d.reason, 1024) });
      this.records.put(tx, {
        ...record,
        restarts_ms: restartsMs,
        next_restart_ms: d.kind === "restart" ? d.atMs : null,
        reason: d.kind === "restart" ? d.reason : null,
      });
      return {
        result: null,
        events: [
          lifecycle(
            row,
            row.state,
            to,
            d.reason,
            d.kind === "restart" ? { delay_ms: d.delayMs, attempt: d.attempt } : {},
          ),
        ],
      };
    });
    if (d.kind === "restart") this.schedule(row.instance_id, d.delayMs);
  }

  /** The backoff is over: start the same instance again (new generation, same id and workspace). */
  private async restart(instanceId: string): Promise<void> {
    const row = this.ctx.store.instance(instanceId);
    if (row?.state !== "backoff") return; // stopped, started or unloaded meanwhile
    const now = this.ctx.o.clock();
    // Issue 16: under a lease that ran out, the node runs nothing of that controller's; the controller starts it again.
    const deadline = this.ctx.leaseDeadlineOf?.(row.requester);
    if (deadline !== undefined && leaseExpired(deadline, now)) {
      this.ctx.store.commit((tx) => {
        this.ctx.store.updateInstance(tx, instanceId, {
          state: "lease_stopped",
          detail: `not restarted: controller ${row.requester}'s lease ran out at ${deadline}`,
        });
        this.records.put(tx, { ...this.records.get(instanceId), next_restart_ms: null, reason: null });
        return {
          result: null,
          events: [
            lifecycle(
              row,
              "backoff",
              "lease_stopped",
              `not restarted: controller ${row.requester}'s lease ran out`,
              {},
            ),
          ],
        };
      });
      return;
    }
    const record = this.records.get(instanceId);
    const reason = record.reason ?? "restart";
    this.ctx.store.commit((tx) => {
      this.records.put(tx, {
        ...record,
        restarts_ms: [...pruneRestarts(record.restarts_ms, now), now],
        restart_count: record.restart_count + 1,
      });
      return { result: null, events: [] };
    });
    try {
      await spawnInstance(this.ctx, row);
    } catch (error) {
      // spawnInstance recorded `failed` with its workload.start error; the supervisor's step says why it stops here.
      this.ctx.store.commit((tx) => {
        this.records.put(tx, { ...this.records.get(instanceId), next_restart_ms: null, reason: null });
        return {
          result: null,
          events: [
            lifecycle(
              row,
              "backoff",
              "failed",
              truncateUtf8(`${reason}; the restart failed: ${(error as Error).message}`, 1024),
              {},
            ),
          ],
        };
      });
      return;
    }
    const started = this.ctx.store.instance(instanceId);
    this.ctx.store.commit((tx) => {
      this.records.put(tx, { ...this.records.get(instanceId), next_restart_ms: null, reason: null });
      return {
        result: null,
        events: [
          lifecycle(row, "backoff", started?.state ?? "running", reason, {
            generation: started?.generation ?? row.generation + 1,
          }),
        ],
      };
    });
  }

  /** The daemon stopped between granting a restart and recording its process: grant it again, in place. */
  private interruptedRestart(row: InstanceRow): void {
    this.ctx.store.commit((tx) => {
      this.ctx.store.updateInstance(tx, row.instance_id, { state: "backoff" });
      return {
        result: null,
        events: [lifecycle(row, "loaded", "backoff", "restart interrupted by a node restart; granted again", {})],
      };
    });
    this.schedule(row.instance_id, 0);
  }

  private onHealth(instanceId: string, verdict: HealthVerdict, generation: number): void {
    this.serial(instanceId, async () => {
      const row = this.ctx.store.instance(instanceId);
      if (!row || row.generation !== generation || !isLive(row.state) || this.ctx.stopping.has(instanceId)) return;
      if (verdict.kind === "healthy") {
        if (row.state === "unhealthy") this.transition(row, "running", "health check passed again");
        return;
      }
      if (verdict.kind === "missed") return;
      const end: RunEnd = { kind: "unhealthy", misses: verdict.misses, lastError: verdict.error };
      if (row.state === "running") this.transition(row, "unhealthy", describeEnd(end));
      // Under `never` an unhealthy process is reported, not touched: the operator decides.
      if ((row.launch.restart ?? "never") === "never") return;
      this.ctx.stopping.add(instanceId);
      try {
        const stopped = await this.ctx.runtime.stop(instanceId, identityOf(row), UNHEALTHY_GRACE_MS);
        if (!stopped.stopped) throw new Error("the unhealthy instance's group did not exit after SIGKILL");
      } finally {
        this.ctx.stopping.delete(instanceId);
      }
      const now = this.ctx.store.instance(instanceId);
      if (now?.state === "unhealthy") this.apply(now, end);
    });
  }

  private transition(row: InstanceRow, to: InstanceState, reason: string): void {
    this.ctx.store.commit((tx) => {
      this.ctx.store.updateInstance(tx, row.instance_id, {
        state: to,
        detail: to === "running" ? null : truncateUtf8(reason, 1024),
      });
      return { result: null, events: [lifecycle(row, row.state, to, reason, {})] };
    });
  }
}

function lifecycle(row: InstanceRow, from: string, to: string, reason: string, extra: Record<string, number>) {
  return {
    source: "node",
    kind: "workload.lifecycle",
    payload: { phase: "supervise", instance_id: row.instance_id, from, to, reason, ...extra },
  };
}
