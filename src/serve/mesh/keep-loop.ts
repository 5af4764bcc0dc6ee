/**
 * The keep loop of `berth serve` (issue 16): after each lifecycle tick, every managed placement is judged by the
 * pure `keepPlacement` (core/mesh/keep.ts) from what the store records and what the tick *verified* on its
 * node, and the one action it returns is performed through the same chained call a verb makes, attributed to the
 * loop. Level-triggered: nothing is remembered between passes but each agent's backoff and the last alert reason
 * chained for it, so a pass repeated over an unchanged world does nothing new.
 *
 * This file is the driver; what it reads and does goes through `KeepPorts`, so the driver runs the same against
 * the controller (keep-ports.ts) and against a scripted world in its tests.
 *
 * - `shouldAct()` is the leadership seam (issue 19's leader hook): a process that is not the leader observes and
 *   decides but performs nothing and chains nothing.
 * - One node status call per node per pass (every row at once), never one per instance; a node that did not give a
 *   verified answer makes every observation of its instances `unverified`. Nodes are observed and judged
 *   FAN_OUT (fan-out.ts) at a time (issue 35); the acts the judgements ask for are performed after that, ACTS_AT_ONCE
 *   agents at a time, one name's acts one after another.
 * - A row that waits for a time (a lease to run out, a silent node to be judged dead, a backoff) names it in the report
 *   (`next_due_ms`), so the shell can look again then instead of at its next tick.
 * - Backoff per agent: a failed action waits 10 s, doubling to 300 s (core/mesh/reschedule.ts `backoffMs`); a success
 *   clears it.
 * - One chained alert per distinct reason per agent (`chainsAlert`); a repeat of the same reason is counted only.
 */
import {
  type AlertReason,
  type InstanceObservation,
  type NodeView,
  type PlacementView,
  type KeepAction,
  keepPlacement,
} from "../../core/mesh/keep.js";
import { type ObservedInstance, observedInstanceOf } from "../../core/mesh/instance-observation.js";
import { backoffMs, chainsAlert } from "../../core/mesh/reschedule.js";
import { FAN_OUT, fanOut } from "../../mesh/controller/fan-out.js";
import type { Result } from "../../kit/result.js";

/** One node's rows as a verified status answer listed them, or why there is none. */
export type NodeRows =
  | {
      readonly kind: "answered";
      readonly rows: ReadonlyArray<{
        readonly instance_id: string;
        readonly state: string;
        readonly generation: number | null;
        /** Issue 35: what the lists show of the instance (stored by `recordObservations`); absent from a scripted world. */
        readonly restarts?: number;
        readonly pid?: number | null;
        readonly started_ms?: number | null;
      }>;
    }
  | { readonly kind: "unverified"; readonly why: string };

/** An acting row performed, or why it failed (one failed attempt: backed off, chained once per distinct reason). */
export type ActionResult = Result<void>;

export interface KeepPorts {
  readonly clock: () => number;
  /** The leadership seam: false → decide, never act. */
  shouldAct(): boolean;
  placements(): Promise<readonly PlacementView[]>;
  node(nodeId: string): Promise<NodeView>;
  /** One status call (every row) on the node; never throws. */
  observe(nodeId: string): Promise<NodeRows>;
  /**
   * Issue 35: what this pass's verified answers said of each placed instance, recorded in the store once per pass so
   * the lists that ask no node show it (`running (seen 4s ago)`). Not chained; a follower records nothing.
   */
  recordObservations(observations: readonly ObservedInstance[]): Promise<void>;
  /**
   * Issue 37: writes the registry record of every placement a deploy made and did not record (its process died, or
   * the store was away, between the node's start and `agent.remember`), so `berth agents` lists it and `berth agent
   * stop NAME` finds it; how many. Called by the leader once per pass, before the placements are read.
   */
  recoverRecords(): Promise<number>;
  /** Performs an acting row of the table (chained, attributed to the loop); never throws for a refusal. */
  perform(
    placement: PlacementView,
    action: Exclude<KeepAction, { kind: "none" | "wait" | "alert" }>,
  ): Promise<ActionResult>;
  /**
   * Chains one alert (`workload.lifecycle {phase: "alert"}`); for a failed act, `failed` names it and the attempt (a
   * failed move is chained as §15's `workload.refuse {phase: "reschedule"}` instead).
   */
  alert(
    placement: PlacementView,
    reason: AlertReason,
    why: string,
    failed?: { readonly action: KeepAction["kind"]; readonly attempt: number; readonly retry_ms: number },
  ): Promise<void>;
}

interface AgentMemory {
  failures: number;
  nextAttemptMs: number;
  lastAlert: string | null;
}

