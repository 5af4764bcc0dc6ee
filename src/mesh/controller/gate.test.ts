import { describe, expect, it } from "vitest";
import type { GatePolicy } from "../../core/governance/gate.js";
import { PermitRuleSchema } from "../../core/governance/policy.js";
import type { Tier } from "../../core/identity/tier.js";
import { gateSummaryHashOf, parseGateSummary, verdictOfNode } from "../../core/governance/summary.js";
import { consult, contextOf, DEFAULT_GATE, placeVerdicts } from "./gate.js";
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

const controller = "d".repeat(32);
const contextFor = (tier: Tier) => contextOf(workload, tier, controller, false);
/** The view of §9.2 step 4: targets with these tiers, in this order. */
const viewOf = (tiers: readonly Tier[]) => tiers.map((tier, i) => ({ node_id: node(i), tier }));
const summaryOf = (tiers: readonly Tier[], lag: ReadonlyMap<string, string> = new Map()) => {
  const { verdicts, summary } = placeVerdicts(viewOf(tiers), contextFor, policy, lag);
  const parsed = parseGateSummary(summary.canonical);
  if (!parsed.ok) throw new Error(parsed.error);
  return { verdicts, summary, parsed: parsed.value };
};

describe("the verdicts of a consult over the view, one gate summary (mesh.md §7.7, issue 35)", () => {
  it("holds, for every target, exactly the payload the gate builds for it alone", () => {
    const tiers: Tier[] = Array.from(
      { length: 30 },
      (_, i) => (["paired", "discovered", "pinned"] as const)[(i * 7) % 3] as Tier,
    );
    const { parsed } = summaryOf(tiers);
    for (const [i, tier] of tiers.entries()) {
      const { event } = consult("workload.place", contextFor(tier), policy, node(i));
      expect(verdictOfNode(parsed, node(i))).toEqual(event?.payload);
    }
    expect(Object.keys(parsed.nodes)).toEqual(tiers.map((_, i) => node(i)).sort());
    expect(verdictOfNode(parsed, node(99))).toBeNull();
  });

  it("keeps each distinct verdict once and does not depend on the order of the view", () => {
    const tiers: Tier[] = ["paired", "discovered", "pinned", "paired", "discovered"];
    const { summary, parsed } = summaryOf(tiers);
    expect(parsed.verdicts.map((v) => [v.decision, (v.workload as { node_tier: string }).node_tier])).toEqual([
      ["permit", "paired"],
      ["deny", "discovered"],
      ["permit", "pinned"],
    ]);
    expect(summary.ref).toMatchObject({ action: "workload.place", nodes: 5, permitted: 3 });
    const reversed = placeVerdicts(viewOf(tiers).reverse(), contextFor, policy, new Map());
    expect(reversed.summary.canonical).toBe(summary.canonical);
    expect(summary.ref.summary).toBe(gateSummaryHashOf(summary.canonical));
  });

  it("gives the engine every target's verdict, a target behind the revocation list refused whatever the gate said", () => {
    const { verdicts, parsed } = summaryOf(
      ["paired", "discovered", "paired"],
      new Map([[node(2), "behind the revocation list"]]),
    );
    expect(verdicts).toEqual({
      [node(0)]: { verdict: "permit", reason: "permitted by rule agents" },
      [node(1)]: { verdict: "deny", reason: expect.stringContaining("min_node_tier") },
      [node(2)]: { verdict: "deny", reason: "behind the revocation list" },
    });
    expect(verdictOfNode(parsed, node(2))?.decision).toBe("permit");
  });

  it("is a summary of no node for an empty view", () => {
    const { summary, parsed } = summaryOf([]);
    expect(summary.ref).toMatchObject({ nodes: 0, permitted: 0 });
    expect(parsed.verdicts).toEqual([]);
  });
});
