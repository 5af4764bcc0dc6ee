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
import type { NodeId } from "../crypto/ed25519.js";
import type { PlacementRequest } from "./inputs.js";
import type { NodeSlots } from "./node-slots.js";
import type { Flag, NodeReport, Placement, PlacementDecision, PlacementError, Rejection, Route } from "./outputs.js";

/** The report of a node the constraints rejected (constraints.ts); `name` is its facts' name, `null` without. */
export function rejectedReport(node_id: NodeId, name: string | null, rejections: readonly Rejection[]): NodeReport {
  return {
    node_id,
    name,
    eligible: false,
    rejections,
    variant: null,
    route: null,
    execution: null,
    score: null,
    total_centi: null,
    flags: [],
  };
}

/** Scratch space of `rank`, grown as needed and reused: the engine is synchronous, one decision at a time. */
let keySpace = new Float64Array(0);
let intKeySpace = new Int32Array(0);
const INT32_MAX = 0x7fffffff;
let ofRankSpace = new Int32Array(0);

function intKeys(count: number): Int32Array {
  if (intKeySpace.length < count) intKeySpace = new Int32Array(Math.max(count, 2 * intKeySpace.length));
  return intKeySpace.subarray(0, count);
}

function floatKeys(count: number): Float64Array {
  if (keySpace.length < count) keySpace = new Float64Array(Math.max(count, 2 * keySpace.length));
  return keySpace.subarray(0, count);
}

/**
 * The ranked candidates: eligible by total descending, then node id ascending; the rejected follow, by node id. Node
 * ids are compared by their rank among all ids (node-slots.ts), never as strings: the eligible are sorted on one
 * number per node (the total's shortfall from the best, then the id's rank), and the rejected are collected by
 * walking the ranks, with no sort.
 *
 * `eligible[e]` is the report of the node at list position `eligiblePositions[e]`; `rejectedAt[p]` the report of
 * the node at position `p` when it was rejected. `order[k]` is set to the eligible index `e` of `ranked[k]`.
 */
export function rank(
  eligible: readonly NodeReport[],
  eligiblePositions: readonly number[],
  rejectedAt: readonly (NodeReport | undefined)[],
  slots: NodeSlots,
  order: Int32Array,
): NodeReport[] {
  const n = slots.rank.length;
  const count = eligible.length;
  const out: NodeReport[] = [];
  let best = 0;
  let least = 0;
  for (let e = 0; e < count; e++) {
    const total = (eligible[e] as NodeReport).total_centi as number;
    if (total > best) best = total;
    if (total < least) least = total;
  }
  const span = (best - least + 1) * n;
  if (span <= Number.MAX_SAFE_INTEGER) {
    // One exact integer per node: (best − total) · n + rank; ascending is total descending, then id ascending. In an
    // Int32Array when the keys fit (it sorts faster than a Float64Array, and its `% n` is an integer remainder, not a
    // floating one: issue 35, the float key's sort and remainder were a fifth of `decide` at 1,000 nodes).
    const keys = span <= INT32_MAX ? intKeys(count) : floatKeys(count);
    if (ofRankSpace.length < n) ofRankSpace = new Int32Array(n);
    const ofRank = ofRankSpace;
    for (let e = 0; e < count; e++) {
      const r = slots.rank[eligiblePositions[e] as number] as number;
      keys[e] = (best - ((eligible[e] as NodeReport).total_centi as number)) * n + r;
      ofRank[r] = e;
    }
    keys.sort();
    for (let k = 0; k < count; k++) {
      const e = ofRank[(keys[k] as number) % n] as number;
      order[k] = e;
      out.push(eligible[e] as NodeReport);
    }
  } else {
    const sorted = Array.from({ length: count }, (_, e) => e);
    const total = (e: number) => (eligible[e] as NodeReport).total_centi as number;
    const idRank = (e: number) => slots.rank[eligiblePositions[e] as number] as number;
    sorted.sort((x, y) => total(y) - total(x) || idRank(x) - idRank(y));
    for (let k = 0; k < count; k++) {
      const e = sorted[k] as number;
      order[k] = e;
      out.push(eligible[e] as NodeReport);
    }
  }
  for (let r = 0; r < n; r++) {
    const report = rejectedAt[slots.byRank[r] as number];
    if (report !== undefined) out.push(report);
  }
  return out;
}

export type Selection =
  | {
      readonly kind: "placed";
      readonly node_id: NodeId;
      readonly flags: readonly Flag[];
      /** The winner's position in the ranked list. */
      readonly index: number;
    }
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

