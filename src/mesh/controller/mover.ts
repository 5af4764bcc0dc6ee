/**
 * Moving an agent off its node (issue 16 "Node loss, without ever two copies", spec/mesh.md §15 "Rescheduling"): the
 * shell that performs what the keep loop (core/mesh/keep.ts) and `berth node drain` decide.
 *
 *   stored order ─rebuild (valueFrom re-read; the node left in avoid)─▶ order
 *     ─▶ [commit: the placement taken off its node (mesh_moved) + the act's event]   name free, old copy remembered
 *     ─▶ place(order): a new decision, chained and committed before anything is sent (dispatch.ts)
 *     ─▶ placed: [commit: successor + lineage count + `workload.migrate`]
 *        not placed: nothing more; the moved record has no successor, and the loop places it again (backoff)
 *
 * Structural rules:
 * - nothing is changed before the order is rebuilt: a reference that cannot be read is an error, never a half move;
 * - the caller has established that the old copy cannot run (the lease has certainly run out, the node answered
 *   without it, the operator drained it and the node confirmed it stopped, or the operator forgot the node): this
 *   file never judges that, and never stops or unloads a live copy except `stopOrphan`, which only the forget path
 *   reaches (the operator's authority, chained as such);
 * - an old copy is unloaded only fenced by the generation its node was seen at, so a copy that restarted since is
 *   refused by the node (`precondition_failed`), not killed.
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { MoveAuthority } from "../../core/mesh/reschedule.js";
import { err, ok, type Result } from "../../kit/result.js";
import { type PlaceExtras, type PlaceReport, PlaceError } from "./dispatch.js";
import { migratePayload, type MovedRecord, type MoveRecords } from "./move-records.js";
import type { PlaceOrderInput } from "./order.js";
import { failureText } from "./reconcile.js";
import type { PlacementRecord } from "./store.js";
import { readRef, rebuildOrder } from "./stored-order.js";
import type { Targets } from "./targets.js";

export interface MoverDeps {
  readonly moves: MoveRecords;
  readonly targets: Targets;
  readonly place: (order: PlaceOrderInput, extras?: PlaceExtras) => Promise<PlaceReport>;
  /** Whose environment a `valueFrom: {env}` is read from (`berth serve`'s, or the CLI's). */
  readonly processEnv: NodeJS.ProcessEnv;
  readonly callTimeoutMs: number;
}

/** A move done: the successor's placement (null: not placed yet, `note` says why and who places it). */
export interface MoveDone {
  readonly placed: PlacementRecord | null;
  readonly moved: MovedRecord;
  readonly note: string;
}

/** A move refused or not placed: why, and the moved record when the placement was already taken off its node. */
export interface MoveFailure {
  readonly reason: string;
  readonly moved: MovedRecord | null;
}

export type MoveResult = Result<MoveDone, MoveFailure>;

/** The phase of the `workload.migrate` event for a move with this authority (§15). */
function migratePhase(by: MoveAuthority): string {
  return by === "lost"
    ? "replaced_after_loss"
    : by === "lease"
      ? "rescheduled"
      : by === "drain"
        ? "drained"
        : "forgotten";
}

/** The order a move places again, with the extras its first placement had. */
interface Rebuilt {
  readonly order: PlaceOrderInput;
  readonly extras: PlaceExtras;
}

async function rebuilt(deps: MoverDeps, decisionId: string, leaving: string | null): Promise<Result<Rebuilt>> {
  const stored = await deps.moves.order(decisionId);
  if (stored === null)
    return err(
      "no stored order for this placement (placed before this build, or by a process that stopped before keeping it); deploy it again yourself",
    );
  const r = rebuildOrder(stored, leaving, readRef(deps.processEnv));
  // The successor keeps the deploy's spec, so its placement too can give the registry its record back (issue 37).
  const extras = stored.agent_spec === undefined ? {} : { agentSpec: stored.agent_spec };
  return r.ok ? ok({ order: r.value, extras }) : r;
}

/**
 * Takes `placement` off its node and places the agent again from its stored order. `lifecycle` is chained with the
 * transfer (who acts and why); `leaving` is the node put in `avoid` (null: a lost instance, its node allowed).
 */
export async function moveAgent(
  deps: MoverDeps,
  placement: PlacementRecord,
  by: MoveAuthority,
  lifecycle: EventDraft,
  reason: string,
): Promise<MoveResult> {
  const order = await rebuilt(deps, placement.decision_id, by === "lost" ? null : placement.node_id);
  if (!order.ok) return err({ reason: order.error, moved: null });
  const transfer = await deps.moves.transferOut(placement, by, lifecycle);
  if (!transfer.ok) return err({ reason: transfer.error, moved: null });
  return placeSuccessor(deps, transfer.value, order.value, reason);
}

