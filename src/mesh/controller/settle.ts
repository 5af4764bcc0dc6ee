/**
 * Settling unsettled decisions (spec/mesh.md §10.2): a decision whose lost answer could not be reconciled stays
 * persisted, listed and name-reserved until its node can be asked again. Then, oldest first, the node's status
 * decides: the one instance it holds for the decision is adopted as a managed placement (never unloaded, stopped or
 * restarted: no second candidate was tried, so it is the only copy), or, holding nothing, the decision is settled
 * empty and its name released. A node still handling the decision, or unreachable, leaves it unsettled.
 */
import { type InstanceStatusRowAnswer, isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import type { CallResult } from "../client/node-client.js";
import { heldForDecision } from "./reconcile.js";
import type { ControllerStore, PlacementRecord, UnsettledDecision } from "./store.js";
import type { Targets } from "./targets.js";

export interface SettleReport {
  readonly adopted: number;
  readonly settledEmpty: number;
  /** Decisions left unsettled, with why. */
  readonly skipped: ReadonlyArray<{ readonly decision_id: string; readonly reason: string }>;
}

export async function settleUnsettled(
  store: ControllerStore,
  targets: Targets,
  clock: () => number,
  callTimeoutMs: number,
): Promise<SettleReport> {
  let adopted = 0;
  let settledEmpty = 0;
  const skipped: Array<{ decision_id: string; reason: string }> = [];
  for (const d of await store.unsettled()) {
    // Claimed first (unsettled → settling, owned by this process): a second settler skips it, and the claim ends in
    // adopt, settle_empty or release; the machine refuses anything else (issue 21 case 2).
    const claim = await store.claimForSettle(d.decision_id);
    if (!claim.ok) {
      skipped.push({ decision_id: d.decision_id, reason: claim.error.reason });
      continue;
    }
    const skip = async (reason: string) => {
      await store.releaseSettle(d.decision_id);
      skipped.push({ decision_id: d.decision_id, reason });
    };
    let status: CallResult<"status">;
    try {
      status = await targets.call(
        d.node_id,
        "status",
        { instance_id: null, include_departed: false },
        { timeoutMs: callTimeoutMs },
      );
    } catch (error) {
      await store.releaseSettle(d.decision_id);
      throw error;
    }
    if (status.kind !== "ok") {
      await skip(status.kind === "refused" ? `${status.code}: ${status.reason}` : status.reason);
      continue;
    }
    const rows = statusRowsOf(status.result);
    const held = heldForDecision(rows, d.decision_id);
    if (held.inFlight) {
      await skip("the target is still handling this decision");
      continue;
    }
    if (held.instances.length > 1) {
      // §11.1 allows one instance per decision; two means something is badly wrong: adopt nothing, keep it listed.
      await skip(`the target lists ${held.instances.length} instances for one decision`);
      continue;
    }
    const instanceId = held.instances[0];
    const row =
      instanceId === undefined ? null : (rows.filter(isInstanceRow).find((r) => r.instance_id === instanceId) ?? null);
    await store.commitSettle(d, row === null ? null : adoption(d, row, clock()), {
      source: "placement",
      kind: "workload.place",
      payload: { phase: "settled", decision_id: d.decision_id, node: d.node_id, adopted: row === null ? 0 : 1 },
    });
    if (row === null) settledEmpty++;
    else adopted++;
  }
  return { adopted, settledEmpty, skipped };
}

function adoption(d: UnsettledDecision, row: InstanceStatusRowAnswer, nowMs: number) {
  const placement: PlacementRecord = {
    instance_id: String(row.instance_id),
    name: d.name,
    node_id: d.node_id,
    decision_id: d.decision_id,
    variant: typeof row.variant === "string" ? row.variant : d.variant,
    route: row.route === "emulated" ? "emulated" : "native",
    package_id: typeof row.package_id === "string" ? row.package_id : d.package_id,
    placed_ms: nowMs,
    adopted: true,
    pending: null,
  };
  return {
    placement,
    event: {
      source: "placement",
      kind: "workload.place",
      payload: {
        phase: "adopted",
        decision_id: d.decision_id,
        node: d.node_id,
        variant: placement.variant,
        instance_id: placement.instance_id,
        state: typeof row.state === "string" ? row.state : "unknown",
      },
    },
  };
}
