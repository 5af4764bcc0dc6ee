/**
 * Reconciling a lost answer (spec/mesh.md §10.1): run at once after an indeterminate attempt, before any other candidate
 * is tried. The node is asked what it holds for the decision; whatever it holds is unloaded under the same decision
 * id. Only a node that answered, and whose every instance for the decision was unloaded, settles the attempt.
 *
 * Why "status shows nothing" is enough (§10.3): the node marks a decision in flight before fetching, inserts the
 * instance row before clearing the mark, answers status from one snapshot, and fetches the package over the
 * request's own connection, which the client destroyed before we got here. So a request the node had not started
 * handling can no longer produce an instance.
 *
 * This is the only automatic unload in the core. It removes an instance that was never a managed placement, made by
 * the same decision whose dispatch is still in progress, and only after the node listed it: the undoing of a
 * failed attempt, not a judgement about liveness (I3).
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { isInstanceRow, type StatusRowAnswer, statusRows, statusRowsOf } from "../../core/protocol/results.js";
import type { CallResult } from "../client/node-client.js";
import type { DecisionId } from "./store.js";
import type { Targets } from "./targets.js";

export interface ReconcileResult {
  readonly settled: boolean;
  /** `reconciled: …` or `not reconciled: …` (§16 fixed texts). */
  readonly note: string;
  readonly unloaded: number;
}

export function failureText(r: Exclude<CallResult, { kind: "ok" }>): string {
  return r.kind === "refused" ? `${r.code}: ${r.reason}` : r.reason;
}

/**
 * `heldForDecision` of a status result that nobody has typed yet: null when it is not a table of rows, never read as
 * empty. The controller's own calls get their answers typed by the node client and read them with `heldForDecision`.
 */
export function rowsForDecision(
  result: JsonObject,
  decisionId: string,
): { inFlight: boolean; instances: string[] } | null {
  const rows = statusRows(result);
  return rows === null ? null : heldForDecision(rows, decisionId);
}

/** The rows of a status answer that carry `decisionId`: in-flight marks and instances (departed rows excluded). */
export function heldForDecision(
  rows: readonly StatusRowAnswer[],
  decisionId: string,
): { inFlight: boolean; instances: string[] } {
  let inFlight = false;
  const instances: string[] = [];
  for (const row of rows) {
    if (row.decision_id !== decisionId || "departed" in row) continue;
    if (row.in_flight === true) inFlight = true;
    else if (isInstanceRow(row)) instances.push(row.instance_id);
  }
  return { inFlight, instances };
}

export async function reconcileLostAnswer(
  targets: Targets,
  nodeId: string,
  decisionId: DecisionId,
  callTimeoutMs: number,
): Promise<ReconcileResult> {
  const notReconciled = (why: string): ReconcileResult => ({
    settled: false,
    note: `not reconciled: ${why}`,
    unloaded: 0,
  });
  // 1. signed status without an instance id
  const status = await targets.call(
    nodeId,
    "status",
    { instance_id: null, include_departed: false },
    { timeoutMs: callTimeoutMs },
  );
  if (status.kind !== "ok") return notReconciled(failureText(status));
  // 2.
  const held = heldForDecision(statusRowsOf(status.result), decisionId);
  // 3.
  if (held.inFlight) return notReconciled("the target is still handling this decision");
  // 4. unload each, carrying the same decision id; the node gates these as teardown
  let unloaded = 0;
  for (const instanceId of held.instances) {
    const r = await targets.call(
      nodeId,
      "unload",
      { instance_id: instanceId },
      { decisionId, timeoutMs: callTimeoutMs },
    );
    if (r.kind !== "ok") {
      return { settled: false, note: `not reconciled: unload of ${instanceId} failed (${failureText(r)})`, unloaded };
    }
    unloaded++;
  }
  // 5. the fixed text of §16; with one instance it begins "reconciled: unloaded 1 instance"
  return { settled: true, note: `reconciled: unloaded ${unloaded} instance(s) left by the lost answer`, unloaded };
}
