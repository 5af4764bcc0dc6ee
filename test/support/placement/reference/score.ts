/**
 * Scoring (spec/mesh.md §8.5): only eligible nodes are scored, each component in integer hundredths of a point
 * (`_centi`), computed exactly and rounded half up once. No floating-point result ever reaches a decision, so a
 * chained decision hashes the same on every machine.
 *
 * Two components compare a node with the others (accel_fit against the smallest assigned accelerator, perf
 * against the best measured value), so scoring takes the whole eligible set, not one node.
 */

import {
  type ClusterInstance,
  type NodeFacts,
  type PlacementRequest,
  PROVENANCE_RANK,
  type Requirement,
} from "../../../../src/core/placement/inputs.js";
import type { Flag, ScoreBreakdown } from "../../../../src/core/placement/outputs.js";
import { type CapabilityIndex, meetsRequirement, predicateHolds, prepareRequirement } from "./capabilities.js";
import type { Fit } from "./constraints.js";

/** An eligible node as scoring needs it. */
export interface Scorable {
  readonly node_id: string;
  readonly facts: NodeFacts;
  readonly fit: Fit;
  readonly capabilities: CapabilityIndex;
}

export interface Scored {
  readonly score: ScoreBreakdown;
  readonly total_centi: number;
  /** Node-level flags only (`emulated`, `load_unknown`, `unmeasured`); selection adds `affinity` and `pinned`. */
  readonly flags: readonly Flag[];
  readonly accelerator: string | null;
}

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

function hasAnyAccelerator(facts: NodeFacts): boolean {
  return facts.accelerators.length > 0 || facts.capabilities.some((c) => c.id === "accel" || c.id.startsWith("accel."));
}

/** The node's own best `measured` value for the metric, or null. */
function measuredValue(facts: NodeFacts, metric: string, direction: "lower" | "higher"): number | null {
  let best: number | null = null;
  for (const p of facts.perf) {
    if (p.metric !== metric || p.provenance !== "measured") continue;
    if (best === null || (direction === "lower" ? p.value_milli < best : p.value_milli > best)) best = p.value_milli;
  }
  return best;
}

/** weight × a ÷ b, with 0 ÷ 0 read as a perfect ratio (every compared value is zero). */
function ratioScore(weightCenti: number, a: number, b: number): number {
  if (b === 0) return a === 0 ? weightCenti : 0;
  return mulDivHalfUp(weightCenti, a, b);
}

/** What is already placed on one node: its instances and the memory they declared. */
export interface PlacedLoad {
  readonly count: number;
  readonly memory_bytes: number;
}

const NOTHING_PLACED: PlacedLoad = { count: 0, memory_bytes: 0 };

/** The placed load per node id, from the cluster's instances (one pass; order-independent). */
export function placedLoads(instances: readonly ClusterInstance[]): ReadonlyMap<string, PlacedLoad> {
  const out = new Map<string, PlacedLoad>();
  for (const i of instances) {
    const was = out.get(i.node_id) ?? NOTHING_PLACED;
    out.set(i.node_id, { count: was.count + 1, memory_bytes: was.memory_bytes + i.memory_bytes });
  }
  return out;
}

