/**
 * Scoring (spec/mesh.md §8.5): only eligible nodes are scored, each component in integer hundredths of a point
 * (`_centi`), computed exactly and rounded half up once. No floating-point result ever reaches a decision, so a
 * chained decision hashes the same on every machine.
 *
 * Two components compare a node with the others (accel_fit against the smallest assigned accelerator, perf
 * against the best measured value, the placed load against the most-placed node), so scoring takes the whole
 * eligible set, not one node: a first pass reads what is compared, a second builds each node's report. What a
 * node's facts alone give (locality, the measured perf value, whether it has an accelerator) comes from its facts
 * memo (facts-memo.ts, issue 35).
 */

import { predicateHolds } from "./capabilities.js";
import type { NodeHistory } from "./constraints.js";
import type { RequestShape } from "./facts-memo.js";
import { type FactsMemo, type Fit, useScored } from "./facts-memo.js";
import {
  type NodeFacts,
  type NodeView,
  type PlacementRequest,
  PROVENANCE_RANK,
  type Requirement,
  type Variant,
} from "./inputs.js";
import type { Flag, NodeReport, ScoreBreakdown } from "./outputs.js";

/** A weight with at most two decimals as an exact integer number of hundredths. */
export function centi(weight: number): number {
  return Math.round(weight * 100);
}

/**
 * round_half_up(a × b ÷ c) for non-negative safe integers, c > 0, exact: a float quotient can land on the wrong
 * side of an integer, so the candidate is corrected with integer arithmetic, and BigInt takes over past 2^53.
 */
export function mulDivHalfUp(a: number, b: number, c: number): number {
  const product = a * b;
  const numerator = 2 * product + c;
  const denominator = 2 * c;
  if (Number.isSafeInteger(numerator) && Number.isSafeInteger(denominator)) {
    let q = Math.floor(numerator / denominator);
    while (q > 0 && q * denominator > numerator) q -= 1;
    while ((q + 1) * denominator <= numerator) q += 1;
    return q;
  }
  return Number((2n * BigInt(a) * BigInt(b) + BigInt(c)) / (2n * BigInt(c)));
}

function isAccelRequirement(r: Requirement): boolean {
  const sel = r.id ?? r.id_prefix ?? "";
  return sel === "accel" || sel.startsWith("accel.");
}

/**
 * The accelerator a node would give this workload: among its accelerators that satisfy every accelerator
 * requirement of the workload and the chosen variant (any accelerator if none names one), the one with the
 * least memory, then the lowest id: the tightest fit, leaving larger devices for workloads that need them.
 */
export function assignedAccelerator(
  facts: NodeFacts,
  accelRequirements: readonly Requirement[],
): { readonly id: string; readonly mem_bytes: number } | null {
  let best: { id: string; mem_bytes: number } | null = null;
  for (const a of facts.accelerators) {
    const cap = { id: a.id, attrs: { mem_bytes: a.mem_bytes, count: a.count }, provenance: a.provenance };
    const ok = accelRequirements.every((r) => {
      const named = r.id !== undefined ? a.id === r.id : a.id === r.id_prefix || a.id.startsWith(`${r.id_prefix}.`);
      return (
        named &&
        PROVENANCE_RANK[a.provenance] >= PROVENANCE_RANK[r.min_provenance] &&
        r.where.every((p) => predicateHolds(cap, p))
      );
    });
    if (!ok) continue;
    if (best === null || a.mem_bytes < best.mem_bytes || (a.mem_bytes === best.mem_bytes && a.id < best.id)) {
      best = { id: a.id, mem_bytes: a.mem_bytes };
    }
  }
  return best;
}

/** weight × a ÷ b, with 0 ÷ 0 read as a perfect ratio (every compared value is zero). */
function ratioScore(weightCenti: number, a: number, b: number): number {
  if (b === 0) return a === 0 ? weightCenti : 0;
  return mulDivHalfUp(weightCenti, a, b);
}

