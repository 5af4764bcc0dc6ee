/**
 * The keep loop's ports over the mesh controller (issue 16): what `KeepLoop` reads (placements with their
 * chained order, each node's liveness, lease and last stamp, one verified status per node) and what it does, each
 * through the call a verb makes:
 *
 * - `start` (an instance its node stopped for our lease): the instance verb `start`, chained as the verb chains it
 *   (`workload.start {phase: "request"/"outcome"}`), after a `workload.lifecycle {phase: "lifecycle"}` event that
 *   names the loop as the actor and the reason;
 * - an alert: `workload.lifecycle {phase: "alert", instance_id, node, name, reason, why}` on the controller chain.
 *
 * - `reschedule` (a dead leased node whose lease has certainly run out), `replace` (a lost instance): the record is
 *   taken off its node and the agent placed again from its stored order (mover.ts), chained `workload.lifecycle`
 *   with the transfer and `workload.migrate` when placed;
 * - `place_again` (a moved record nothing replaced yet): the same placement from the stored order;
 * - `unload_orphan` (the old copy found stopped on its returned node): a fenced unload; `stop_orphan` (the copy of a
 *   forgotten node found running): a stop on the operator's authority; `forget_orphan`: the record ends.
 *
 * Moved records are judged beside the placements (`moved: true`), by their old node's answers.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { PlacementView, KeepAction } from "../../core/mesh/keep.js";
import { PLACE_RESTART_DEFAULT, RESTART_POLICIES, type RestartPolicy } from "../../core/node/restart-policy.js";
import { isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import type { CallResult } from "../../mesh/client/node-client.js";
import type { ActionResult, NodeRows, KeepPorts } from "./keep-loop.js";
import type { PlacementRecord } from "../../mesh/controller/store.js";
import type { MovedRecord } from "../../mesh/controller/move-records.js";
import { moveAgent, placeMovedAgain, teardownOrphan } from "../../mesh/controller/mover.js";
import type { KeepAccess } from "../../mesh/controller/keep-access.js";
import { err, ok } from "../../kit/result.js";
import { recoverAgentRecords } from "../../mesh/controller/store-agents.js";
import { LOOP_ACTOR } from "../actor.js";

/** How long a drain's own move is left to it before the loop places it again (a drain that died mid-move). */
const DRAIN_OWNS_MS = 120_000;

const MOVES: ReadonlySet<string> = new Set(["reschedule", "replace", "place_again"]);

export function meshKeepPorts(access: KeepAccess, shouldAct: () => boolean): KeepPorts {
  return {
    clock: access.clock,
    shouldAct,
    placements: async () => {
      const views: PlacementView[] = [];
      // Issue 33: read once per pass; a name a person stopped is never started, moved or placed again by the loop.
      const stopped = await access.store.stoppedNames();
      // Issue 35: one read of the placements, their chained orders and their lineages per pass, not three per agent.
      const placed = (await access.placements()).filter((p) => p.pending === null);
      const orders = await access.chainedOrders(placed.map((p) => p.decision_id));
      const moves = await access.moves.allMoves();
      for (const p of placed) {
        views.push({
          ...placementView(p, orders.get(p.decision_id) ?? null),
          ...movable(access, p.package_id),
          reschedules: moves.get(p.decision_id) ?? 0,
          stopped: stopped.has(p.name),
        });
      }
      for (const m of await access.moves.moved())
        views.push({ ...(await movedView(access, m)), stopped: stopped.has(m.name) });
      return views;
    },
    node: async (nodeId) => {
      const s = await access.stamps(nodeId);
      return {
        ...(await access.liveness(nodeId)),
        forgotten: false,
        lease_ms: s.lease_ms,
        last_sent_issued_at_ms: s.last_sent_ms,
      };
    },
    observe: async (nodeId) => rowsOf(await access.status(nodeId)),
    recordObservations: (observations) => access.store.recordObservations(observations),
    recoverRecords: async () => (await recoverAgentRecords(access.store, null)).length,
    perform: async (p, action) => {
      try {
        return await perform(access, p, action);
      } catch (error) {
        // A store or place() failure is one failed attempt (backed off, chained once), not the end of the loop.
        return err(`${action.kind} threw: ${(error as Error).message}`);
      }
    },
    alert: async (p, reason, why, failed) => {
      if (failed && MOVES.has(failed.action)) {
        // §15: a failed reschedule attempt, chained only when its reason changes (the loop asks only then).
        const next = `retrying in ${Math.round(failed.retry_ms / 1000)} s`;
        await access.append({
          source: "placement",
          kind: "workload.refuse",
          payload: {
            phase: "reschedule",
            instance_id: p.instance_id,
            node: p.node_id,
            name: p.name,
            action: failed.action,
            reason: why,
            attempt: failed.attempt,
            next,
            by: LOOP_ACTOR,
          },
        });
        return;
      }
      await access.append({
        source: "placement",
        kind: "workload.lifecycle",
        payload: {
          phase: "alert",
          instance_id: p.instance_id,
          node: p.node_id,
          name: p.name,
          reason,
          why,
          by: LOOP_ACTOR,
        },
      });
    },
  };
}

