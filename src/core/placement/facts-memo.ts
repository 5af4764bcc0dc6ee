/**
 * What a node's facts alone decide, worked out once per facts object and request shape rather than once per decision
 * (issue 35: at 1,000 nodes this was most of a decision's cost). A controller hands the engine the same facts objects
 * until it describes the node again, so consecutive decisions over one view meet them again.
 *
 * - A **request shape** is what of a request these answers depend on: requirements, variants, whether emulation is
 *   allowed, the fallback boards, preferences and the perf metric. Equal shapes (as canonical JSON) are one interned
 *   object, prepared once (requirement lookups resolved, variants read), so a facts object's answers are found by
 *   identity, not by comparing a long key string per node.
 * - A **facts memo** holds, per facts object (by identity, in a WeakMap: the entry goes with the facts): the
 *   self-asserted trust refusal (§3.4), the capability index, the few numbers scoring reads, and per request shape
 *   the requirements' and route's rejections, the fit, the locality score and the measured perf value.
 *
 * Pure functions of immutable inputs: a hit gives exactly what computing it would (the property tests in
 * decide.test.ts and reference.test.ts).
 */
import {
  CapabilityIndex,
  checkPreparedRequirement,
  meetsRequirement,
  type PreparedRequirement,
  prepareRequirement,
} from "./capabilities.js";
import type { NodeFacts, PlacementRequest } from "./inputs.js";
import type { Rejection } from "./outputs.js";
import { chooseRoute, type PreparedVariant, prepareVariants, type RouteContext, type RouteFit } from "./route.js";

export type Fit = Extract<RouteFit, { kind: "fits" }>;

/** What of a request a node's facts are matched against; one object per distinct shape (`shapeOf`). */
export interface RequestShape {
  readonly requirements: readonly PreparedRequirement[];
  readonly variants: readonly PreparedVariant[];
  readonly route: RouteContext;
  readonly preferences: readonly { readonly requirement: PreparedRequirement; readonly centi: number }[];
  readonly perf: PlacementRequest["spec"]["perf"];
}

/** Distinct shapes remembered; beyond this the oldest is forgotten (and prepared again if it comes back). */
const SHAPES = 256;
const shapes = new Map<string, RequestShape>();

/** The interned shape of a request (one JSON rendering per decision). */
export function shapeOf(request: PlacementRequest): RequestShape {
  const { spec, weights } = request;
  const key = JSON.stringify([
    spec.requirements,
    spec.variants,
    request.allow_emulated,
    weights.fallback_boards,
    spec.preferences,
    spec.perf,
  ]);
  const known = shapes.get(key);
  if (known !== undefined) return known;
  const made: RequestShape = {
    requirements: spec.requirements.map(prepareRequirement),
    variants: prepareVariants(spec.variants),
    route: { allowEmulated: request.allow_emulated, fallbackBoards: weights.fallback_boards },
    preferences: spec.preferences.map((p) => ({
      requirement: prepareRequirement(p.requirement),
      centi: p.weight * 100,
    })),
    perf: spec.perf,
  };
  if (shapes.size >= SHAPES) {
    const oldest = shapes.keys().next();
    if (oldest.done !== true) shapes.delete(oldest.value);
  }
  shapes.set(key, made);
  return made;
}

/** A facts object's answers for one request shape. */
export interface ShapeFit {
  /** The requirements' and the route's rejections (constraints `requirements` and `emulation_not_allowed`). */
  readonly rejections: readonly Rejection[];
  /** The chosen variant and route, null unless every requirement held. */
  readonly fit: Fit | null;
  /** The preferences this node meets, in `_centi` (scoring's locality component); computed on first need. */
  locality: number;
  /** The node's best `measured` value for the shape's perf metric, or null; with `locality`. */
  measured: number | null;
  scored: boolean;
}

export interface FactsMemo {
  /** `facts refused: …` when the facts assert trust (§3.4): the node then has no facts. */
  readonly refusal: Rejection | null;
  readonly capabilities: CapabilityIndex;
  /** The members of the facts every decision reads, copied here so a decision reads one object per node. */
  readonly name: string;
  readonly issuedAtMs: number;
  readonly availableBytes: number;
  readonly totalBytes: number;
  readonly load1Milli: number | null;
  readonly cpuCount: number;
  /** Whether the node has any accelerator (scoring's accel_fit when the workload uses none). */
  readonly anyAccelerator: boolean;
  /**
   * The shape the fields below answer for (`useShape`), and its entry in `fits`: consecutive decisions of one shape
   * read them here, in the one object a decision reads per node, without the map.
   */
  shape: RequestShape | null;
  current: ShapeFit | null;
  rejections: readonly Rejection[];
  fit: Fit | null;
  scored: boolean;
  locality: number;
  measured: number | null;
  readonly fits: Map<RequestShape, ShapeFit>;
}

