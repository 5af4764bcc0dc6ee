/**
 * The placement engine (spec/mesh.md §8): a pure, total, synchronous function from one input to a decision.
 *
 *   validate → constraints (per node) → route (per node) → score (eligible set) → rank → select → decision
 *
 * No clock (time is `cluster.now_ms`), no randomness, no I/O, no gate calls (verdicts are inputs), no branch on
 * `kind`. It never throws: expected failures are `err(error)` (kit/result.ts) with code `invalid_request`,
 * `duplicate_node`, `unknown_pin` or `pin_ineligible`; "nothing fits" is a decision with `placement: null`.
 * Equal inputs give deep-equal outputs whatever the order of `nodes` or `cluster.instances`.
 */
import { err, ok, type Result } from "../../kit/result.js";
import {
  CORDONED_MARK,
  constraintContext,
  historyByPosition,
  type NodeHistory,
  REVOKED,
  rejectionsOf,
} from "./constraints.js";
import { type FactsMemo, useShape } from "./facts-memo.js";
import {
  type ClusterInstance,
  clusterStateSchema,
  type NodeView,
  type PlacedTotal,
  type PlacementInput,
  type PlacementRequest,
  type PlaceVerdict,
  placementInputSchema,
  placementRequestSchema,
  type ScoringWeights,
} from "./inputs.js";
import { isSlots, markIds, positionOf, slotsOf } from "./node-slots.js";
import type { NodeReport, Placement, PlacementDecision, PlacementError, PlacementResult } from "./outputs.js";
import { scoreEligible } from "./score.js";
import { AVOIDED, applySelection, PREFERRED, rank, rejectedReport, select } from "./select.js";

function pathText(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path)
    out += typeof part === "number" ? `[${part}]` : out === "" ? String(part) : `.${String(part)}`;
  return out || "input";
}

/** A placement input the engine may decide on, or why the raw one is not. */
export type ParsedInput = Result<PlacementInput, PlacementError>;

/** The one way from `unknown` to a `PlacementInput`: shape, limits and defaults (inputs.ts). */
export function parsePlacementInput(raw: unknown): ParsedInput {
  const parsed = placementInputSchema.safeParse(raw);
  return parsed.success ? ok(parsed.data) : malformed(parsed.error.issues);
}

function malformed(
  issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[],
): ParsedInput {
  const shown = issues
    .slice(0, 5)
    .map((i) => `${pathText(i.path)}: ${i.message}`)
    .join("; ");
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : "";
  return err({
    code: "invalid_request",
    message: `the placement input is malformed, so no decision was made: ${shown}${more}`,
    constraints: [],
  });
}

/**
 * Issue 19: `parsePlacementInput` for a caller whose node views are already validated: the controller builds each
 * view from its own typed records and facts it parsed with `nodeFactsSchema` when it accepted them (§6.2,
 * src/mesh/controller/facts.ts), once per describe rather than once per decision. The rest of the input (the
 * request and the cluster state) is validated here as always; `decide`'s cross-checks still run on the views.
 */
export function parsePlacementInputWithViews(
  raw: { readonly request: unknown; readonly cluster: unknown },
  nodes: readonly NodeView[],
): ParsedInput {
  const parsed = parsePlacementInput({ request: raw.request, cluster: raw.cluster, nodes: [] });
  return parsed.ok ? ok({ ...parsed.value, nodes: [...nodes] }) : parsed;
}

/**
 * Issue 19: what a controller hands the engine already validated, each part once where it entered the process,
 * rather than once per decision:
 * - `nodes`: views built from the controller's typed records and facts it parsed with `nodeFactsSchema` when it
 *   accepted them (§6.2, src/mesh/controller/facts.ts);
 * - `weights`: parsed with `scoringWeightsSchema` when the controller was made;
 * - `gate`: the controller's own verdicts (`consult`, typed), computed from policy files parsed when read;
 * - `instances` and `placed`: the placement history as the store validated it when each placement was written
 *   (`clusterInstanceSchema`, src/mesh/controller/store-placements.ts; history.ts says which instances).
 */
export interface ValidatedParts {
  readonly nodes: readonly NodeView[];
  readonly weights: ScoringWeights;
  readonly gate: Readonly<Record<string, PlaceVerdict>>;
  readonly instances: readonly ClusterInstance[];
  readonly placed: readonly PlacedTotal[] | null;
}

/** The request without the parts a controller validated earlier: the workload spec and the order's options. */
const orderRequestSchema = placementRequestSchema.omit({ weights: true, gate: true });
/** The cluster state without the placement history: the clock reading, revocations and cordons. */
const clusterMarksSchema = clusterStateSchema.omit({ instances: true, placed: true });

/**
 * `parsePlacementInput` for a controller holding `ValidatedParts`: the request's spec and options and the cluster's
 * clock, revocations and cordons are parsed here, per decision (the spec is built from the package just verified);
 * the rest is taken as validated. `decide`'s cross-checks still run on everything.
 */