/** Millionths of the node's memory that placed instances declared, capped at the whole (an exact integer). */
function memoryShareMicro(memoryBytes: number, total: number): number {
  if (memoryBytes === 0 || total === 0) return 0;
  return mulDivHalfUp(1_000_000, Math.min(memoryBytes, total), total);
}

/** weight × (most − value) ÷ most under `spread`, weight × value ÷ most under `binpack`; 0 when nothing is placed. */
function placedRatio(weightCenti: number, spread: boolean, value: number, most: number): number {
  if (most === 0) return 0;
  return mulDivHalfUp(weightCenti, spread ? most - value : value, most);
}

/**
 * The placed part of the load dimension for one node (issue 16): its instance count and its placed-memory share,
 * each against the most-placed eligible node, averaged (memory only counts when some instance declared memory).
 * `spread` gives the weight to the least-placed, `binpack` to the most-placed; nothing placed anywhere gives 0 to
 * every node, so a cluster without instances scores as before.
 */
function placedPart(
  weightCenti: number,
  spread: boolean,
  count: number,
  share: number,
  mostCount: number,
  mostShare: number,
): number {
  const byCount = placedRatio(weightCenti, spread, count, mostCount);
  if (mostShare === 0) return byCount;
  return Math.floor((byCount + placedRatio(weightCenti, spread, share, mostShare) + 1) / 2);
}

const NO_REJECTIONS: NodeReport["rejections"] = [];

/** The scored reports of the eligible nodes (`views[i]` judged `assessments[i]`), in that order. */
export interface ScoredSet {
  readonly reports: NodeReport[];
  /** Per report, the accelerator the node would give the workload; `null` when the workload uses none. */
  readonly accelerators: readonly (string | null)[] | null;
}

/** The workload's accelerator requirements with those of the chosen variant, per variant id (`common` for another). */
function accelRequirementsByVariant(spec: PlacementRequest["spec"]): {
  readonly common: readonly Requirement[];
  readonly byVariant: ReadonlyMap<string, readonly Requirement[]>;
} {
  const common = spec.requirements.filter(isAccelRequirement);
  const byVariant = new Map<string, readonly Requirement[]>();
  for (const v of spec.variants as readonly Variant[])
    byVariant.set(v.id, [...common, ...v.requires.filter(isAccelRequirement)]);
  return { common, byVariant };
}

/**
 * The eligible nodes as scoring reads them, by index: the view, its facts memo (answering for the request's shape,
 * facts-memo.ts `useShape`) and its history.
 */
export interface EligibleSet {
  readonly views: readonly NodeView[];
  readonly memos: readonly FactsMemo[];
  readonly histories: readonly (NodeHistory | undefined)[];
}

