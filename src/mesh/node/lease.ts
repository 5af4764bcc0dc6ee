/**
 * The node's side of the lease (spec/mesh.md §15, issue 16; the argument is docs/concepts.md "The node lease"), opt-in
 * with `lease_ms` in node.json. For each controller, a deadline on the node's clock:
 *
 * - every request that passed verification renews its sender's deadline to `min(issued_at, now) + lease_ms`
 *   (`judgeRenewal`); one that arrives after that deadline is refused `expired` before anything runs, so a request held
 *   in the network past the lease cannot revive it (`admit`, called by the service before dispatch);
 * - every `LEASE_CHECK_MS`, and once at boot before anything is served, each controller whose deadline has passed has
 *   every live instance it placed stopped with a 2 s grace, marked `lease_stopped` and chained
 *   `workload.lifecycle {phase: "lease"}` in the same transaction (`check`). Nothing restarts it here: the controller
 *   does, with a chained `start`, once it is in contact again.
 *
 * Deadlines are kept in `node_meta` so a restarted daemon enforces the leases its predecessor granted; they are
 * written when they move by more than a second, so a restart may stop up to a second early, never late.
 */
import {
  initialDeadline,
  judgeRenewal,
  LEASE_STOP_GRACE_MS,
  leaseExpired,
  renewedDeadline,
} from "../../core/mesh/lease.js";
import { type NodeContext, Refusal } from "./context.js";
import { isDiskFull } from "./disk-reserve.js";
import { identityOf } from "./processes.js";
import type { InstanceRow } from "./store.js";

const META_KEY = "lease_deadlines";
/** A deadline is persisted again once it has moved this far past the persisted one. */
const PERSIST_STEP_MS = 1_000;
/** States whose process may be alive: the ones a lease stop concerns. */
// Issue 15: an unhealthy instance still runs (supervisor.ts); one in a restart backoff is held by the supervisor.
const LIVE_STATES: ReadonlySet<string> = new Set(["running", "starting", "unhealthy"]);

export class NodeLeases {
  private readonly deadlines = new Map<string, number>();
  private persisted = new Map<string, number>();
  private checking: Promise<number> | null = null;
  /** Lease stops carried out whose record could not be written yet (issue 37 finding B), by instance. */
  private readonly unrecorded = new Map<string, () => void>();