/** A placement as the loop judges it: restart policy and pin from its chained order (absent: `berth place`'s default). */
export function placementView(
  p: Pick<PlacementRecord, "instance_id" | "name" | "node_id">,
  order: JsonObject | null,
): PlacementView {
  const restart = order?.restart;
  const policy: RestartPolicy =
    typeof restart === "string" && (RESTART_POLICIES as readonly string[]).includes(restart)
      ? (restart as RestartPolicy)
      : PLACE_RESTART_DEFAULT;
  return {
    instance_id: p.instance_id,
    name: p.name,
    node_id: p.node_id,
    policy,
    moved: false,
    pinned: typeof order?.pin === "string",
    // The caller reads these from the package (`movable`); alone, the safe reading is "never moved".
    migratable: false,
    sticky: false,
    reschedules: 0,
  };
}

function movable(access: KeepAccess, packageId: string): { migratable: boolean; sticky: boolean } {
  return access.packagePolicy(packageId) ?? { migratable: false, sticky: false };
}

/** A moved record as the loop judges it: its old copy on its old node, and whether its agent still needs a place. */
async function movedView(access: KeepAccess, m: MovedRecord): Promise<PlacementView> {
  const order = await access.chainedOrder(m.decision_id);
  const successorState = m.successor === null ? null : ((await access.store.decision(m.successor))?.state ?? null);
  // A successor decision that ended unplaced (a settle released it) placed nothing: the agent needs a place again.
  // A drain places its own moves (node-admin.ts): a fresh one is left to it, so the two never race for the name.
  const drainInProgress = m.authority === "drain" && access.clock() - m.moved_ms < DRAIN_OWNS_MS;
  const missing =
    !drainInProgress &&
    (m.successor === null || (successorState === "unplaced" && (await access.moves.nameHolder(m.name)) === null));
  return {
    ...placementView(m, order),
    ...movable(access, m.package_id),
    moved: true,
    moved_by: m.authority,
    successor_missing: missing,
    reschedules: m.moves,
  };
}

/** Only a verified status answer says anything about absence; everything else is `unverified`. */
export function rowsOf(r: CallResult<"status">): NodeRows {
  if (r.kind !== "ok")
    return { kind: "unverified", why: r.kind === "refused" ? `refused ${r.code}: ${r.reason}` : r.reason };
  return {
    kind: "answered",
    rows: statusRowsOf(r.result)
      .filter(isInstanceRow)
      .map((row) => ({
        instance_id: row.instance_id,
        state: row.state,
        generation: row.generation,
        ...(row.restarts === undefined ? {} : { restarts: row.restarts }),
        pid: row.pid,
        started_ms: row.started_ms,
      })),
  };
}

/** §15: the loop's act, chained before (or with) it: who acts and why. */
function lifecycle(p: PlacementView, action: string, reason: string) {
  return {
    source: "placement",
    kind: "workload.lifecycle",
    payload: {
      phase: "lifecycle",
      instance_id: p.instance_id,
      node: p.node_id,
      name: p.name,
      action,
      reason,
      by: LOOP_ACTOR,
    },
  };
}

async function perform(
  access: KeepAccess,
  p: PlacementView,
  action: Exclude<KeepAction, { kind: "none" | "wait" | "alert" }>,
): Promise<ActionResult> {
  switch (action.kind) {
    case "start": {
      await access.append({
        source: "placement",
        kind: "workload.lifecycle",
        payload: {
          phase: "lifecycle",
          instance_id: p.instance_id,
          node: p.node_id,
          name: p.name,
          action: "start",
          reason: action.why,
          by: LOOP_ACTOR,
        },
      });
      const r = await access.instance("start", p.instance_id, { operator: LOOP_ACTOR });
      return r.kind === "ok" ? ok() : err(r.kind === "refused" ? `${r.code}: ${r.reason}` : r.reason);
    }
    case "replace":
    case "reschedule": {
      // Issue 35: its own row, not every placement's (at 10,000 agents that read was a third of a move's CPU).
      const record = (await access.store.placement(p.instance_id))?.record;
      if (!record) return err("the placement record is gone");
      const by = action.kind === "replace" ? "lost" : action.authority === "operator" ? "forget" : "lease";
      const r = await moveAgent(access.mover, record, by, lifecycle(p, action.kind, action.why), action.why);
      return r.ok ? ok() : err(r.error.reason);
    }
    case "place_again": {
      const moved = (await access.moves.movedRecord(p.instance_id))?.record;
      if (!moved) return err("the moved record is gone");
      await access.moves.append([lifecycle(p, action.kind, action.why)]);
      const r = await placeMovedAgain(access.mover, moved, action.why);
      return r.ok ? ok() : err(r.error.reason);
    }
    case "unload_orphan":
    case "stop_orphan": {
      const moved = (await access.moves.movedRecord(p.instance_id))?.record;
      if (!moved) return err("the moved record is gone");
      await access.moves.append([lifecycle(p, action.kind, action.why)]);
      const r = await teardownOrphan(
        access.mover,
        moved,
        action.kind === "stop_orphan" ? "stop" : "unload",
        action.generation,
        LOOP_ACTOR,
      );
      return r.ok ? ok() : err(r.error);
    }
    case "forget_orphan":
      await access.moves.dropMoved(p.instance_id, lifecycle(p, action.kind, action.why));
      return ok();
    default: {
      const never: never = action;
      return never;
    }
  }
}
