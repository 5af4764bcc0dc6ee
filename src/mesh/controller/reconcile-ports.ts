/**
 * The reconcile loop's ports over the mesh controller (issue 16): what `ReconcileLoop` reads (placements with their
 * chained order, each node's liveness, lease and last stamp, one verified status per node) and what it does, each
 * through the call a verb makes:
 *
 * - `start` (an instance its node stopped for our lease): the instance verb `start`, chained as the verb chains it
 *   (`workload.start {phase: "request"/"outcome"}`), after a `workload.lifecycle {phase: "lifecycle"}` event that
 *   names the loop as the actor and the reason;
 * - an alert: `workload.lifecycle {phase: "alert", instance_id, node, name, reason, why}` on the controller chain.
 *
 * Moving an agent (`replace` of a lost instance, `reschedule` off a dead leased or forgotten node, unloading a moved
 * record's old copy) is decided by the loop but NOT performed by this build: it returns as a failed action ("not
 * performed by this build: …"), which the loop backs off and chains once as an alert `action_failed`, so an operator
 * sees what the loop would do and nothing is half-done. (The executor needs a
 * stored full order and a name transfer in the store, which issue 20's asynchronous store is reshaping.)
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { NodeView, PlacementView, ReconcileAction } from "../../core/mesh/reconcile.js";
import { PLACE_RESTART_DEFAULT, RESTART_POLICIES, type RestartPolicy } from "../../core/node/restart-policy.js";
import { isInstanceRow, statusRows } from "../../core/protocol/results.js";
import type { CallResult } from "../client/node-client.js";
import type { ActionResult, NodeRows, ReconcilePorts } from "./reconcile-loop.js";
import type { PlacementRecord } from "./store.js";
import type { Verb, VerbOptions, VerbResult } from "./verbs.js";
import type { NodeStamps } from "./watch-stamps.js";

/** What the ports need of the controller; `MeshController.reconcileAccess()` provides it. */
export interface ReconcileAccess {
  readonly clock: () => number;
  placements(): Promise<readonly PlacementRecord[]>;
  /** The `order` of the chained decision event (env names only), or null when the chain has none. */
  chainedOrder(decisionId: string): Promise<JsonObject | null>;
  liveness(nodeId: string): Promise<NodeView["liveness"]>;
  stamps(nodeId: string): Promise<NodeStamps>;
  status(nodeId: string): Promise<CallResult>;
  instance(verb: Verb, instanceId: string, opts: VerbOptions): Promise<VerbResult>;
  append(draft: { source: string; kind: string; payload: JsonObject }): Promise<void>;
}

export const LOOP_ACTOR: JsonObject = { actor: "reconcile-loop", via: "berth serve", pid: process.pid };

export function meshReconcilePorts(access: ReconcileAccess, shouldAct: () => boolean): ReconcilePorts {
  return {
    clock: access.clock,
    shouldAct,
    placements: async () => {
      const views: PlacementView[] = [];
      for (const p of await access.placements()) if (p.pending === null) views.push(placementView(p, await access.chainedOrder(p.decision_id)));
      return views;
    },
    node: async (nodeId) => {
      const s = await access.stamps(nodeId);
      return { liveness: await access.liveness(nodeId), forgotten: false, lease_ms: s.lease_ms, last_sent_issued_at_ms: s.last_sent_ms };
    },
    observe: async (nodeId) => rowsOf(await access.status(nodeId)),
    perform: async (p, action) => perform(access, p, action),
    alert: async (p, reason, why) => {
      await access.append({ source: "placement", kind: "workload.lifecycle", payload: { phase: "alert", instance_id: p.instance_id, node: p.node_id, name: p.name, reason, why, by: LOOP_ACTOR } });
    },
  };
}

/** A placement as the loop judges it: restart policy and pin from its chained order (absent: `berth place`'s default). */
export function placementView(p: PlacementRecord, order: JsonObject | null): PlacementView {
  const restart = order?.restart;
  const policy: RestartPolicy = typeof restart === "string" && (RESTART_POLICIES as readonly string[]).includes(restart) ? (restart as RestartPolicy) : PLACE_RESTART_DEFAULT;
  return {
    instance_id: p.instance_id,
    name: p.name,
    node_id: p.node_id,
    policy,
    moved: false,
    pinned: typeof order?.pin === "string",
    // Not read from the package here; nothing is moved by this build (module comment), so the safe reading is "no".
    migratable: false,
    sticky: false,
    reschedules: 0,
  };
}

/** Only a verified status answer says anything about absence; everything else is `unverified`. */
export function rowsOf(r: CallResult): NodeRows {
  if (r.kind !== "ok") return { kind: "unverified", why: r.kind === "refused" ? `refused ${r.code}: ${r.reason}` : r.reason };
  const rows = statusRows(r.result);
  if (rows === null) return { kind: "unverified", why: "the status answer is not a list of rows" };
  return { kind: "answered", rows: rows.filter(isInstanceRow).map((row) => ({ instance_id: row.instance_id, state: row.state, generation: row.generation })) };
}

async function perform(access: ReconcileAccess, p: PlacementView, action: Exclude<ReconcileAction, { kind: "none" | "wait" | "alert" }>): Promise<ActionResult> {
  switch (action.kind) {
    case "start": {
      await access.append({ source: "placement", kind: "workload.lifecycle", payload: { phase: "lifecycle", instance_id: p.instance_id, node: p.node_id, name: p.name, action: "start", reason: action.why, by: LOOP_ACTOR } });
      const r = await access.instance("start", p.instance_id, { operator: LOOP_ACTOR });
      return r.kind === "ok" ? { ok: true } : { ok: false, reason: r.kind === "refused" ? `${r.code}: ${r.reason}` : r.reason };
    }
    case "replace":
    case "reschedule":
    case "unload_orphan":
    case "forget_orphan":
      return { ok: false, reason: `not performed by this build: ${action.kind} (${action.why})` };
    default: {
      const never: never = action;
      return never;
    }
  }
}
