import { describe, expect, it } from "vitest";
import type { EventDraft } from "../../core/chain/event.js";
import type { GatePolicy } from "../../core/governance/gate.js";
import { PermitRuleSchema } from "../../core/governance/policy.js";
import type { Tier } from "../../core/identity/tier.js";
import { consult, contextOf, DEFAULT_GATE, viewVerdictEvents } from "./gate.js";
import type { WorkloadRecord } from "./store.js";

const workload: WorkloadRecord = {
  kind: "agent",
  network: "egress",
  secrets: false,
  cpu_millis: 500,
  memory_bytes: 64 * 1024 * 1024,
  labels: [],
  excludes: [],
  package_id: "a".repeat(64),
  signer_keys: ["b".repeat(64)],
  file_hashes: ["c".repeat(64)],
};
const policy: GatePolicy = {
  permits: [PermitRuleSchema.parse({ id: "agents", actions: ["workload.*"], kinds: ["agent"], max_network: "egress" })],
  revocations: { generation: 0, subjects: [] },
  thresholdMilli: DEFAULT_GATE.thresholdMilli,
  builtinTeardown: true,
  humanApproval: false,
};
const node = (n: number) => n.toString(16).padStart(32, "0");

/** The consult of §9.2 step 4 over a view of targets with these tiers: what dispatch.ts hands to viewVerdictEvents. */
function consultView(tiers: readonly Tier[]): Array<{ node: string; event: EventDraft }> {
  return tiers.map((tier, i) => {
    const { event } = consult("workload.place", contextOf(workload, tier, "d".repeat(32), false), policy, node(i));
    if (!event) throw new Error("a place verdict is always chained");
    return { node: node(i), event };
  });
}

describe("the verdicts of a consult over the view, one event per distinct verdict (mesh.md §7.7)", () => {
  it("chains one event for targets whose verdicts are equal but for the node, naming them all, sorted", () => {
    const consulted = consultView(["paired", "paired", "paired"]).reverse();
    const events = viewVerdictEvents(consulted);
    expect(events).toHaveLength(1);
    const [only] = events;
    const { node: _one, ...verdict } = consulted[0]?.event.payload ?? {};
    expect(only).toEqual({ source: "gate", kind: "workload.place", payload: { ...verdict, nodes: [node(0), node(1), node(2)] } });
    expect(only?.payload).not.toHaveProperty("node");
  });

  it("keeps verdicts that differ in anything but the node apart: a tier, a decision, a reason", () => {
    // `discovered` is below the permit's min_node_tier: a deny; `pinned` permits like `paired` but records its tier.
    const events = viewVerdictEvents(consultView(["paired", "discovered", "pinned", "paired", "discovered"]));
    expect(events.map((e) => [e.payload.decision, (e.payload.workload as { node_tier: string }).node_tier, e.payload.nodes])).toEqual([
      ["permit", "paired", [node(0), node(3)]],
      ["deny", "discovered", [node(1), node(4)]],
      ["permit", "pinned", [node(2)]],
    ]);
  });

  it("names every consulted target in exactly one event, and chains nothing for an empty view", () => {
    const tiers: Tier[] = Array.from({ length: 100 }, (_, i) => (["paired", "discovered", "pinned"] as const)[i % 3] as Tier);
    const named = viewVerdictEvents(consultView(tiers)).flatMap((e) => e.payload.nodes as string[]);
    expect([...named].sort()).toEqual(tiers.map((_, i) => node(i)).sort());
    expect(viewVerdictEvents([])).toEqual([]);
  });
});
