import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { placementInput } from "../../../test/support/placement/arbitraries.js";
import { inputOf, NOW, nid, nodeDraft } from "../../../test/support/placement/fixtures.js";
import { decide } from "./decide.js";
import { historyReads, isRead, placedSummary, withInFlight } from "./history.js";
import { type ClusterInstance, type PlacementInput, placementInputSchema } from "./inputs.js";

const LABELS = ["gpu-heavy", "noisy", "quiet"] as const;

/** More instances than the input generator makes, on the input's own nodes, around their facts' issue times. */
const extraInstances = (input: PlacementInput): fc.Arbitrary<ClusterInstance[]> =>
  fc.array(
    fc.record({
      node_id: fc.constantFrom(...input.nodes.map((n) => n.node_id as string), nid(0xfff)),
      name: fc.integer({ min: 0, max: 10_000 }).map((i) => `w-${i}`),
      labels: fc.subarray([...LABELS]),
      excludes: fc.subarray([...LABELS]),
      memory_bytes: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 32 })),
      placed_at_ms: fc.integer({ min: NOW - 200_000, max: NOW }),
    }),
    { maxLength: 30 },
  );

const withHistory = placementInput.chain((input) =>
  extraInstances(input).map((more) => ({
    ...input,
    cluster: { ...input.cluster, instances: [...input.cluster.instances, ...more] },
  })),
);

describe("the placement history a decision reads (issue 19)", () => {
  it("the per-node totals and the instances historyReads selects give the decision every instance gives", () => {
    fc.assert(
      fc.property(withHistory, (input) => {
        const all = input.cluster.instances;
        const reads = historyReads(input.request, input.nodes);
        const summarised = {
          ...input,
          cluster: { ...input.cluster, placed: placedSummary(all), instances: all.filter((i) => isRead(reads, i)) },
        };
        expect(decide(summarised)).toEqual(decide(input));
      }),
      { numRuns: 500 },
    );
  });

  it("a superset of the selection gives the same decision too (the totals alone carry the load)", () => {
    fc.assert(
      fc.property(withHistory, (input) => {
        const all = input.cluster.instances;
        expect(decide({ ...input, cluster: { ...input.cluster, placed: placedSummary(all) } })).toEqual(decide(input));
      }),
      { numRuns: 200 },
    );
  });

  it("placements in flight weigh as if made: the stored history plus them gives the decision the full list gives (issue 35)", () => {
    fc.assert(
      fc.property(
        withHistory.chain((input) => fc.nat(input.cluster.instances.length).map((cut) => ({ input, cut }))),
        ({ input, cut }) => {
          const all = input.cluster.instances;
          const stored = all.slice(0, cut);
          const inFlight = all.slice(cut);
          const reads = historyReads(input.request, input.nodes);
          const history = { placed: placedSummary(stored), instances: stored.filter((i) => isRead(reads, i)) };
          const weighed = { ...input, cluster: { ...input.cluster, ...withInFlight(history, inFlight, reads) } };
          expect(decide(weighed)).toEqual(decide(input));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("nothing in flight leaves the history as the store gave it", () => {
    const history = { placed: [{ node_id: "b", count: 2, memory_bytes: 5 }], instances: [] };
    expect(withInFlight(history, [], { carrying: [], excluding: [], placedAfter: new Map() })).toEqual(history);
  });

  it("the totals count every instance and its declared memory per node, in node order", () => {
    const at = (node: number, memory: number): ClusterInstance => ({
      node_id: nid(node),
      name: `w${node}-${memory}`,
      labels: [],
      excludes: [],
      memory_bytes: memory,
      placed_at_ms: NOW,
    });
    expect(placedSummary([at(2, 5), at(1, 0), at(2, 7)])).toEqual([
      { node_id: nid(1), count: 1, memory_bytes: 0 },
      { node_id: nid(2), count: 2, memory_bytes: 12 },
    ]);
  });

  it("selects instances carrying an excluded label, excluding a carried one, or placed after the node's facts were issued", () => {
    const input = inputOf({
      nodes: [nodeDraft(nid(1), { facts: { issued_at_ms: NOW - 1_000 } })],
      spec: { memory_bytes: 1, policy: { labels: ["quiet"], excludes: ["noisy"] } },
    });
    const reads = historyReads(input.request, input.nodes);
    const inst = (over: Partial<ClusterInstance>): ClusterInstance => ({
      node_id: nid(1),
      name: "w",
      labels: [],
      excludes: [],
      memory_bytes: 0,
      placed_at_ms: NOW - 5_000,
      ...over,
    });
    expect(isRead(reads, inst({}))).toBe(false);
    expect(isRead(reads, inst({ labels: ["noisy"] }))).toBe(true);
    expect(isRead(reads, inst({ excludes: ["quiet"] }))).toBe(true);
    expect(isRead(reads, inst({ placed_at_ms: NOW - 999 }))).toBe(true);
    expect(isRead(reads, inst({ placed_at_ms: NOW - 999, node_id: nid(2) }))).toBe(false);
  });

  it("a workload that declares no memory reads no instance for its placed time", () => {
    const input = inputOf({ nodes: [nodeDraft(nid(1))], spec: { memory_bytes: 0 } });
    expect(historyReads(input.request, input.nodes).placedAfter.size).toBe(0);
  });

  it("totals are accepted by the input schema and default to null (the full list of instances)", () => {
    const input = inputOf({ nodes: [nodeDraft(nid(1))] });
    expect(input.cluster.placed).toBeNull();
    expect(
      placementInputSchema.safeParse({
        ...input,
        cluster: { ...input.cluster, placed: [{ node_id: nid(1), count: -1, memory_bytes: 0 }] },
      }).success,
    ).toBe(false);
  });
});