/** Millionths of the node's memory that placed instances declared, capped at the whole (an exact integer). */
function memoryShareMicro(placed: PlacedLoad, facts: NodeFacts): number {
  const total = facts.memory.total_bytes;
  if (placed.memory_bytes === 0 || total === 0) return 0;
  return mulDivHalfUp(1_000_000, Math.min(placed.memory_bytes, total), total);
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

/**
 * What scoring reads from one node's facts for one request shape (its preferences and perf metric), memoised per facts
 * object (issue 35, as constraints.ts `fitOf`): a controller hands the engine the same facts objects until it
 * describes the node again. A pure function of immutable inputs, so a hit gives exactly what computing it would.
 */
interface FactsScoreParts {
  readonly locality_centi: number;
  readonly measured: number | null;
  readonly anyAccelerator: boolean;
}

const PARTS_PER_FACTS = 32;
const scoreMemos = new WeakMap<NodeFacts, Map<string, FactsScoreParts>>();

function scorePartsOf(
  n: Scorable,
  key: string,
  preferences: ReadonlyArray<{ readonly requirement: ReturnType<typeof prepareRequirement>; readonly centi: number }>,
  perf: PlacementRequest["spec"]["perf"],
): FactsScoreParts {
  let byKey = scoreMemos.get(n.facts);
  if (byKey === undefined) {
    byKey = new Map();
    scoreMemos.set(n.facts, byKey);
  }
  const known = byKey.get(key);
  if (known !== undefined) return known;
  let locality_centi = 0;
  for (const p of preferences) if (meetsRequirement(n.capabilities, p.requirement)) locality_centi += p.centi;
  const made: FactsScoreParts = {
    locality_centi,
    measured: perf === null ? null : measuredValue(n.facts, perf.metric, perf.direction),
    anyAccelerator: hasAnyAccelerator(n.facts),
  };
  if (byKey.size >= PARTS_PER_FACTS) {
    const oldest = byKey.keys().next();
    if (oldest.done !== true) byKey.delete(oldest.value);
  }
  byKey.set(key, made);
  return made;
}

/** The score of every eligible node, in the order of `nodes` (`result[i]` is `nodes[i]`'s). */
export function scoreEligible(
  nodes: readonly Scorable[],
  request: PlacementRequest,
  placed: ReadonlyMap<string, PlacedLoad> = new Map(),
): Scored[] {
  const { spec, weights } = request;
  const variants = new Map(spec.variants.map((v) => [v.id, v] as const));
  const commonAccel = spec.requirements.filter(isAccelRequirement);
  const preferences = spec.preferences.map((p) => ({
    requirement: prepareRequirement(p.requirement),
    centi: p.weight * 100,
  }));
  const partsKey = JSON.stringify([spec.preferences, spec.perf]);
  const parts: FactsScoreParts[] = [];

  // First pass: the per-node values the relative components compare, by position in `nodes`.
  const accel: Array<{ id: string; mem_bytes: number } | null> = [];
  const perf: Array<number | null> = [];
  // Per eligible node, by position: its placed instance count and declared-memory share (millionths).
  const placedCount: number[] = [];
  const placedShare: number[] = [];
  let mostCount = 0;
  let mostShare = 0;
  let smallestAccelMem: number | null = null;
  let bestPerf: number | null = null;
  for (const n of nodes) {
    const factsParts = scorePartsOf(n, partsKey, preferences, spec.perf);
    parts.push(factsParts);
    const p = placed.size === 0 ? undefined : placed.get(n.node_id);
    const count = p === undefined ? 0 : p.count;
    const share = p === undefined ? 0 : memoryShareMicro(p, n.facts);
    placedCount.push(count);
    placedShare.push(share);
    if (count > mostCount) mostCount = count;
    if (share > mostShare) mostShare = share;
    if (spec.uses_accelerator) {
      const variant = variants.get(n.fit.variant);
      const reqs = variant ? [...commonAccel, ...variant.requires.filter(isAccelRequirement)] : commonAccel;
      const a = assignedAccelerator(n.facts, reqs);
      accel.push(a);
      if (a !== null && (smallestAccelMem === null || a.mem_bytes < smallestAccelMem)) smallestAccelMem = a.mem_bytes;
    }
    if (spec.perf !== null) {
      const v = factsParts.measured;
      perf.push(v);
      if (v !== null && (bestPerf === null || (spec.perf.direction === "lower" ? v < bestPerf : v > bestPerf)))
        bestPerf = v;
    }
  }

  const execution = {
    native: centi(weights.execution.native),
    fallback: centi(weights.execution.fallback),
    emulated: centi(weights.execution.emulated),
  };
  const accelW = centi(weights.accel_fit);
  const perfW = centi(weights.perf);
  const loadW = centi(weights.load);
  const placedW = centi(weights.placed);
  const spread = request.strategy === "spread";
  const stickyW = centi(spec.policy.sticky ? weights.sticky : weights.stickiness);

  const out: Scored[] = [];
  for (const [i, n] of nodes.entries()) {
    const flags: Flag[] = [];
    if (n.fit.execution === "emulated") flags.push("emulated");

    const execution_centi = execution[n.fit.execution];

    const factsParts = parts[i] as FactsScoreParts;
    const locality_centi = factsParts.locality_centi;

    let accel_fit_centi = 0;
    let accelerator: string | null = null;
    if (!spec.uses_accelerator) {
      accel_fit_centi = factsParts.anyAccelerator ? 0 : accelW;
    } else {
      const a = accel[i] ?? null;
      if (a !== null && smallestAccelMem !== null) {
        accelerator = a.id;
        accel_fit_centi = ratioScore(accelW, smallestAccelMem, a.mem_bytes);
      }
    }

    let perf_centi = 0;
    if (spec.perf !== null) {
      const v = perf[i] ?? null;
      if (v === null || bestPerf === null) flags.push("unmeasured");
      else
        perf_centi = spec.perf.direction === "lower" ? ratioScore(perfW, bestPerf, v) : ratioScore(perfW, v, bestPerf);
    }

    let load_cpu_centi = 0;
    const { load1_milli, count } = n.facts.cpu;
    if (load1_milli === null || count === 0) flags.push("load_unknown");
    else {
      const capacity = 1000 * count;
      load_cpu_centi = mulDivHalfUp(loadW, capacity - Math.min(capacity, load1_milli), capacity);
    }
    const load_placed_centi =
      mostCount === 0 ? 0 : placedPart(placedW, spread, placedCount[i] ?? 0, placedShare[i] ?? 0, mostCount, mostShare);
    const load_centi = load_cpu_centi + load_placed_centi;

    const stickiness_centi = request.current_node !== null && request.current_node === n.node_id ? stickyW : 0;

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
    const total_centi = execution_centi + locality_centi + accel_fit_centi + perf_centi + load_centi + stickiness_centi;
    flags.sort();
    out.push({ score, total_centi, flags, accelerator });
  }
  return out;
}