export interface PassReport {
  readonly judged: number;
  readonly acted: ReadonlyArray<{
    readonly instance_id: string;
    readonly action: KeepAction["kind"];
    readonly ok: boolean;
    readonly reason?: string;
  }>;
  readonly alerts: ReadonlyArray<{
    readonly instance_id: string;
    readonly reason: AlertReason;
    readonly chained: boolean;
  }>;
  readonly waiting: number;
  /**
   * Issue 35: the earliest instant a row may be acted on without anything new being observed (a lease certainly over, a
   * silent node judged dead, a failed act's backoff ended), of this pass's rows and the waits earlier passes left on
   * nodes this one did not judge; null when none waits for a time. The tick looks again then (watch.ts), asking only
   * the nodes due (`dueNodes`), instead of at its next beat, so a move is not late by up to a tick.
   */
  readonly next_due_ms: number | null;
}

/**
 * Issue 35: how many agents' acts one pass performs at once. A move is a whole placement (decision, commits, a call to
 * the new node): sixteen keep the store's one writer busy and the calls overlapped; more only queue behind the writer.
 */
export const ACTS_AT_ONCE = 16;

/** What settling one row gave the pass's report. */
interface Settled {
  readonly acted: PassReport["acted"][number] | null;
  readonly alert: PassReport["alerts"][number] | null;
  readonly waiting: boolean;
  readonly dueMs: number | null;
}

const NOTHING: Settled = { acted: null, alert: null, waiting: false, dueMs: null };

export class KeepLoop {
  private readonly memory = new Map<string, AgentMemory>();

  /** Issue 35: per node, the earliest instant one of its rows falls due, as the last pass that judged the node left it. */
  private readonly dues = new Map<string, number>();

  constructor(private readonly ports: KeepPorts) {}

  /**
   * One pass over every placement, or (`nodes`) over the placements and moved records of those nodes only: a pass a due
   * instant woke asks only the nodes whose rows fell due, not every node (issue 35: at 1,000 nodes that was seconds
   * between a lease's end and the move). Never throws for what a node answered; a port that throws is the shell's bug.
   */
  async pass(o: { readonly nodes?: ReadonlySet<string> } = {}): Promise<PassReport> {
    if (this.ports.shouldAct()) await this.ports.recoverRecords();
    const placements = await this.ports.placements();
    const byNode = new Map<string, PlacementView[]>();
    for (const p of placements) {
      if (o.nodes !== undefined && !o.nodes.has(p.node_id)) continue;
      const list = byNode.get(p.node_id);
      if (list) list.push(p);
      else byNode.set(p.node_id, [p]);
    }
    const acted: PassReport["acted"][number][] = [];
    const alerts: PassReport["alerts"][number][] = [];
    let waiting = 0;
    const act = this.ports.shouldAct();
    // Issue 35: every node is observed and its agents judged first, FAN_OUT (fan-out.ts) nodes at a time; what the
    // judgements ask for is performed after that. Judging needs only the node's own answer, its stored view and the
    // agent's backoff, none of which an act of another agent changes within the pass (an agent is judged once per pass).
    const judged = new Map<string, Array<{ readonly p: PlacementView; readonly action: KeepAction }>>();
    const observations: ObservedInstance[] = [];
    await fanOut([...byNode.keys()], FAN_OUT, async (nodeId) => {
      // The lease's rule 5 (docs/concepts.md "The node lease"): the last-sent stamp is read only once this pass's own
      // status call has ended (it was stamped before it left and, unanswered, may still have renewed the lease), and
      // the instant every agent of the node is judged at is taken before that read, so a request the read does not
      // count left after that instant. Read beside the call, with the clock read after it (and after earlier agents'
      // moves), a status held unanswered for longer than the 11 s margin was missing from a judgement made that much
      // later: the lease it renewed was taken for over.
      const rows = await this.ports.observe(nodeId);
      const now = this.ports.clock();
      if (rows.kind === "answered")
        observations.push(...observedPlacements(rows, byNode.get(nodeId) ?? [], nodeId, now));
      const node = await this.ports.node(nodeId);
      judged.set(
        nodeId,
        (byNode.get(nodeId) ?? []).map((p) => ({
          p,
          action: keepPlacement({
            placement: p,
            node,
            observed: observationOf(rows, p.instance_id),
            now_ms: now,
            next_attempt_ms: this.memory.get(p.instance_id)?.nextAttemptMs ?? 0,
          }),
        })),
      );
    });
    // One write for the whole pass's observations, before any act (an act's own changes are the next pass's to see).
    if (act) await this.ports.recordObservations(observations);
    // Issue 35: what the judgements ask for is performed ACTS_AT_ONCE agents at a time (one after another, a pass with
    // a dead node's hundred agents to move took a minute at 1,000 nodes), but one name's rows one after another in
    // node order: a moved record's old copy and the placement that replaced it share the name and are never acted on
    // together. Each row's outcome keeps its place, so the report reads in node order whatever ended first.
    const work = [...byNode.keys()].flatMap((nodeId) => judged.get(nodeId) ?? []);
    const byName = new Map<string, number[]>();
    for (const [i, { p }] of work.entries()) {
      const rows = byName.get(p.name);
      if (rows) rows.push(i);
      else byName.set(p.name, [i]);
    }
    const settled: Settled[] = new Array(work.length);
    await fanOut([...byName.values()], ACTS_AT_ONCE, async (rows) => {
      for (const i of rows) {
        const row = work[i];
        if (row) settled[i] = await this.settle(row.p, row.action, act);
      }
    });
    // What each judged node waits for now replaces what an earlier pass said of it; a full pass also drops the nodes
    // that hold nothing any more.
    if (o.nodes === undefined) this.dues.clear();
    else for (const nodeId of o.nodes) this.dues.delete(nodeId);
    for (const [i, s] of settled.entries()) {
      if (s.acted) acted.push(s.acted);
      if (s.alert) alerts.push(s.alert);
      if (s.waiting) waiting++;
      const nodeId = work[i]?.p.node_id;
      if (s.dueMs !== null && nodeId !== undefined) {
        const was = this.dues.get(nodeId);
        if (was === undefined || s.dueMs < was) this.dues.set(nodeId, s.dueMs);
      }
    }
    // Forget agents no placement records any more (moved, released): their backoff must not follow a new placement.
    const current = new Set(placements.map((p) => p.instance_id));
    for (const id of this.memory.keys()) if (!current.has(id)) this.memory.delete(id);
    return { judged: work.length, acted, alerts, waiting, next_due_ms: this.nextDueMs() };
  }

