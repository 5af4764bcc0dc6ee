import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  effectOf,
  evaluate,
  type GatePolicy,
  resourceCostMilli,
  scoreMilli,
  sumOfSquares,
  type WorkloadContext,
} from "./gate.js";
import { parsePermits, type PermitRule, PermitRuleSchema } from "./policy.js";

const rule = (over: Partial<PermitRule> = {}): PermitRule =>
  PermitRuleSchema.parse({
    id: "test-agent",
    actions: ["workload.*"],
    kinds: ["agent"],
    max_network: "egress",
    allow_secrets: true,
    allow_emulated: true,
    ...over,
  });

const policy = (over: Partial<GatePolicy> = {}): GatePolicy => ({
  permits: [rule()],
  revocations: { generation: 0, subjects: [] },
  thresholdMilli: 950,
  builtinTeardown: true,
  humanApproval: false,
  ...over,
});

const ctx = (over: Partial<WorkloadContext> = {}): WorkloadContext => ({
  kind: "agent",
  package_trust: "pinned_signer",
  node_tier: "paired",
  network: "egress",
  secrets: false,
  emulated: false,
  accelerator: null,
  cpu_millis: 0,
  refs: { package_id: "a".repeat(64), signer_keys: ["b".repeat(64)], file_hashes: ["c".repeat(64)] },
  agent: "controller",
  ...over,
});

/** The largest cpu_millis the ceiling permits for a context (none: -1). */
function largestPermitted(c: WorkloadContext): number {
  let best = -1;
  for (let cpu = 1; cpu <= 4000; cpu++) if (sumOfSquares(effectOf({ ...c, cpu_millis: cpu })) <= 950 * 950) best = cpu;
  return best;
}

describe("the effect vector and the ceiling (§7.1)", () => {
  it.each([
    ["pinned, egress", ctx({ node_tier: "pinned" }), 522, 3328],
    ["paired, egress", ctx(), 687, 2804],
    ["paired, lan", ctx({ network: "lan" }), 482, 3420],
    ["paired, egress, emulated", ctx({ emulated: true }), 814, 2200],
    ["pinned, egress, secrets", ctx({ node_tier: "pinned", secrets: true }), 850, 1968],
    ["discovered, egress", ctx({ node_tier: "discovered" }), 1055, -1],
  ])("gives the worked values for %s", (_name, c, score, largest) => {
    expect(scoreMilli(effectOf(c))).toBe(score);
    expect(largestPermitted(c)).toBe(largest);
  });

  it("costs 250 for an undeclared cpu and caps at 1000", () => {
    expect(resourceCostMilli(0)).toBe(250);
    expect(resourceCostMilli(4001)).toBe(1000);
    expect(resourceCostMilli(5)).toBe(2);
  });

  it("permits the largest cpu under the ceiling and denies the next step above it", () => {
    const c = ctx({ node_tier: "pinned", network: "egress" });
    let cpu = 0;
    for (let x = 1; x <= 4000; x++) if (sumOfSquares(effectOf({ ...c, cpu_millis: x })) <= 902_500) cpu = x;
    expect(evaluate("workload.load", { ...c, cpu_millis: cpu }, policy(), "n").decision).toBe("permit");
    expect(evaluate("workload.load", { ...c, cpu_millis: cpu + 4 }, policy(), "n").decision).toBe("deny");
  });

  it("treats Σ = T² as permitted and Σ = T² + 1 as exceeded, in exact integers", async () => {
    const { ceilingExceeded } = await import("./gate.js");
    // risk 100, fairness 0… build vectors by hand: 600² + 800² = 1000²
    expect(ceilingExceeded({ risk: 600, fairness: 800, privacy: 0, novelty: 0, security: 0 }, 1000)).toBe(false);
    expect(ceilingExceeded({ risk: 600, fairness: 800, privacy: 1, novelty: 0, security: 0 }, 1000)).toBe(true);
  });
});