/** A moved record nothing has replaced: its agent placed again from the stored order (the loop's `place_again`). */
export async function placeMovedAgain(deps: MoverDeps, moved: MovedRecord, reason: string): Promise<MoveResult> {
  const order = await rebuilt(deps, moved.decision_id, moved.authority === "lost" ? null : moved.node_id);
  if (!order.ok) return err({ reason: order.error, moved });
  return placeSuccessor(deps, moved, order.value, reason);
}

async function placeSuccessor(
  deps: MoverDeps,
  moved: MovedRecord,
  rebuilt: Rebuilt,
  reason: string,
): Promise<MoveResult> {
  let report: PlaceReport;
  try {
    report = await deps.place(rebuilt.order, rebuilt.extras);
  } catch (error) {
    if (!(error instanceof PlaceError)) throw error;
    if (error.code === "name_taken") {
      // Someone placed the agent meanwhile (a deploy, another process): that is the successor; nothing else to do.
      const holder = await deps.moves.nameHolder(moved.name);
      if (holder !== null) {
        await deps.moves.recordSuccessor(moved.instance_id, holder.decision_id, holder.placed, null);
        return ok({ placed: null, moved, note: `its name is held by decision ${holder.decision_id} already` });
      }
    }
    return err({ reason: `place refused (${error.code}): ${error.message}`, moved });
  }
  if (report.placed !== null) {
    const p = report.placed;
    await deps.moves.recordSuccessor(moved.instance_id, report.decision_id, true, {
      source: "placement",
      kind: "workload.migrate",
      payload: {
        phase: migratePhase(moved.authority),
        ...migratePayload(moved, { node: p.node_id, instance: p.instance_id }, report.decision_id, reason),
      },
    });
    return ok({ placed: p, moved, note: `placed as ${p.instance_id} on node ${p.node_id}` });
  }
  if (report.unsettled) {
    // The decision holds the name until settle adopts or releases it; a release leaves it unplaced, placed again then.
    await deps.moves.recordSuccessor(moved.instance_id, report.decision_id, false, null);
    return ok({
      placed: null,
      moved,
      note: `decision ${report.decision_id} is unsettled (its answer was lost); settle adopts or releases it`,
    });
  }
  const last = report.attempts.at(-1);
  const why =
    report.decision.placement === null
      ? "no eligible node"
      : last
        ? `${last.outcome}${last.reason ? `: ${last.reason}` : ""}`
        : "nothing was sent";
  return err({ reason: `not placed elsewhere (${why}, decision ${report.decision_id})`, moved });
}

/** `gone`: the record ended (the node unloaded the copy or holds none); false after a stop. */
export type OrphanResult = Result<{ readonly gone: boolean }>;

/**
 * The old copy of a moved record, on its node: unloaded (fenced on `generation`, so a copy that restarted since is
 * refused by the node) or, on the forget path only, stopped first. Chained as a request/outcome pair marked
 * `orphan: true` with the authority; a successful unload (or the node answering it holds nothing) ends the record.
 */
export async function teardownOrphan(
  deps: MoverDeps,
  moved: MovedRecord,
  verb: "stop" | "unload",
  generation: number | null,
  by: JsonObject,
): Promise<OrphanResult> {
  const authority = moved.authority === "forget" ? "operator" : moved.authority;
  const request = await deps.moves.requestEvent({
    source: "placement",
    kind: `workload.${verb}`,
    payload: {
      phase: "request",
      instance_id: moved.instance_id,
      node: moved.node_id,
      name: moved.name,
      orphan: true,
      moved_by: moved.authority,
      authority,
      by,
    },
  });
  const body: JsonObject =
    verb === "stop"
      ? { instance_id: moved.instance_id, grace_ms: 2000 }
      : { instance_id: moved.instance_id, ...(generation === null ? {} : { generation }) };
  const r = await deps.targets.call(moved.node_id, verb, body, {
    decisionId: request,
    timeoutMs: verb === "stop" ? deps.callTimeoutMs + 2000 : deps.callTimeoutMs,
  });
  const gone = verb === "unload" && (r.kind === "ok" || (r.kind === "refused" && r.code === "unknown_instance"));
  const outcome: EventDraft = {
    source: "placement",
    kind: `workload.${verb}`,
    payload: {
      phase: "outcome",
      decision_id: request,
      instance_id: moved.instance_id,
      node: moved.node_id,
      result:
        r.kind === "ok"
          ? gone
            ? "orphan_unloaded"
            : "ok"
          : r.kind === "refused"
            ? gone
              ? "orphan_unloaded"
              : "refused"
            : r.kind,
      code: r.kind === "refused" ? r.code : null,
      reason: r.kind === "ok" ? null : failureText(r),
    },
  };

  if (gone) await deps.moves.dropMoved(moved.instance_id, outcome);
  else await deps.moves.append([outcome]);
  if (r.kind === "ok" || gone) return ok({ gone });
  return err(failureText(r));
}