/** `marks` bits (node-slots.ts `markIds`), by list position: the node is named in `prefer`, in `avoid`. */
export const PREFERRED = 4;
export const AVOIDED = 8;

/**
 * §8.6 over the ranked list, whose first `eligibleCount` entries are the eligible (`rank`); `positionOf(k)` is the
 * list position of `ranked[k]` and `marks` the PREFERRED and AVOIDED bits per list position. The pool (`poolOf`)
 * is walked in place rather than copied: it is the eligible nodes, or only the non-emulated ones when there are any.
 */
export function select(
  ranked: readonly NodeReport[],
  eligibleCount: number,
  positionOf: (k: number) => number,
  marks: Uint8Array,
  request: PlacementRequest,
  describe: (id: string) => string,
): Selection {
  if (request.pin !== null) {
    const pin = request.pin;
    const index = ranked.findIndex((r) => r.node_id === pin);
    const pinned = ranked[index];
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
    return { kind: "placed", node_id: pinned.node_id, flags: withFlags(pinned.flags, "pinned"), index };
  }
  let nativeOnly = false;
  for (let k = 0; k < eligibleCount; k++) {
    if ((ranked[k] as NodeReport).execution !== "emulated") {
      nativeOnly = true;
      break;
    }
  }
  let top = -1;
  let preferred = -1;
  let unavoided = -1;
  const anyPreferred = request.prefer.length > 0;
  for (let k = 0; k < eligibleCount; k++) {
    if (nativeOnly && (ranked[k] as NodeReport).execution === "emulated") continue;
    if (top < 0) top = k;
    const mark = marks[positionOf(k)] as number;
    if ((mark & PREFERRED) !== 0) {
      preferred = k;
      break;
    }
    if (unavoided < 0 && (mark & AVOIDED) === 0) {
      unavoided = k;
      if (!anyPreferred) break;
    }
  }
  if (top < 0) return { kind: "unplaceable" };
  const index = preferred >= 0 ? preferred : unavoided >= 0 ? unavoided : top;
  const winner = ranked[index] as NodeReport;
  const flags = index === top ? withFlags(winner.flags) : withFlags(winner.flags, "affinity");
  return { kind: "placed", node_id: winner.node_id, flags, index };
}

/**
 * A copy of a report with other flags, written out member by member in `rejectedReport`'s order rather than spread:
 * the copy then has the same shape as every other report, so the engine's loops over candidates stay monomorphic
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

/**
 * The winner's report carries the selection flags too, so explain shows `[affinity]` on its candidate line. The
 * ranked list is the decision's own (decide.ts made it): its winner entry is replaced in place.
 */
export function applySelection(
  ranked: NodeReport[],
  selection: Extract<Selection, { kind: "placed" }>,
  accelerator: string | null,
): { readonly candidates: NodeReport[]; readonly placement: Placement } {
  const w = withReportFlags(ranked[selection.index] as NodeReport, selection.flags);
  ranked[selection.index] = w;
  if (
    !w.eligible ||
    w.variant === null ||
    w.route === null ||
    w.execution === null ||
    w.score === null ||
    w.total_centi === null
  ) {
    throw new Error("bug: the selected node is not an eligible candidate");
  }
  return {
    candidates: ranked,
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

/** One entry of the list dispatch tries in order. */
export interface DispatchCandidate {
  readonly node_id: NodeId;
  readonly variant: string;
  readonly route: Route;
}

/**
 * §9.2 step 8: the winner first; then, only without a pin, every other eligible candidate in rank order, pool
 * members first, then the emulated ones. With a pin, only the pinned node. Empty when nothing was placed.
 */
export function dispatchOrder(decision: PlacementDecision): DispatchCandidate[] {
  const placement = decision.placement;
  if (placement === null) return [];
  const first: DispatchCandidate = { node_id: placement.node_id, variant: placement.variant, route: placement.route };
  if (decision.pin !== null) return [first];
  const pool = poolOf(decision.candidates);
  const poolIds = new Set(pool.map((r) => r.node_id));
  const rest = decision.candidates.filter((r) => r.eligible && !poolIds.has(r.node_id));
  const order = [first];
  for (const r of [...pool, ...rest]) {
    if (r.node_id === placement.node_id || r.variant === null || r.route === null) continue;
    order.push({ node_id: r.node_id, variant: r.variant, route: r.route });
  }
  return order;
}
