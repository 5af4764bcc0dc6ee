/**
 * Issue 35: a placement being dispatched weighs on the decisions this process makes meanwhile, as if it were placed
 * (src/mesh/controller/in-flight.ts). The store counts a placement only once its node has answered, so two decisions
 * made while the first was in flight both chose the least-loaded node: sixteen moves of a keep pass, or the API's
 * concurrent placements, piled onto one node. Real node daemons behind the in-process connector; the first dispatch is
 * held (the controller's `afterDecision` seam) until the second decision has committed, so they overlap every time.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { PlaceReport } from "../../src/mesh/controller/index.js";
import { type HostNode, type SeedFixture, seedFixture, waitFor } from "./support/in-process.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

describe("placements made while another is in flight", () => {
  it("weigh the one in flight as placed: two agents decided at once land on the two nodes, not both on one", async () => {
    const decided: string[] = [];
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterDecision: async (decisionId) => {
            decided.push(decisionId);
            // The first decision's dispatch waits until the second decision has been made and committed.
            if (decided.length === 1) await waitFor(() => decided.length >= 2, "the second decision");
          },
        },
      },
    });
    const f = fx;
    const [first, second] = f.nodes as [HostNode, HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    expect((await f.controller.addTarget(second.addr, "paired")).ok).toBe(true);

    const reports: PlaceReport[] = await Promise.all(
      ["one", "two"].map((name) => f.controller.place({ package: f.pkgDir, name, config: { mode: "service" } })),
    );
    expect(decided).toHaveLength(2);
    const nodes = reports.map((r) => r.placed?.node_id);
    expect(nodes.every((n) => n !== undefined)).toBe(true);
    expect(new Set(nodes), reports.map((r) => r.explain).join("\n")).toEqual(new Set([first.id, second.id]));
    // The second decision's report shows the load it weighed: the first placement counted on its node.
    const later = reports.find((r) => r.decision_id === decided[1]);
    const weighed = later?.decision.candidates.find(
      (c) => c.node_id === reports.find((r) => r !== later)?.placed?.node_id,
    );
    expect(weighed?.eligible).toBe(true);
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);
  });
});