/** The score of every eligible node, as its report, in the order of `eligible`. */
export function scoreEligible(eligible: EligibleSet, request: PlacementRequest, shape: RequestShape): ScoredSet {
  const { spec, weights } = request;
  const { views, memos, histories } = eligible;
  const n = views.length;

  // First pass: what the relative components compare.
  let accel: Array<{ id: string; mem_bytes: number } | null> | null = null;
  const accelReqs = spec.uses_accelerator ? accelRequirementsByVariant(spec) : null;
  const placedCount: number[] = new Array(n);
  const placedShare: number[] = new Array(n);
  let mostCount = 0;
  let mostShare = 0;
  let smallestAccelMem: number | null = null;
  let bestPerf: number | null = null;
  const perfDirection = spec.perf === null ? null : spec.perf.direction;
  for (let i = 0; i < n; i++) {
    const memo = memos[i] as FactsMemo;
    useScored(memo, shape);
    const h = histories[i];
    const count = h === undefined ? 0 : h.count;
    const share = h === undefined ? 0 : memoryShareMicro(h.memory_bytes, memo.totalBytes);
    placedCount[i] = count;
    placedShare[i] = share;
    if (count > mostCount) mostCount = count;
    if (share > mostShare) mostShare = share;
    if (accelReqs !== null) {
      accel ??= new Array(n);
      const variant = (memo.fit as Fit).variant;
      const assigned = assignedAccelerator(
        memo.capabilities.facts,
        accelReqs.byVariant.get(variant) ?? accelReqs.common,
      );
      accel[i] = assigned;
      if (assigned !== null && (smallestAccelMem === null || assigned.mem_bytes < smallestAccelMem))
        smallestAccelMem = assigned.mem_bytes;
    }
    if (perfDirection !== null) {
      const v = memo.measured;
      if (v !== null && (bestPerf === null || (perfDirection === "lower" ? v < bestPerf : v > bestPerf))) bestPerf = v;
    }
  }

  const executionNative = centi(weights.execution.native);
  const executionFallback = centi(weights.execution.fallback);
  const executionEmulated = centi(weights.execution.emulated);
  const accelW = centi(weights.accel_fit);
  const perfW = centi(weights.perf);
  const loadW = centi(weights.load);
  const placedW = centi(weights.placed);
  const spread = request.strategy === "spread";
  const stickyW = centi(spec.policy.sticky ? weights.sticky : weights.stickiness);
  const current = request.current_node;

  const reports: NodeReport[] = new Array(n);
  const accelerators: (string | null)[] | null = accel === null ? null : new Array(n);
  for (let i = 0; i < n; i++) {
    const view = views[i] as NodeView;
    const memo = memos[i] as FactsMemo;
    const fit = memo.fit as Fit;
    const emulated = fit.execution === "emulated";
    const execution_centi = emulated
      ? executionEmulated
      : fit.execution === "native"
        ? executionNative
        : executionFallback;
    const locality_centi = memo.locality;

    let accel_fit_centi = 0;
    if (accel === null) {
      accel_fit_centi = memo.anyAccelerator ? 0 : accelW;
      if (accelerators !== null) accelerators[i] = null;
    } else {
      const a = accel[i] ?? null;
      let accelerator: string | null = null;
      if (a !== null && smallestAccelMem !== null) {
        accelerator = a.id;
        accel_fit_centi = ratioScore(accelW, smallestAccelMem, a.mem_bytes);
      }
      if (accelerators !== null) accelerators[i] = accelerator;
    }

    let unmeasured = false;
    let perf_centi = 0;
    if (perfDirection !== null) {
      const v = memo.measured;
      if (v === null || bestPerf === null) unmeasured = true;
      else perf_centi = perfDirection === "lower" ? ratioScore(perfW, bestPerf, v) : ratioScore(perfW, v, bestPerf);
    }

    let loadUnknown = false;
    let load_cpu_centi = 0;
    const load1_milli = memo.load1Milli;
    const count = memo.cpuCount;
    if (load1_milli === null || count === 0) loadUnknown = true;
    else {
      const capacity = 1000 * count;
      load_cpu_centi = mulDivHalfUp(loadW, capacity - Math.min(capacity, load1_milli), capacity);
    }
    const load_placed_centi =
      mostCount === 0
        ? 0
        : placedPart(placedW, spread, placedCount[i] as number, placedShare[i] as number, mostCount, mostShare);
    const load_centi = load_cpu_centi + load_placed_centi;

    const stickiness_centi = current !== null && current === view.node_id ? stickyW : 0;

    const score: ScoreBreakdown = {
      execution_centi,
      locality_centi,
      accel_fit_centi,
      perf_centi,
      load_centi,
      load_cpu_centi,
      load_placed_centi,
      stickiness_centi,
    };
    // Flags in their sorted order (outputs.ts FLAGS): emulated, load_unknown, unmeasured.
    const flags: Flag[] = [];
    if (emulated) flags.push("emulated");
    if (loadUnknown) flags.push("load_unknown");
    if (unmeasured) flags.push("unmeasured");
    reports[i] = {
      node_id: view.node_id,
      name: memo.name,
      eligible: true,
      rejections: NO_REJECTIONS,
      variant: fit.variant,
      route: fit.route,
      execution: fit.execution,
      score,
      total_centi: execution_centi + locality_centi + accel_fit_centi + perf_centi + load_centi + stickiness_centi,
      flags,
    };
  }
  return { reports, accelerators };
}
