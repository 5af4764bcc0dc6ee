import { describe, expect, it } from "vitest";
import { type InputDraft, inputOf, NOW, nid, nodeDraft, PACKAGE_ID } from "../../../test/support/placement/fixtures.js";
import { decide } from "./decide.js";
import { CONSTRAINTS, type NodeReport, type PlacementResult, type Rejection } from "./outputs.js";

const A = nid(0xa1);
const B = nid(0xb2);

function report(result: PlacementResult, id: string): NodeReport {
  if (!result.ok) throw new Error(`expected a decision, got ${result.error.code}: ${result.error.message}`);
  const r = result.value.candidates.find((c) => c.node_id === id);
  if (!r) throw new Error(`no report for ${id}`);
  return r;
}

function rejectionsOf(draft: InputDraft, id: string = A): readonly Rejection[] {
  return report(decide(inputOf(draft)), id).rejections;
}

// spec/mesh.md §8.3: one row per constraint; each set-up breaks exactly that constraint and nothing else.
const table: { rule: string; draft: InputDraft; expected: Rejection[] }[] = [
  {
    rule: "a suspect node fails `liveness`",
    draft: { nodes: [nodeDraft(A, { liveness: "suspect" })] },
    expected: [{ constraint: "liveness", detail: "node is suspect" }],
  },
  {
    rule: "a dead node fails `liveness`",
    draft: { nodes: [nodeDraft(A, { liveness: "dead" })] },
    expected: [{ constraint: "liveness", detail: "node is dead" }],
  },
  {
    rule: "a node never answered since start fails `liveness`",
    draft: { nodes: [nodeDraft(A, { liveness: "unknown" })] },
    expected: [{ constraint: "liveness", detail: "node is unknown" }],
  },
  {
    rule: "facts that expire exactly now fail `facts_expired`",
    draft: { nodes: [nodeDraft(A, { facts_expire_at_ms: NOW })] },
    expected: [{ constraint: "facts_expired", detail: `facts expired at ${NOW}` }],
  },
  {
    rule: "a node without accepted facts fails `facts_expired` and nothing that reads facts",
    draft: { nodes: [nodeDraft(A, { facts: null })], spec: { memory_bytes: 1 } },
    expected: [{ constraint: "facts_expired", detail: "no accepted facts" }],
  },
  {
    rule: "facts with a trust.* capability are refused whole (§3.4), so the node fails `facts_expired`",
    draft: { nodes: [nodeDraft(A, { facts: { capabilities: [{ id: "trust.tier.pinned" }] } })] },
    expected: [
      {
        constraint: "facts_expired",
        detail: "facts refused: capability trust.tier.pinned asserts trust, which only the operator assigns",
      },
    ],
  },
  {
    rule: "facts with a berth.io/tier label are refused whole (§3.4), so the node fails `facts_expired`",
    draft: { nodes: [nodeDraft(A, { facts: { labels: { "berth.io/tier": "pinned" } } })] },
    expected: [
      {
        constraint: "facts_expired",
        detail: "facts refused: label berth.io/tier asserts a tier, which only the operator assigns",
      },
    ],
  },
  {
    rule: "a discovered node fails `trust` for the default minimum tier",
    draft: { nodes: [nodeDraft(A, { tier: "discovered" })] },
    expected: [{ constraint: "trust", detail: "tier discovered is below required paired" }],
  },
  {
    rule: "a paired node fails `trust` for a workload that needs a pinned node",
    draft: { nodes: [nodeDraft(A)], spec: { policy: { min_tier: "pinned" } } },
    expected: [{ constraint: "trust", detail: "tier paired is below required pinned" }],
  },
  {
    rule: "a revoked node fails `revoked`",
    draft: { nodes: [nodeDraft(A)], cluster: { revoked_nodes: [A] } },
    expected: [{ constraint: "revoked", detail: `node ${A} is revoked` }],
  },
  {
    rule: "a node the operator cordoned fails `cordoned` (issue 16), and the explain says who to ask",
    draft: { nodes: [nodeDraft(A)], cluster: { cordoned_nodes: [A] } },
    expected: [
      {
        constraint: "cordoned",
        detail: "the operator cordoned this node (berth node cordon, drain or forget): no new placements",
      },
    ],
  },
  {
    rule: "a revoked package fails `revoked` on every node",
    draft: { nodes: [nodeDraft(A)], spec: { refs: [PACKAGE_ID] }, cluster: { revoked_refs: [PACKAGE_ID] } },
    expected: [{ constraint: "revoked", detail: `package ${PACKAGE_ID} is revoked` }],
  },
  {
    rule: "a revoked signer key among the workload's refs fails `revoked`",
    draft: {
      nodes: [nodeDraft(A)],
      spec: { refs: [PACKAGE_ID, "ab".repeat(32)] },
      cluster: { revoked_refs: ["ab".repeat(32)] },
    },
    expected: [{ constraint: "revoked", detail: `ref ${"ab".repeat(32)} is revoked` }],
  },
  {
    rule: "an instance carrying a label the workload excludes fails `co_residency`",
    draft: {
      nodes: [nodeDraft(A)],
      spec: { policy: { excludes: ["gpu-heavy"] } },
      cluster: { instances: [{ node_id: A, name: "indexer", labels: ["gpu-heavy"], placed_at_ms: NOW - 5_000 }] },
    },
    expected: [{ constraint: "co_residency", detail: "instance indexer carries excluded label gpu-heavy" }],
  },
  {
    rule: "an instance that excludes a label the workload carries fails `co_residency`",
    draft: {
      nodes: [nodeDraft(A)],
      spec: { policy: { labels: ["noisy"] } },
      cluster: { instances: [{ node_id: A, name: "indexer", excludes: ["noisy"], placed_at_ms: NOW - 5_000 }] },
    },
    expected: [
      { constraint: "co_residency", detail: "instance indexer excludes label noisy, which this workload carries" },
    ],
  },
  {
    rule: "a demand above the available memory fails `memory`",
    draft: {
      nodes: [nodeDraft(A, { facts: { memory: { total_bytes: 2 ** 30, available_bytes: 201326592 } } })],
      spec: { memory_bytes: 536870912 },
    },
    expected: [{ constraint: "memory", detail: "needs 536870912 bytes, 201326592 available" }],
  },
  {
    rule: "instances placed after the facts were issued count as pending memory",
    draft: {
      nodes: [nodeDraft(A, { facts: { memory: { total_bytes: 2 ** 30, available_bytes: 600 } } })],
      spec: { memory_bytes: 500 },
      cluster: {
        instances: [
          { node_id: A, name: "new", memory_bytes: 200, placed_at_ms: NOW },
          { node_id: A, name: "old", memory_bytes: 10_000, placed_at_ms: NOW - 60_000 },
        ],
      },
    },
    expected: [
      {
        constraint: "memory",
        detail: "needs 500 bytes, 400 available (200 pending for instances placed since the facts were issued)",
      },
    ],
  },
  {
    rule: "a common requirement the node does not meet fails `requirements`",
    draft: { nodes: [nodeDraft(A)], spec: { requirements: [{ id: "accel.gpu.nvidia" }] } },
    expected: [{ constraint: "requirements", detail: "accel.gpu.nvidia not present" }],
  },
  {
    rule: "a node no variant fits fails `requirements` with one line per variant",
    draft: {
      nodes: [nodeDraft(A)],
      spec: {
        variants: [
          { id: "x86_64-linux", arch: "x86_64", os: "linux", entry: { program: "bin/x" } },
          { id: "py", arch: "any", os: "any", entry: { program: "@python3" } },
        ],
      },
    },
    expected: [
      { constraint: "requirements", detail: "variant x86_64-linux: cpu.arch.x86_64 not present" },
      { constraint: "requirements", detail: "variant py: runtime.interp.python3 not present" },
    ],
  },
  {
    rule: "a node only an emulated route fits fails `emulation_not_allowed` without allow_emulated",
    draft: {
      nodes: [
        nodeDraft(A, {
          facts: {
            arch: "aarch64",
            routes: [
              { route: "native", arches: ["aarch64"] },
              { route: "emulated", via: "qemu-user", arches: ["x86_64"] },
            ],
          },
        }),
      ],
      spec: { variants: [{ id: "x86_64-linux", arch: "x86_64", os: "linux", entry: { program: "bin/x" } }] },
    },
    expected: [
      {
        constraint: "emulation_not_allowed",
        detail: "only emulated route(s) fit (x86_64-linux); emulation needs allow_emulated",
      },
    ],
  },
  {
    rule: "a gate deny fails `gate` with the gate's reason",
    draft: {
      nodes: [nodeDraft(A)],
      permitAll: false,
      request: { gate: { [A]: { verdict: "deny", reason: "default deny: no permit rule matches" } } },
    },
    expected: [{ constraint: "gate", detail: "workload.place denied: default deny: no permit rule matches" }],
  },
  {
    rule: "a missing gate verdict fails `gate` (governance fails closed)",
    draft: { nodes: [nodeDraft(A)], permitAll: false },
    expected: [{ constraint: "gate", detail: "workload.place has no gate verdict for this node" }],
  },
];

