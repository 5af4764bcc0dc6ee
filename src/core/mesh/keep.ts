/**
 * The keep loop's decision for one managed placement (issue 16 "A reconcile loop in `berth serve`", spec/mesh.md §15;
 * issue 32 calls it the keep loop, "reconcile" being the lost answer's word only): level-triggered, like a
 * controller-runtime Reconciler. Given what the store records and what the tick *verified* on the node, it returns the
 * one action that moves the agent toward "running exactly once" under its restart policy, or why it waits. The shell
 * performs the action through the same chained call a verb makes.
 *
 * Structural rules (each a row of the table below, each a test):
 * - never acts on an unverified observation: without a signed answer from the node this tick, the only outcomes are
 *   `wait` and, for a node judged dead, the lease path (which relies on the node's own promise, not on an answer);
 * - never kills a live agent: no row returns an action that stops or unloads an instance observed `running` (a
 *   running copy of a record already moved is an alert `duplicate`, the operator decides);
 * - restarts by the node are the node's (supervision): an instance the node still lists as exited, failed or
 *   stopped is left alone; the controller acts only where the node cannot — the instance is gone, or the node
 *   stopped it for its lease;
 * - backs off per agent: while `now < next_attempt_ms` every acting row becomes `wait`.
 *
 * | observation                                       | policy          | action                                   |
 * |---------------------------------------------------|-----------------|------------------------------------------|
 * | stopped by a person (issue 33), not moved            | any             | none (never started, moved or placed)    |
 * | stopped by a person, moved record                      | any             | the old-copy rows below, never place_again |
 * | record moved, nothing placed since (successor missing) | on-failure/always, may move | place_again (from the stored order) |
 * | record moved away, copy running on its old node   | any             | alert duplicate                          |
 * | … moved by `berth node forget`, copy running      | any             | stop_orphan (the operator's authority)   |
 * | record moved away, copy stopped/exited/lost/...   | any             | unload_orphan (the old copy)             |
 * | record moved away, node lists nothing             | any             | forget_orphan (drop the old record)      |
 * | running / starting / loading                      | any             | none                                     |
 * | lease_stopped                                     | any             | start (the node stopped it, not the agent) |
 * | exited / failed / stopped / loaded                | any             | none (the node's supervision or operator)|
 * | node answered, instance not listed (lost)         | never           | alert lost                               |
 * | node answered, instance not listed (lost)         | on-failure/always | replace (same node allowed)            |
 * | no verified answer, node alive/suspect/unknown    | any             | wait                                     |
 * | no answer, node dead, no lease                    | any             | alert held_no_lease                      |
 * | no answer, node dead, lease running out           | any             | wait (until the lease is certainly over) |
 * | no answer, node dead, lease over                  | never           | alert lost                               |
 * | no answer, node dead, lease over, may not move    | on-failure/always | alert pinned/not_migratable/…          |
 * | no answer, node dead, lease over, may move        | on-failure/always | reschedule                             |
 * | node forgotten by the operator                    | any             | reschedule (operator's authority) unless it may not move |
 *
 * Pure.
 */
import { type LeaseJudgement, leaseCertainlyOver } from "./lease.js";
import type { Liveness } from "../placement/inputs.js";
import { type MovableRecord, type MoveAuthority, type MoveRefusal, mayReschedule } from "./reschedule.js";
import type { RestartPolicy } from "../node/restart-policy.js";

export { RESTART_POLICIES, type RestartPolicy } from "../node/restart-policy.js";

/** What the tick verified about the placement's instance on its node (a signed status answer), or that it could not. */
export type InstanceObservation =
  | { readonly kind: "listed"; readonly state: string; readonly generation: number | null }
  | { readonly kind: "not_listed" }
  | { readonly kind: "unverified"; readonly why: string };

export interface PlacementView extends MovableRecord {
  readonly instance_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly policy: RestartPolicy;
  /** The record was moved to another node already (`rescheduled`): only its old copy is settled. */
  readonly moved: boolean;
  /** A moved record: why it was moved (absent: `lease`, the automatic case). */
  readonly moved_by?: MoveAuthority;
  /** A moved record whose agent nothing has placed since (the re-placement failed, or `berth node forget`). */
  readonly successor_missing?: boolean;
  /**
   * Issue 33: a person stopped the agent (`berth agent stop`, `berth instance stop`) and nothing has started it since.
   * A stop is final: the loop never starts, moves or places it again; only a deploy or an explicit start does.
   */
  readonly stopped?: boolean;
}

