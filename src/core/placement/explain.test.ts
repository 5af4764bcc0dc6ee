import { describe, expect, it } from "vitest";
import { type InputDraft, inputOf, nodeDraft, PACKAGE_ID } from "../../../test/support/placement/fixtures.js";
import type { NodeId } from "../crypto/ed25519.js";
import { decide } from "./decide.js";
import { points, renderExplain, renderPlacementError } from "./explain.js";
import type { PlacementDecision } from "./outputs.js";

// The ids of the §17 example, written out in full (the spec shortens them for print only).
const PI_A = `5b1ec0${"0".repeat(22)}c9d0` as NodeId;
const PI_B = `9a0712${"0".repeat(22)}1f3e` as NodeId;
const LAPTOP = `c2d4a9${"0".repeat(22)}0a11` as NodeId;
const DENY = "default deny: no permit rule matches 'workload.place' for kind 'agent' (rule BERTH-DEFAULT-DENY)";

/** The situation of the §17 example: two Pi boards (pi-a preferred), and a laptop that cannot take the workload. */
const example: InputDraft = {
  nodes: [
    nodeDraft(PI_A, { facts: { name: "pi-a", cpu: { count: 4, load1_milli: 1_400 } } }),
    nodeDraft(PI_B, { facts: { name: "pi-b", cpu: { count: 4, load1_milli: 800 } } }),
    nodeDraft(LAPTOP, {
      tier: "discovered",
      facts: {
        name: "laptop",
        arch: "x86_64",
        board: "generic",
        routes: [
          { route: "native", arches: ["x86_64"] },
          { route: "emulated", via: "qemu-user", arches: ["aarch64"] },
        ],
      },
    }),
  ],
  permitAll: false,
  request: {
    prefer: [PI_A],
    gate: {
      [PI_A]: { verdict: "permit", reason: "test-agent" },
      [PI_B]: { verdict: "permit", reason: "test-agent" },
      [LAPTOP]: { verdict: "deny", reason: DENY },
    },
  },
};

function decision(draft: InputDraft): PlacementDecision {
  const r = decide(inputOf(draft));
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

describe("explain (spec/mesh.md §17)", () => {
  it("renders the §17 example: every candidate, its rejections, its score breakdown, the decision id and the dispatch", () => {
    const text = renderExplain(decision(example), {
      decision_id: "7c1f0e".padEnd(64, "0"),
      attempts: [
        {
          node_id: PI_A,
          variant: "aarch64-linux",
          outcome: "refused",
          code: "governance",
          reason:
            "start failed: governance: workload.start denied: no permit; loaded instance triage-1a2b3c4d5e6f unloaded",
          next: "trying the next candidate",
        },
        {
          node_id: PI_B,
          variant: "aarch64-linux",
          outcome: "placed",
          code: null,
          reason: null,
          instance_id: "triage-77e0c2aa91b4",
        },
      ],
    });
    expect(text).toBe(
      [
        `workload triage (kind agent, package ${PACKAGE_ID})`,
        `  name: triage   allow_emulated: false   pin: -   prefer: ${PI_A}   avoid: -`,
        `decision: PLACED on ${PI_A} (pi-a) via aarch64-linux (route native, tier native) score 116.50 [affinity]`,
        "candidates:",
        `  1. ${PI_B} (pi-b) eligible via aarch64-linux (tier native) score 118.00`,
        "       execution 100.00 + locality 0.00 + accel_fit 10.00 + perf 0.00 + load 8.00 (cpu 8.00, spread 0.00) + stickiness 0.00",
        `  2. ${PI_A} (pi-a) eligible via aarch64-linux (tier native) score 116.50 [affinity]`,
        "       execution 100.00 + locality 0.00 + accel_fit 10.00 + perf 0.00 + load 6.50 (cpu 6.50, spread 0.00) + stickiness 0.00",
        `  -  ${LAPTOP} (laptop) rejected`,
        "       trust: tier discovered is below required paired",
        "       emulation_not_allowed: only emulated route(s) fit (aarch64-linux); emulation needs allow_emulated",
        `       gate: workload.place denied: ${DENY}`,
        `decision_id: ${"7c1f0e".padEnd(64, "0")}`,
        "dispatch:",
        `  1. ${PI_A} via aarch64-linux: refused (governance: start failed: governance: workload.start denied: no permit; loaded instance triage-1a2b3c4d5e6f unloaded) -> trying the next candidate`,
        `  2. ${PI_B} via aarch64-linux: placed as triage-77e0c2aa91b4`,
        "",
      ].join("\n"),
    );
  });

  it("a dry run shows neither a decision id nor a dispatch", () => {
    const text = renderExplain(decision(example));
    expect(text).not.toContain("decision_id:");
    expect(text).not.toContain("dispatch:");
  });

  it("an unplaceable decision says so and still lists every candidate with its rejections", () => {
    const text = renderExplain(decision({ nodes: [nodeDraft(PI_A, { liveness: "suspect", facts: null })] }));
    expect(text).toBe(
      [
        `workload triage (kind agent, package ${PACKAGE_ID})`,
        "  name: triage   allow_emulated: false   pin: -   prefer: -   avoid: -",
        "decision: UNPLACEABLE (no eligible node)",
        "candidates:",
        `  -  ${PI_A} (no facts) rejected`,
        "       liveness: node is suspect",
        "       facts_expired: no accepted facts",
        "",
      ].join("\n"),
    );
  });

  it("an indeterminate attempt prints its reason with the reconcile note, then its next text", () => {
    const text = renderExplain(decision(example), {
      decision_id: "ab".repeat(32),
      attempts: [
        {
          node_id: PI_A,
          variant: "aarch64-linux",
          outcome: "indeterminate",
          code: null,
          reason: "no answer before the timeout; not reconciled: target unreachable",
          next: "stopped: the target may hold the instance",
        },
      ],
    });
    expect(text).toContain(
      `  1. ${PI_A} via aarch64-linux: indeterminate (no answer before the timeout; not reconciled: target unreachable) -> stopped: the target may hold the instance\n`,
    );
  });

  it("a pin_ineligible error lists each failed constraint on its own line", () => {
    const r = decide(inputOf({ ...example, request: { ...example.request, pin: LAPTOP } }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const text = renderPlacementError(r.error);
    expect(text.split("\n").slice(1)).toEqual([
      "  trust: tier discovered is below required paired",
      "  emulation_not_allowed: only emulated route(s) fit (aarch64-linux); emulation needs allow_emulated",
      `  gate: workload.place denied: ${DENY}`,
      "",
    ]);
    expect(text).toContain(`pinned node ${LAPTOP} (laptop) cannot take workload triage`);
  });

  it("prints centi values with two decimals", () => {
    expect([points(0), points(5), points(650), points(11_650), points(100_000)]).toEqual([
      "0.00",
      "0.05",
      "6.50",
      "116.50",
      "1000.00",
    ]);
  });
});
