/**
 * The placement engine (spec/mesh.md §8): a pure, total, synchronous function from one input to a decision.
 *
 *   validate → constraints (per node) → route (per node) → score (eligible set) → rank → select → decision
 *
 * No clock (time is `cluster.now_ms`), no randomness, no I/O, no gate calls (verdicts are inputs), no branch on
 * `kind`. It never throws: expected failures are `{ok: false, error}` with code `invalid_request`,
 * `duplicate_node`, `unknown_pin` or `pin_ineligible`; "nothing fits" is a decision with `placement: null`.
 * Equal inputs give deep-equal outputs whatever the order of `nodes` or `cluster.instances`.
 */

import type { PlacementInput, PlacementRequest } from "../../../../src/core/placement/inputs.js";
import type {
  NodeReport,
  Placement,
  PlacementDecision,
  PlacementError,
  PlacementResult,
} from "../../../../src/core/placement/outputs.js";
import { type Assessment, assessNode, constraintContext } from "./constraints.js";
import { placedLoadsOf } from "./history.js";
import { placedLoads, type Scorable, scoreEligible } from "./score.js";
import { applySelection, rank, reportOf, select } from "./select.js";

function failure(error: PlacementError): PlacementResult {
  return { ok: false, error };
}

/** Checks the types cannot express: one view per node, and facts about the node they are filed under. */
function crossCheck(input: PlacementInput): PlacementError | null {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  const misfiled: string[] = [];
  for (const n of input.nodes) {
    if (seen.has(n.node_id)) duplicates.add(n.node_id);
    seen.add(n.node_id);
    if (n.facts !== null && n.facts.node_id !== n.node_id) misfiled.push(n.node_id);
  }
  if (duplicates.size > 0) {
    const ids = [...duplicates].sort().join(", ");
    return {
      code: "duplicate_node",
      message: `node ${ids} appears more than once in the placement input; each target must be listed once`,
      constraints: [],
    };
  }
  if (misfiled.length > 0) {
    return {
      code: "invalid_request",
      message: `the facts listed under node ${misfiled.sort()[0]} name another node; facts must come from the target they describe`,
      constraints: [],
    };
  }
  return null;
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

/** Decides where one workload goes. Total on every `PlacementInput` (see `parsePlacementInput` for `unknown`). */
export function decide(input: PlacementInput): PlacementResult {
  const problem = crossCheck(input);
  if (problem !== null) return failure(problem);
  const { request, nodes, cluster } = input;

  const ctx = constraintContext(request, cluster);
  const assessments = nodes.map((n) => assessNode(n, ctx));

  const eligible: Array<Scorable & { readonly assessment: Assessment }> = [];
  const reports: NodeReport[] = [];
  for (const a of assessments) {
    if (a.fit !== null && a.facts !== null && a.capabilities !== null) {
      eligible.push({
        node_id: a.node.node_id,
        facts: a.facts,
        fit: a.fit,
        capabilities: a.capabilities,
        assessment: a,
      });
    } else {
      reports.push(reportOf(a, undefined));
    }
  }
  const loads = cluster.placed === null ? placedLoads(cluster.instances) : placedLoadsOf(cluster.placed);
  const scores = scoreEligible(eligible, request, loads);
  for (const [i, e] of eligible.entries()) reports.push(reportOf(e.assessment, scores[i]));
  const ranked = rank(reports);

  const describe = (id: string): string => {
    const name = ranked.find((r) => r.node_id === id)?.name;
    return name ? `${id} (${name})` : id;
  };
  const selection = select(ranked, request, describe);

  switch (selection.kind) {
    case "error":
      return failure(selection.error);
    case "unplaceable":
      return { ok: true, value: decisionOf(request, ranked, null) };
    case "placed": {
      const accelerator = scores[eligible.findIndex((e) => e.node_id === selection.node_id)]?.accelerator ?? null;
      const { candidates, placement } = applySelection(ranked, selection, accelerator);
      return { ok: true, value: decisionOf(request, candidates, placement) };
    }
    default: {
      const unreachable: never = selection;
      return unreachable;
    }
  }
}