export interface NodeView {
  readonly liveness: Liveness;
  /**
   * Issue 35: when the node will be judged dead if it answers nothing until then (its first failed contact +
   * dead_after); null when its last contact did not fail. What a wait for a silent node waits for, so the shell can
   * look again at that instant instead of at its next tick.
   */
  readonly dead_at_ms: number | null;
  readonly forgotten: boolean;
  /** From facts the controller accepted; null when the node runs without a lease. */
  readonly lease_ms: number | null;
  /** The stamp of the last request any process of this controller sent it (persisted before sending). */
  readonly last_sent_issued_at_ms: number | null;
}

export interface KeepInput {
  readonly placement: PlacementView;
  readonly node: NodeView;
  readonly observed: InstanceObservation;
  readonly now_ms: number;
  /** The per-agent backoff: no action before this (0 when nothing failed). */
  readonly next_attempt_ms: number;
}

/** Why an agent needs an operator; `action_failed` is the shell's (an acting row whose call failed), never this table's. */
export type AlertReason = "duplicate" | "lost" | "held_no_lease" | "action_failed" | MoveRefusal["reason"];

export type KeepAction =
  | { readonly kind: "none"; readonly why: string }
  /** `until_ms`: the instant the wait may end by itself (the shell looks again then); null: only a new answer ends it. */
  | { readonly kind: "wait"; readonly why: string; readonly until_ms: number | null }
  | { readonly kind: "start"; readonly why: string }
  | { readonly kind: "replace"; readonly why: string }
  | { readonly kind: "reschedule"; readonly why: string; readonly authority: "lease" | "operator" }
  | { readonly kind: "place_again"; readonly why: string }
  | { readonly kind: "unload_orphan"; readonly why: string; readonly generation: number | null }
  | { readonly kind: "stop_orphan"; readonly why: string; readonly generation: number | null }
  | { readonly kind: "forget_orphan"; readonly why: string }
  | { readonly kind: "alert"; readonly reason: AlertReason; readonly why: string };

/** States in which the agent is, or is about to be, running: nothing to do. */
// Issue 15: `unhealthy` still runs and `backoff` is being restarted by the node's supervisor, so an old copy in either
// is a live duplicate (never unloaded by automation), and a current one needs nothing from the loop.
const LIVE_STATES = new Set(["running", "starting", "loading", "unhealthy", "backoff"]);
/** The node still holds the instance and owns what happens to it (its supervision, or an operator's stop). */
const NODE_OWNED_STATES = new Set(["exited", "failed", "stopped", "loaded", "unknown"]);

const ACTING: ReadonlySet<KeepAction["kind"]> = new Set([
  "start",
  "replace",
  "reschedule",
  "place_again",
  "unload_orphan",
  "stop_orphan",
]);

export function keepPlacement(input: KeepInput): KeepAction {
  const decided = decide(input);
  const acts = ACTING.has(decided.kind);
  if (acts && input.now_ms < input.next_attempt_ms) {
    return {
      kind: "wait",
      why: `backing off after a failed attempt (${decided.kind}: ${decided.why})`,
      until_ms: input.next_attempt_ms,
    };
  }
  return decided;
}