  /** The earliest instant any node's rows fall due, as the passes so far left them; null when none waits for a time. */
  nextDueMs(): number | null {
    let next: number | null = null;
    for (const due of this.dues.values()) if (next === null || due < next) next = due;
    return next;
  }

  /** The nodes whose rows are due at `nowMs`: what a pass woken then asks. */
  dueNodes(nowMs: number): Set<string> {
    return new Set([...this.dues].filter(([, due]) => due <= nowMs).map(([nodeId]) => nodeId));
  }

  /** One row's judgement carried out: its memory updated, its act or alert performed (when this process acts). */
  private async settle(p: PlacementView, action: KeepAction, act: boolean): Promise<Settled> {
    switch (action.kind) {
      case "none": {
        // Issue 35: an agent with nothing to remember has no entry (one per agent was megabytes at 50,000 agents).
        const memory = this.memory.get(p.instance_id);
        if (memory?.lastAlert === null) this.memory.delete(p.instance_id);
        else if (memory) {
          memory.failures = 0;
          memory.nextAttemptMs = 0;
        }
        return NOTHING;
      }
      case "wait":
        return { ...NOTHING, waiting: true, dueMs: action.until_ms };
      case "alert": {
        const memory = this.memoryOf(p);
        const chained = act && chainsAlert(memory.lastAlert, action.reason);
        if (chained) {
          await this.ports.alert(p, action.reason, action.why);
          memory.lastAlert = action.reason;
        }
        return { ...NOTHING, alert: { instance_id: p.instance_id, reason: action.reason, chained } };
      }
      default: {
        if (!act) return NOTHING;
        const memory = this.memoryOf(p);
        const result = await this.ports.perform(p, action);
        if (result.ok) {
          // Nothing left to remember: no failure, no backoff, no alert.
          this.memory.delete(p.instance_id);
          return { ...NOTHING, acted: { instance_id: p.instance_id, action: action.kind, ok: true } };
        }
        memory.failures++;
        memory.nextAttemptMs = this.ports.clock() + backoffMs(memory.failures);
        // §15: a failed attempt is chained only when its reason changes.
        const key = `action_failed:${action.kind}:${result.error}`;
        if (chainsAlert(memory.lastAlert, key)) {
          await this.ports.alert(p, "action_failed", `${action.kind} failed: ${result.error}`, {
            action: action.kind,
            attempt: memory.failures,
            retry_ms: backoffMs(memory.failures),
          });
          memory.lastAlert = key;
        }
        return {
          ...NOTHING,
          acted: { instance_id: p.instance_id, action: action.kind, ok: false, reason: result.error },
          // The retry is due when its backoff ends: the shell may look again then rather than at its next tick.
          dueMs: memory.nextAttemptMs,
        };
      }
    }
  }

  private memoryOf(p: PlacementView): AgentMemory {
    let m = this.memory.get(p.instance_id);
    if (!m) {
      m = { failures: 0, nextAttemptMs: 0, lastAlert: null };
      this.memory.set(p.instance_id, m);
    }
    return m;
  }
}

/** What a node's verified answer says of each instance placed on it (moved records are not listed by the lists). */
function observedPlacements(
  rows: Extract<NodeRows, { kind: "answered" }>,
  placed: readonly PlacementView[],
  nodeId: string,
  nowMs: number,
): ObservedInstance[] {
  const byId = new Map(rows.rows.map((r) => [r.instance_id, r]));
  return placed
    .filter((p) => !p.moved)
    .map((p) => observedInstanceOf(p.instance_id, nodeId, byId.get(p.instance_id) ?? null, nowMs));
}

/** What one node's answer says of one instance: a row, absence (only from a verified answer), or nothing known. */
export function observationOf(rows: NodeRows, instanceId: string): InstanceObservation {
  if (rows.kind === "unverified") return { kind: "unverified", why: rows.why };
  const row = rows.rows.find((r) => r.instance_id === instanceId);
  return row ? { kind: "listed", state: row.state, generation: row.generation } : { kind: "not_listed" };
}