export function parsePlacementInputWithParts(
  raw: { readonly request: unknown; readonly cluster: unknown },
  parts: ValidatedParts,
): ParsedInput {
  const request = orderRequestSchema.safeParse(raw.request);
  if (!request.success) return malformed(request.error.issues.map((i) => ({ ...i, path: ["request", ...i.path] })));
  const cluster = clusterMarksSchema.safeParse(raw.cluster);
  if (!cluster.success) return malformed(cluster.error.issues.map((i) => ({ ...i, path: ["cluster", ...i.path] })));
  return ok({
    request: { ...request.data, weights: parts.weights, gate: { ...parts.gate } },
    nodes: [...parts.nodes],
    cluster: {
      ...cluster.data,
      instances: [...parts.instances],
      placed: parts.placed === null ? null : [...parts.placed],
    },
  });
}

function decisionOf(
  request: PlacementRequest,
  candidates: readonly NodeReport[],
  placement: Placement | null,
): PlacementDecision {
  const { spec } = request;
  return {
    name: spec.name,
    kind: spec.kind,
    package_id: spec.package_id,
    allow_emulated: request.allow_emulated,
    pin: request.pin,
    prefer: [...request.prefer],
    avoid: [...request.avoid],
    strategy: request.strategy,
    candidates,
    placement,
  };
}

/** Scratch space of `decide`, grown as needed and reused: the engine is synchronous, one decision at a time. */
let markSpace = new Uint8Array(0);
let orderSpace = new Int32Array(0);

/** Decides where one workload goes. Total on every `PlacementInput` (see `parsePlacementInput` for `unknown`). */
export function decide(input: PlacementInput): PlacementResult {
  const { request, nodes, cluster } = input;
  const slots = slotsOf(nodes);
  if (!isSlots(slots)) return err(slots);
  const n = nodes.length;

  const ctx = constraintContext(request, cluster);
  const { shape } = ctx;
  const history = historyByPosition(cluster.instances, cluster.placed, n, (id) => positionOf(slots, id));
  // What names nodes by id (revocations, cordons, prefer, avoid) as bits per list position, looked up once per id.
  if (markSpace.length < n) markSpace = new Uint8Array(n);
  const marks = markSpace.subarray(0, n);
  marks.fill(0);
  markIds(slots, cluster.revoked_nodes, REVOKED, marks);
  markIds(slots, cluster.cordoned_nodes, CORDONED_MARK, marks);
  markIds(slots, request.prefer, PREFERRED, marks);
  markIds(slots, request.avoid, AVOIDED, marks);

  const views: NodeView[] = [];
  const memos: FactsMemo[] = [];
  const histories: (NodeHistory | undefined)[] = [];
  const positions: number[] = [];
  const rejectedAt: (NodeReport | undefined)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const node = nodes[i] as NodeView;
    const factsMemo = slots.memos[i] as FactsMemo | null;
    const memo = factsMemo !== null && factsMemo.refusal === null ? factsMemo : null;
    if (memo !== null) useShape(memo, shape);
    const here = history[i];
    const rejections = rejectionsOf(node, factsMemo, here, marks[i] as number, ctx);
    if (rejections === null && memo !== null) {
      views.push(node);
      memos.push(memo);
      histories.push(here);
      positions.push(i);
    } else {
      rejectedAt[i] = rejectedReport(node.node_id, memo === null ? null : memo.name, rejections ?? []);
    }
  }
  const { reports, accelerators } = scoreEligible({ views, memos, histories }, request, shape);
  const eligibleCount = reports.length;
  if (orderSpace.length < eligibleCount) orderSpace = new Int32Array(Math.max(eligibleCount, 2 * orderSpace.length));
  const order = orderSpace;
  const ranked = rank(reports, positions, rejectedAt, slots, order);

  const describe = (id: string): string => {
    const name = ranked.find((r) => r.node_id === id)?.name;
    return name ? `${id} (${name})` : id;
  };
  const positionOfRanked = (k: number): number => positions[order[k] as number] as number;
  const selection = select(ranked, eligibleCount, positionOfRanked, marks, request, describe);

  switch (selection.kind) {
    case "error":
      return err(selection.error);
    case "unplaceable":
      return ok(decisionOf(request, ranked, null));
    case "placed": {
      const accelerator = accelerators === null ? null : (accelerators[order[selection.index] as number] ?? null);
      const { candidates, placement } = applySelection(ranked, selection, accelerator);
      return ok(decisionOf(request, candidates, placement));
    }
    default: {
      const unreachable: never = selection;
      return unreachable;
    }
  }
}

/** `parsePlacementInput` then `decide`: for callers holding JSON, e.g. a dry run from the API. */
export function decideUnknown(raw: unknown): PlacementResult {
  const parsed = parsePlacementInput(raw);
  return parsed.ok ? decide(parsed.value) : parsed;
}