/** Distinct shapes remembered per facts object: beyond this the oldest is forgotten (many packages, one view). */
const FITS_PER_FACTS = 32;

const memos = new WeakMap<NodeFacts, FactsMemo>();

const NO_REJECTIONS: readonly Rejection[] = [];

export function memoOf(facts: NodeFacts): FactsMemo {
  let memo = memos.get(facts);
  if (memo === undefined) {
    const refusal = selfAssertedTrust(facts);
    memo = {
      refusal: refusal === null ? null : { constraint: "facts_expired", detail: refusal },
      capabilities: new CapabilityIndex(facts),
      name: facts.name,
      issuedAtMs: facts.issued_at_ms,
      availableBytes: facts.memory.available_bytes,
      totalBytes: facts.memory.total_bytes,
      load1Milli: facts.cpu.load1_milli,
      cpuCount: facts.cpu.count,
      anyAccelerator: hasAnyAccelerator(facts),
      shape: null,
      current: null,
      rejections: NO_REJECTIONS,
      fit: null,
      scored: false,
      locality: 0,
      measured: null,
      fits: new Map(),
    };
    memos.set(facts, memo);
  }
  return memo;
}

/** Makes the memo answer for `shape` (`rejections`, `fit`, and once scored `locality` and `measured`). */
export function useShape(memo: FactsMemo, shape: RequestShape): void {
  if (memo.shape === shape) return;
  let known = memo.fits.get(shape);
  if (known === undefined) {
    known = computeFit(memo.capabilities, shape);
    if (memo.fits.size >= FITS_PER_FACTS) {
      const oldest = memo.fits.keys().next();
      if (oldest.done !== true) memo.fits.delete(oldest.value);
    }
    memo.fits.set(shape, known);
  }
  memo.shape = shape;
  memo.current = known;
  memo.rejections = known.rejections;
  memo.fit = known.fit;
  memo.scored = known.scored;
  memo.locality = known.locality;
  memo.measured = known.measured;
}

/** Fills in what scoring reads (`locality`, `measured`) for the memo's shape: only eligible nodes pay for it. */
export function useScored(memo: FactsMemo, shape: RequestShape): void {
  if (memo.scored) return;
  let locality = 0;
  for (const p of shape.preferences) if (meetsRequirement(memo.capabilities, p.requirement)) locality += p.centi;
  const measured =
    shape.perf === null ? null : measuredValue(memo.capabilities.facts, shape.perf.metric, shape.perf.direction);
  memo.locality = locality;
  memo.measured = measured;
  memo.scored = true;
  const current = memo.current as ShapeFit;
  current.locality = locality;
  current.measured = measured;
  current.scored = true;
}

function computeFit(capabilities: CapabilityIndex, shape: RequestShape): ShapeFit {
  const rejections: Rejection[] = [];
  let fit: Fit | null = null;
  for (const req of shape.requirements) {
    const check = checkPreparedRequirement(capabilities, req);
    if (!check.ok) rejections.push({ constraint: "requirements", detail: check.error });
  }
  const route = chooseRoute(shape.variants, capabilities, shape.route);
  switch (route.kind) {
    case "fits":
      fit = route;
      break;
    case "none":
      for (const m of route.misfits)
        rejections.push({ constraint: "requirements", detail: `variant ${m.variant}: ${m.why}` });
      break;
    case "emulation_not_allowed":
      rejections.push({
        constraint: "emulation_not_allowed",
        detail: `only emulated route(s) fit (${route.emulated.join(", ")}); emulation needs allow_emulated`,
      });
      break;
    default: {
      const unreachable: never = route;
      return unreachable;
    }
  }
  return { rejections, fit: rejections.length === 0 ? fit : null, locality: 0, measured: null, scored: false };
}

/** §3.4: facts that assert trust are refused whole, so the node has no facts. The shell should already have. */
function selfAssertedTrust(facts: NodeFacts): string | null {
  for (const c of facts.capabilities) {
    if (c.id === "trust" || c.id.startsWith("trust.")) {
      return `facts refused: capability ${c.id} asserts trust, which only the operator assigns`;
    }
  }
  for (const key in facts.labels) {
    if (Object.hasOwn(facts.labels, key) && key.startsWith("berth.io/tier")) {
      return `facts refused: label ${key} asserts a tier, which only the operator assigns`;
    }
  }
  return null;
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
