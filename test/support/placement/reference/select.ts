/**
 * Ranking and selection (spec/mesh.md §8.6), and the dispatch order that follows from them (§9.2 step 8).
 *
 * Invariants (structural):
 * - a pin overrides scoring, never constraints: a rejected pinned node is an error naming every failed constraint;
 * - emulation is a fallback: the pool holds the non-emulated eligible nodes, and emulated ones only when there
 *   are none, so an emulated node never wins while a native (or fallback) one is eligible;
 * - `prefer` narrows the choice within the pool; `avoid` only demotes, so an avoided node still wins when it is
 *   the only choice;
 * - nothing fits → `placement: null`, a decision.
 */
import type { NodeId } from "../../../../src/core/crypto/ed25519.js";
import type { PlacementRequest } from "../../../../src/core/placement/inputs.js";
import type { Flag, NodeReport, Placement, PlacementError, Rejection } from "../../../../src/core/placement/outputs.js";
import type { Assessment } from "./constraints.js";
import type { Scored } from "./score.js";

function byNodeId(a: NodeReport, b: NodeReport): number {
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}

const NO_REJECTIONS: readonly Rejection[] = [];

export function reportOf(a: Assessment, scored: Scored | undefined): NodeReport {
  const name = a.facts?.name ?? null;
  if (a.fit === null || scored === undefined) {
    return {
      node_id: a.node.node_id,
      name,
      eligible: false,
      rejections: a.rejections,
      variant: null,
      route: null,
      execution: null,
      score: null,
      total_centi: null,
      flags: [],
    };
  }
  return {
    node_id: a.node.node_id,
    name,
    eligible: true,
    rejections: NO_REJECTIONS,
    variant: a.fit.variant,
    route: a.fit.route,
    execution: a.fit.execution,
    score: scored.score,
    total_centi: scored.total_centi,
    flags: scored.flags,
  };
}

/**
 * Eligible by total descending, then node id ascending; the rejected follow, by node id. The two groups are sorted
 * apart: fewer, cheaper comparisons on the hot path.
 */
export function rank(reports: readonly NodeReport[]): NodeReport[] {
  const eligible: NodeReport[] = [];
  const rejected: NodeReport[] = [];
  for (const r of reports) (r.eligible ? eligible : rejected).push(r);
  eligible.sort((a, b) => (b.total_centi ?? 0) - (a.total_centi ?? 0) || byNodeId(a, b));
  rejected.sort(byNodeId);
  for (const r of rejected) eligible.push(r);
  return eligible;
}

export type Selection =
  | { readonly kind: "placed"; readonly node_id: NodeId; readonly flags: readonly Flag[] }
  | { readonly kind: "unplaceable" }
  | { readonly kind: "error"; readonly error: PlacementError };

/** §8.6: the ids of the pool, in rank order. */
export function poolOf(ranked: readonly NodeReport[]): NodeReport[] {
  const eligible = ranked.filter((r) => r.eligible);
  const native = eligible.filter((r) => r.execution !== "emulated");
  return native.length > 0 ? native : eligible;
}

function withFlags(flags: readonly Flag[], ...extra: Flag[]): Flag[] {
  return [...new Set([...flags, ...extra])].sort();
}

export function select(
  ranked: readonly NodeReport[],
  request: PlacementRequest,
  describe: (id: string) => string,
): Selection {
  if (request.pin !== null) {
    const pin = request.pin;
    const pinned = ranked.find((r) => r.node_id === pin);
    if (pinned === undefined) {
      return {
        kind: "error",
        error: {
          code: "unknown_pin",
          message: `pin names node ${pin}, which is not a known target: add the target first, or pin one of the listed nodes`,
          constraints: [],
        },
      };
    }
    if (!pinned.eligible) {
      const failed = pinned.rejections.map((r) => `constraint \`${r.constraint}\`: ${r.detail}`).join("; ");
      return {
        kind: "error",
        error: {
          code: "pin_ineligible",
          message:
            `pinned node ${describe(pin)} cannot take workload ${request.spec.name}: ${failed}. ` +
            "A pin overrides scoring, never constraints: fix what is listed or remove the pin",
          constraints: pinned.rejections,
        },
      };
    }
    return { kind: "placed", node_id: pinned.node_id, flags: withFlags(pinned.flags, "pinned") };
  }
  const pool = poolOf(ranked);
  const top = pool[0];
  if (top === undefined) return { kind: "unplaceable" };
  const winner =
    pool.find((r) => request.prefer.includes(r.node_id)) ?? pool.find((r) => !request.avoid.includes(r.node_id)) ?? top;
  const flags = winner === top ? withFlags(winner.flags) : withFlags(winner.flags, "affinity");
  return { kind: "placed", node_id: winner.node_id, flags };
}

/**
 * A copy of a report with other flags, written out member by member in `reportOf`'s order rather than spread: the
 * copy then has the same shape as every other report, so the engine's loops over candidates stay monomorphic
 * (a spread copy made the optimised `decide` bail out again and again, about one call in twenty).
 */
function withReportFlags(r: NodeReport, flags: readonly Flag[]): NodeReport {
  return {
    node_id: r.node_id,
    name: r.name,
    eligible: r.eligible,
    rejections: r.rejections,
    variant: r.variant,
    route: r.route,
    execution: r.execution,
    score: r.score,
    total_centi: r.total_centi,
    flags,
  };
}

/** The winner's report carries the selection flags too, so explain shows `[affinity]` on its candidate line. */
export function applySelection(
  ranked: readonly NodeReport[],
  selection: Extract<Selection, { kind: "placed" }>,
  accelerator: string | null,
): { readonly candidates: NodeReport[]; readonly placement: Placement } {
  const candidates = ranked.map((r) => (r.node_id === selection.node_id ? withReportFlags(r, selection.flags) : r));
  const w = candidates.find((r) => r.node_id === selection.node_id);
  if (
    !w?.eligible ||
    w.variant === null ||
    w.route === null ||
    w.execution === null ||
    w.score === null ||
    w.total_centi === null
  ) {
    throw new Error("bug: the selected node is not an eligible candidate");
  }
  return {
    candidates,
    placement: {
      node_id: w.node_id,
      variant: w.variant,
      route: w.route,
      execution: w.execution,
      accelerator,
      score: w.score,
      total_centi: w.total_centi,
      flags: selection.flags,
    },
  };
}