  constructor(
    private readonly ctx: NodeContext,
    readonly leaseMs: number,
  ) {
    const raw = ctx.store.meta(META_KEY);
    if (raw !== undefined) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed && typeof parsed === "object") {
          for (const [controller, deadline] of Object.entries(parsed))
            if (typeof deadline === "number") this.deadlines.set(controller, deadline);
        }
      } catch {
        // A damaged record keeps nothing: every controller gets a fresh lease from boot (initialDeadline), which a
        // controller can only rely on after a describe of this boot.
      }
    }
    this.persisted = new Map(this.deadlines);
  }

  /** Hands the deadline to every spawn (the watchdog's file) and keeps the live instances' files current. */
  attach(): void {
    this.ctx.leaseDeadlineOf = (controller) => this.deadlineOf(controller);
  }

  /** The deadline of a controller's lease, as the node enforces it. */
  deadlineOf(controller: string): number {
    const known = this.deadlines.get(controller);
    if (known !== undefined) return known;
    const fresh = initialDeadline(this.ctx.o.clock(), this.leaseMs);
    this.deadlines.set(controller, fresh);
    return fresh;
  }

  /** Renews the sender's lease for one verified request, or refuses it (`expired`) if it arrived too late. */
  admit(requester: string, issuedAtMs: number): void {
    const now = this.ctx.o.clock();
    const verdict = judgeRenewal(issuedAtMs, now, this.leaseMs);
    if (verdict.kind === "late") throw new Refusal("expired", verdict.reason);
    const next = renewedDeadline(this.deadlines.get(requester) ?? null, verdict);
    if (next === null) return;
    // Issue 37 finding B: the deadline the daemon enforces moves only once it is on disk (node_meta) past the persist
    // step. A renewal that cannot be written (a full disk) renews nothing and is refused, so the daemon, a restarted
    // daemon and the watchdogs never disagree about when the lease ends.
    if (next - (this.persisted.get(requester) ?? Number.NEGATIVE_INFINITY) >= PERSIST_STEP_MS) {
      try {
        this.persist(new Map(this.deadlines).set(requester, next));
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        throw new Refusal(
          "disk_full",
          `the node's disk is full: the lease of controller ${requester} could not be renewed on disk, so it was not renewed and nothing ran; its deadline stays ${this.deadlines.get(requester) ?? "unset"}`,
        );
      }
    }
    this.deadlines.set(requester, next);
  }

  /** Stops what every expired lease covers; one check at a time. Resolves to the number of instances stopped. */
  check(): Promise<number> {
    if (!this.checking) {
      this.checking = this.stopExpired().finally(() => {
        this.checking = null;
      });
    }
    return this.checking;
  }

  private async stopExpired(): Promise<number> {
    const now = this.ctx.o.clock();
    let stopped = 0;
    // Lease stops carried out whose record could not be written (a full disk): recorded first, whatever the lease is now.
    for (const [id, record] of this.unrecorded) {
      try {
        record();
        this.unrecorded.delete(id);
        this.ctx.stopping.delete(id);
        stopped++;
      } catch {
        // still no room; the instance stays marked stopping, so no exit is recorded for it meanwhile
      }
    }
    for (const row of this.ctx.store.instances()) {
      if (!LIVE_STATES.has(row.state) || this.ctx.stopping.has(row.instance_id)) continue;
      if (!leaseExpired(this.deadlineOf(row.requester), now)) continue;
      if (await this.leaseStop(row, this.deadlineOf(row.requester))) stopped++;
    }
    return stopped;
  }

  private async leaseStop(row: InstanceRow, deadline: number): Promise<boolean> {
    const { store, runtime } = this.ctx;
    const identity = identityOf(row);
    const reason = `no valid request from controller ${row.requester} since its lease ran out at ${deadline} (lease_ms ${this.leaseMs})`;
    this.ctx.stopping.add(row.instance_id);
    let pending = false;
    try {
      let exitCode: number | null = row.exit_code;
      let signal: string | null = row.signal;
      if (runtime.alive(row.instance_id, identity)) {
        const result = await runtime.stop(row.instance_id, identity, LEASE_STOP_GRACE_MS);
        if (!result.stopped) return false; // tried again at the next check; never marked stopped while it runs
        const status = runtime.exitStatus(row.instance_id);
        exitCode = status?.exit_code ?? null;
        signal = status?.signal ?? result.signal;
      }
      const record = () =>
        store.commit((tx) => {
          store.updateInstance(tx, row.instance_id, {
            state: "lease_stopped",
            exit_code: exitCode,
            signal,
            detail: reason,
          });
          return {
            result: null,
            events: [
              {
                source: "node",
                kind: "workload.lifecycle",
                payload: {
                  phase: "lease",
                  instance_id: row.instance_id,
                  decision_id: row.decision_id,
                  from: row.state,
                  to: "lease_stopped",
                  reason,
                  controller: row.requester,
                },
              },
            ],
          };
        });
      try {
        record();
      } catch (error) {
        // Issue 37 finding B: stopped but not recorded (a full disk). Kept, and recorded as this lease stop at the next
        // check that can write; until then the instance stays `stopping`, so its exit is not recorded as anything else.
        this.unrecorded.set(row.instance_id, record);
        pending = true;
        this.ctx.log.warn(
          { instance_id: row.instance_id, err: (error as Error).message },
          "lease stop carried out; its record is kept until it can be written",
        );
      }
      return true;
    } finally {
      if (!pending) this.ctx.stopping.delete(row.instance_id);
    }
  }

  /** Writes `deadlines` to node_meta, then the watchdogs' files; throws (nothing moved) when node_meta cannot be written. */
  private persist(deadlines: ReadonlyMap<string, number>): void {
    const snapshot = Object.fromEntries(deadlines);
    this.ctx.store.commit((tx) => {
      this.ctx.store.setMeta(tx, META_KEY, JSON.stringify(snapshot));
      return { result: null, events: [] };
    });
    this.persisted = new Map(deadlines);
    // The watchdogs' files move with the persisted deadlines (a step of a second at most, rounded down by the file).
    // One that cannot be written keeps its earlier deadline: that watchdog may stop its instance early, never late.
    for (const row of this.ctx.store.instances()) {
      if (!LIVE_STATES.has(row.state)) continue;
      const deadline = deadlines.get(row.requester);
      if (deadline === undefined) continue;
      try {
        this.ctx.runtime.writeLeaseDeadline(row.instance_id, deadline);
      } catch (error) {
        this.ctx.log.warn(
          { instance_id: row.instance_id, err: (error as Error).message },
          "the watchdog's lease deadline could not be moved",
        );
      }
    }
  }
}