describe("the decision procedure (§7.3)", () => {
  it("a default deny names each rule for the action and kind and the field that refused it (issue 33)", () => {
    const lan = rule({ id: "agents-lan", max_network: "lan" });
    const v = evaluate(
      "workload.load",
      ctx({ network: "egress", network_declared: "lan" }),
      policy({ permits: [lan, rule({ id: "other-kind", kinds: ["service"] })] }),
      "n1",
    );
    expect(v.decision).toBe("deny");
    expect(v.reason).toMatch(
      /^default deny: no permit rule matches 'workload.load' for kind 'agent' \(rule BERTH-DEFAULT-DENY\); rule agents-lan did not match on max_network \(/,
    );
    expect(v.reason).toContain("the package declares lan");
    expect(v.reason).not.toContain("other-kind");
    const tier = evaluate(
      "workload.place",
      ctx({ node_tier: "discovered" }),
      policy({ permits: [rule({ id: "paired-only" })] }),
      "n1",
    );
    expect(tier.reason).toContain(
      "rule paired-only did not match on min_node_tier (the node's tier is discovered, the rule needs paired)",
    );
    const broken = evaluate(
      "workload.place",
      ctx(),
      policy({ permits: [], permitsError: "permits.json: permits.0.max_network: Invalid option" }),
      "n1",
    );
    expect(broken.reason).toContain("the permits file loads no rule: permits.json: permits.0.max_network");
  });

  it("denies by default when no permit rule matches, naming BERTH-DEFAULT-DENY", () => {
    const v = evaluate("workload.load", ctx(), policy({ permits: [] }), "n");
    expect(v.decision).toBe("deny");
    expect(v.reason).toBe(
      "default deny: no permit rule matches 'workload.load' for kind 'agent' (rule BERTH-DEFAULT-DENY)",
    );
  });

  it("loads no permits from a missing-field, duplicate or unparsable permits file", () => {
    expect(parsePermits("not json").ok).toBe(false);
    expect(parsePermits('[{"id":"x"}]').ok).toBe(false);
    expect(
      parsePermits(
        '[{"id":"x","actions":["workload.*"],"kinds":["*"]},{"id":"x","actions":["workload.*"],"kinds":["*"]}]',
      ).ok,
    ).toBe(false);
    expect(parsePermits('[{"id":"x","actions":["workload.*"],"kinds":["*"],"surprise":1}]').ok).toBe(false);
  });

  it("ignores an effect vector supplied by the caller", () => {
    const sneaky = {
      ...ctx({ node_tier: "discovered" }),
      effect: { risk: 0, fairness: 0, privacy: 0, novelty: 0, security: 0 },
    } as WorkloadContext;
    const v = evaluate("workload.load", sneaky, policy({ permits: [rule({ min_node_tier: "discovered" })] }), "n");
    expect(v.decision).toBe("deny");
    expect(v.reason).toContain("BERTH-EFFECT-CEILING");
  });

  it("denies everything but teardown when the revocation list is unreadable", () => {
    const p = policy({ revocations: null });
    expect(evaluate("workload.start", ctx(), p, "n").reason).toBe("revocation list unreadable (fail closed)");
    expect(evaluate("workload.unload", ctx(), p, "n").decision).toBe("permit");
  });

  it("denies a revoked signer, and a ref-carrying action naming no ref", () => {
    const p = policy({
      revocations: { generation: 1, subjects: [{ kind: "signer", id: "b".repeat(64), reason: "leaked", at_ms: 1 }] },
    });
    expect(evaluate("workload.start", ctx(), p, "n").reason).toBe(`signer '${"b".repeat(64)}' is revoked: leaked`);
    expect(
      evaluate("workload.start", ctx({ refs: { package_id: null, signer_keys: [], file_hashes: [] } }), policy(), "n")
        .decision,
    ).toBe("deny");
  });

  it("denies secrets on a paired node and permits them on a pinned one", () => {
    expect(evaluate("workload.load", ctx({ secrets: true }), policy(), "n").reason).toBe(
      "workloads carrying secrets require a pinned node",
    );
    expect(evaluate("workload.load", ctx({ secrets: true, node_tier: "pinned" }), policy(), "n").decision).toBe(
      "permit",
    );
  });

  it("never blocks teardown by tier, revocation or ceiling, and records what was waived", () => {
    const p = policy({
      permits: [],
      revocations: { generation: 1, subjects: [{ kind: "package", id: "a".repeat(64), reason: "x", at_ms: 1 }] },
    });
    for (const action of ["workload.stop", "workload.unload"]) {
      const v = evaluate(action, ctx({ node_tier: "discovered", package_trust: "unsigned" }), p, "n");
      expect(v.decision).toBe("permit");
      expect(v.payload.permit_rule).toBe("BERTH-TEARDOWN");
      expect(v.payload.teardown_waived).toEqual(["tier", "revocation", "ceiling"]);
    }
    expect(evaluate("workload.unload", ctx(), policy({ permits: [], builtinTeardown: false }), "n").decision).toBe(
      "deny",
    );
  });

  it("defers instead of denying over the ceiling with human approval, and defer is not a permit", () => {
    const v = evaluate(
      "workload.load",
      ctx({ node_tier: "discovered" }),
      policy({ permits: [rule({ min_node_tier: "discovered" })], humanApproval: true }),
      "n",
    );
    expect(v.decision).toBe("defer");
    expect(v.reason).toContain("deferred to a human (refused on this path)");
  });

  it("does not chain a non-workload action and chains an ungoverned one as workload.refuse", () => {
    expect(evaluate("shell.exec", ctx(), policy(), "n").chain).toBe(false);
    const v = evaluate("workload.reboot", ctx(), policy(), "n");
    expect(v).toMatchObject({ decision: "deny", chain: true, chainKind: "workload.refuse" });
  });

  it("matches action prefixes, kinds and controllers", () => {
    const p = policy({ permits: [rule({ actions: ["workload.st*"], kinds: ["probe"], controllers: ["ctl-1"] })] });
    expect(evaluate("workload.start", ctx({ kind: "probe", agent: "ctl-1" }), p, "n").decision).toBe("permit");
    expect(evaluate("workload.load", ctx({ kind: "probe", agent: "ctl-1" }), p, "n").decision).toBe("deny");
    expect(evaluate("workload.start", ctx({ kind: "agent", agent: "ctl-1" }), p, "n").decision).toBe("deny");
    expect(evaluate("workload.start", ctx({ kind: "probe", agent: "ctl-2" }), p, "n").decision).toBe("deny");
  });

  it("writes only integers into the verdict payload (it is hashed into the chain)", () => {
    fc.assert(
      fc.property(
        fc.record({
          package_trust: fc.constantFrom("unsigned", "signed_unpinned", "pinned_signer"),
          node_tier: fc.constantFrom("discovered", "paired", "pinned"),
          network: fc.constantFrom("none", "lan", "egress"),
          secrets: fc.boolean(),
          emulated: fc.boolean(),
          cpu_millis: fc.nat(100_000),
        }),
        fc.constantFrom("workload.load", "workload.start", "workload.stop"),
        (c, action) => {
          const v = evaluate(action, ctx(c as Partial<WorkloadContext>), policy(), "n");
          const numbers: unknown[] = [];
          JSON.stringify(v.payload, (_k, value) => {
            if (typeof value === "number") numbers.push(value);
            return value;
          });
          expect(numbers.every((n) => Number.isSafeInteger(n))).toBe(true);
        },
      ),
    );
  });
});