describe("hard constraints (spec/mesh.md §8.3)", () => {
  it.each(table)("$rule", ({ draft, expected }) => {
    expect(rejectionsOf(draft)).toEqual(expected);
  });

  it("a node meeting every constraint is eligible with no rejection", () => {
    const r = report(decide(inputOf({ nodes: [nodeDraft(A)] })), A);
    expect(r.eligible).toBe(true);
    expect(r.rejections).toEqual([]);
  });

  it("a zero memory demand fits a node with no memory available", () => {
    const draft = { nodes: [nodeDraft(A, { facts: { memory: { total_bytes: 0, available_bytes: 0 } } })] };
    expect(rejectionsOf(draft)).toEqual([]);
  });

  it("a demand equal to the available memory fits", () => {
    const draft = {
      nodes: [nodeDraft(A, { facts: { memory: { total_bytes: 1000, available_bytes: 1000 } } })],
      spec: { memory_bytes: 1000 },
    };
    expect(rejectionsOf(draft)).toEqual([]);
  });

  it("an instance on another node never counts against this one", () => {
    const draft: InputDraft = {
      nodes: [nodeDraft(A), nodeDraft(B)],
      spec: { policy: { excludes: ["gpu-heavy"] } },
      cluster: { instances: [{ node_id: B, name: "indexer", labels: ["gpu-heavy"], placed_at_ms: NOW }] },
    };
    expect(rejectionsOf(draft, A)).toEqual([]);
    expect(rejectionsOf(draft, B).map((r) => r.constraint)).toEqual(["co_residency"]);
  });

  it("every failure is recorded, not only the first, in the order of the table", () => {
    const draft: InputDraft = {
      nodes: [
        nodeDraft(A, {
          liveness: "suspect",
          tier: "discovered",
          facts_expire_at_ms: NOW - 1,
          facts: { memory: { total_bytes: 10, available_bytes: 10 } },
        }),
      ],
      spec: {
        memory_bytes: 100,
        requirements: [{ id: "accel.npu.hailo8" }],
        policy: { excludes: ["gpu-heavy"] },
        refs: [PACKAGE_ID],
      },
      cluster: {
        revoked_nodes: [A],
        revoked_refs: [PACKAGE_ID],
        instances: [{ node_id: A, name: "indexer", labels: ["gpu-heavy"], placed_at_ms: 0 }],
      },
      permitAll: false,
    };
    const names = rejectionsOf(draft).map((r) => r.constraint);
    expect(names).toEqual([
      "liveness",
      "facts_expired",
      "trust",
      "revoked",
      "revoked",
      "co_residency",
      "memory",
      "requirements",
      "gate",
    ]);
    const order = names.map((n) => CONSTRAINTS.indexOf(n));
    expect(order).toEqual([...order].sort((x, y) => x - y));
  });

  it("co-residency details do not depend on the order instances are listed in", () => {
    const instances = [
      { node_id: A, name: "zeta", labels: ["b", "a"], placed_at_ms: 1 },
      { node_id: A, name: "alpha", labels: ["a"], placed_at_ms: 2 },
    ];
    const draft = (list: typeof instances): InputDraft => ({
      nodes: [nodeDraft(A)],
      spec: { policy: { excludes: ["a", "b"] } },
      cluster: { instances: list },
    });
    expect(rejectionsOf(draft(instances))).toEqual(rejectionsOf(draft([...instances].reverse())));
    expect(rejectionsOf(draft(instances)).map((r) => r.detail)).toEqual([
      "instance alpha carries excluded label a",
      "instance zeta carries excluded label b",
      "instance zeta carries excluded label a",
    ]);
  });
});
