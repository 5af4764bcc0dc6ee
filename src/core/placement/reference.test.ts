/**
 * Issue 35: the engine was rewritten for 1,000 nodes (per-node data worked out once per facts object, no per-candidate
 * allocation that only an explanation needs, one ranking pass). These properties hold it to the engine it replaced,
 * kept as a test oracle in test/support/placement/reference/: over random facts and requests the decisions are
 * deep-equal (the same winner, every candidate's verdict, rejections, variant, route, score and flags, in the same
 * order), and so is what explain prints.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { placementInput } from "../../../test/support/placement/arbitraries.js";
import { decide as referenceDecide } from "../../../test/support/placement/reference/decide.js";
import { decide } from "./decide.js";
import { renderExplain, renderPlacementError } from "./explain.js";
import { placedSummary } from "./history.js";
import type { NodeView, PlacementInput } from "./inputs.js";
import type { PlacementResult } from "./outputs.js";

/** What a person reads of a result: the explain of a decision, or the error's text. */
function explained(result: PlacementResult): string {
  return result.ok ? renderExplain(result.value, { decision_id: "d" }) : renderPlacementError(result.error);
}

function sameAsReference(input: PlacementInput): void {
  // The reference decides a copy: neither engine may see facts objects the other memoised.
  const expected = referenceDecide(structuredClone(input));
  const actual = decide(input);
  expect(actual).toEqual(expected);
  expect(explained(actual)).toBe(explained(expected));
}

/** A hex node id of 32 characters, unlike the small test ids (`nid`), so order by id is that of real ids. */
function hexId(n: number, salt: number): NodeView["node_id"] {
  const a = (Math.imul(n + 1, 2_654_435_761) ^ salt) >>> 0;
  const b = (Math.imul(a ^ (n << 7), 40_503) + salt) >>> 0;
  return `${a.toString(16).padStart(8, "0")}${b.toString(16).padStart(8, "0")}${n.toString(16).padStart(16, "0")}` as NodeView["node_id"];
}

/**
 * A large cluster from a small random input: each node copied `copies` times under new ids (facts, gate verdict and
 * instances with it), listed in a shuffled order, some copies cordoned, the history given as totals (`placed`) or
 * not. Many nodes with equal facts score equal, so the order among equal totals (node id) is exercised at scale.
 */
const largeInput = fc
  .record({
    base: placementInput,
    copies: fc.integer({ min: 1, max: 40 }),
    salt: fc.integer({ min: 0, max: 2 ** 30 }),
    order: fc.integer({ min: 0, max: 2 ** 30 }),
    cordonEvery: fc.option(fc.integer({ min: 2, max: 9 }), { nil: null }),
    totals: fc.boolean(),
  })
  .map(({ base, copies, salt, order, cordonEvery, totals }): PlacementInput => {
    const rename = new Map<string, NodeView["node_id"][]>();
    const nodes: NodeView[] = [];
    const gate: Record<string, PlacementInput["request"]["gate"][string]> = {};
    let k = 0;
    for (const view of base.nodes) {
      const ids: NodeView["node_id"][] = [];
      for (let c = 0; c < copies; c++) {
        const id = hexId(k++, salt);
        ids.push(id);
        nodes.push({ ...view, node_id: id, facts: view.facts === null ? null : { ...view.facts, node_id: id } });
        const verdict = base.request.gate[view.node_id];
        if (verdict !== undefined) gate[id] = verdict;
      }
      rename.set(view.node_id, ids);
    }
    // A deterministic shuffle (the input order must not matter).
    let s = order >>> 0;
    for (let i = nodes.length - 1; i > 0; i--) {
      s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
      const j = s % (i + 1);
      [nodes[i], nodes[j]] = [nodes[j] as NodeView, nodes[i] as NodeView];
    }
    const first = (id: string | null) => (id === null ? null : (rename.get(id)?.[0] ?? id));
    const all = (ids: readonly string[]) => ids.flatMap((id) => rename.get(id) ?? [id]);
    const instances = base.cluster.instances.flatMap((inst) =>
      (rename.get(inst.node_id) ?? [inst.node_id]).map((node_id) => ({ ...inst, node_id })),
    );
    const cordoned = cordonEvery === null ? [] : nodes.filter((_, i) => i % cordonEvery === 0).map((n) => n.node_id);
    return {
      request: {
        ...base.request,
        pin: first(base.request.pin),
        prefer: all(base.request.prefer),
        avoid: all(base.request.avoid),
        current_node: first(base.request.current_node),
        gate,
      },
      nodes,
      cluster: {
        ...base.cluster,
        revoked_nodes: all(base.cluster.revoked_nodes),
        cordoned_nodes: cordoned,
        instances,
        placed: totals ? placedSummary(instances) : null,
      },
    };
  });

describe("the engine decides what the engine it replaced decided (issue 35, oracle: test/support/placement/reference)", () => {
  it("over random facts and requests: the same result, candidate by candidate, and the same explain", () => {
    fc.assert(
      fc.property(placementInput, (input) => sameAsReference(input)),
      { numRuns: 500 },
    );
  });

  it("over large clusters of many equal nodes, shuffled, cordoned in part, with or without placed totals", () => {
    fc.assert(
      fc.property(largeInput, (input) => sameAsReference(input)),
      { numRuns: 120 },
    );
  });

  it("over facts objects it already decided under other requests, clocks and verdicts (what it keeps per facts)", () => {
    fc.assert(
      fc.property(placementInput, placementInput, fc.integer({ min: -400_000, max: 0 }), (a, b, shift) => {
        decide(a);
        // b's request and cluster over a's views (the facts objects already met), then again with another clock.
        sameAsReference({ ...b, nodes: a.nodes });
        sameAsReference({ ...b, nodes: a.nodes, cluster: { ...b.cluster, now_ms: b.cluster.now_ms - shift } });
        sameAsReference(a);
      }),
      { numRuns: 300 },
    );
  });
});