function decide(input: KeepInput): KeepAction {
  const { placement: p, observed } = input;
  if (p.stopped === true) {
    // Issue 33: the person's stop outlives its node. A moved record's old copy is still settled (a stopped copy
    // unloaded, a forgotten node's running copy stopped), but the agent is never placed again; a placement is never
    // started, replaced or rescheduled, whether its node lost it, stopped it for its lease, died or was forgotten.
    if (p.moved) return settleOldCopy(observed, p.moved_by ?? "lease");
    return { kind: "none", why: "stopped by its operator: only a deploy or `berth agent start` runs it again" };
  }
  if (p.moved) {
    // The agent first: a moved record nothing has replaced is placed again (its old copy is stopped, or the operator
    // forgot its node), unless its policy or its package says it may not move; then its old copy.
    if (p.successor_missing === true && p.policy !== "never" && mayReschedule({ ...p, reschedules: 0 }).ok) {
      return { kind: "place_again", why: `moved off its node (${p.moved_by ?? "lease"}) and not placed elsewhere yet` };
    }
    return settleOldCopy(observed, p.moved_by ?? "lease");
  }
  switch (observed.kind) {
    case "listed":
      if (LIVE_STATES.has(observed.state)) return { kind: "none", why: `${observed.state} on its node` };
      if (observed.state === "lease_stopped")
        return { kind: "start", why: "its node stopped it when our lease ran out; contact is back" };
      if (NODE_OWNED_STATES.has(observed.state))
        return { kind: "none", why: `${observed.state}: the node's supervision or an operator owns it` };
      return { kind: "none", why: `state ${observed.state} is not one the loop acts on` };
    case "not_listed":
      if (p.policy === "never")
        return { kind: "alert", reason: "lost", why: "its node no longer lists it and its restart policy is never" };
      return {
        kind: "replace",
        why: "its node answered and no longer lists it (lost); placing it again, its node allowed",
      };
    case "unverified":
      return decideUnobserved(input, observed.why);
    default: {
      const never: never = observed;
      return never;
    }
  }
}

function settleOldCopy(observed: InstanceObservation, by: MoveAuthority): KeepAction {
  switch (observed.kind) {
    case "listed":
      // Issue 16: the operator declared the node dead for good (`berth node forget`) and released its placements; a
      // copy it still runs is stopped (then unloaded) on that authority, recorded as such. Never by automation alone.
      if (LIVE_STATES.has(observed.state) && by === "forget") {
        return {
          kind: "stop_orphan",
          why: `the forgotten node answered again and still runs the copy (${observed.state}); stopping it on the operator's authority`,
          generation: observed.generation,
        };
      }
      if (LIVE_STATES.has(observed.state)) {
        return {
          kind: "alert",
          reason: "duplicate",
          why: `the copy left on its old node is ${observed.state} while the agent runs elsewhere; never killed by automation, the operator decides`,
        };
      }
      return {
        kind: "unload_orphan",
        why: `the copy left on its old node is ${observed.state}; unloading it`,
        generation: observed.generation,
      };
    case "not_listed":
      return { kind: "forget_orphan", why: "its old node answered and holds nothing for it" };
    case "unverified":
      return { kind: "wait", why: `its old node has not answered (${observed.why})`, until_ms: null };
    default: {
      const never: never = observed;
      return never;
    }
  }
}

function decideUnobserved(input: KeepInput, why: string): KeepAction {
  const { placement: p, node } = input;
  if (node.forgotten) return moveOrAlert(p, "operator", "its node was forgotten by the operator");
  if (node.liveness !== "dead")
    return {
      kind: "wait",
      why: `no verified answer this tick (${why}); node ${node.liveness}`,
      until_ms: node.dead_at_ms !== null && node.dead_at_ms > input.now_ms ? node.dead_at_ms : null,
    };
  const lease: LeaseJudgement = leaseCertainlyOver(node.lease_ms, node.last_sent_issued_at_ms, input.now_ms);
  switch (lease.kind) {
    case "no_lease":
    case "never_sent":
      return {
        kind: "alert",
        reason: "held_no_lease",
        why: "its node is dead and runs without a lease: the copy may still run, held until the operator forgets the node",
      };
    case "running_out":
      return {
        kind: "wait",
        why: "its node is dead; waiting until its lease has certainly run out",
        until_ms: lease.over_at_ms,
      };
    case "over":
      if (p.policy === "never")
        return { kind: "alert", reason: "lost", why: "its node is dead (lease over) and its restart policy is never" };
      return moveOrAlert(
        p,
        "lease",
        "its node is dead and its lease has certainly run out, so the old copy has stopped",
      );
    default: {
      const never: never = lease;
      return never;
    }
  }
}

function moveOrAlert(p: PlacementView, authority: "lease" | "operator", why: string): KeepAction {
  const verdict = mayReschedule(p);
  if (!verdict.ok) return { kind: "alert", reason: verdict.error.reason, why: `${why}; ${verdict.error.detail}` };
  return { kind: "reschedule", why, authority };
}
