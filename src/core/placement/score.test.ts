import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type InputDraft, inputOf, nid, nodeDraft } from "../../../test/support/placement/fixtures.js";
import { decide } from "./decide.js";
import type { NodeReport, PlacementDecision } from "./outputs.js";
import { mulDivHalfUp } from "./score.js";

const A = nid(0xa1);
const B = nid(0xb2);
const GiB = 2 ** 30;

function decision(draft: InputDraft): PlacementDecision {
  const r = decide(inputOf(draft));
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

function reportOf(draft: InputDraft, id: string = A): NodeReport {
  const r = decision(draft).candidates.find((c) => c.node_id === id);
  if (!r) throw new Error(`no report for ${id}`);
  return r;
}

const x86Emulated = {
  facts: {
    arch: "aarch64" as const,
    routes: [
      { route: "native" as const, arches: ["aarch64" as const] },
      { route: "emulated" as const, via: "qemu-user", arches: ["x86_64" as const] },
    ],
  },
};
const x86Only = {
  variants: [{ id: "x86_64-linux", arch: "x86_64" as const, os: "linux" as const, entry: { program: "bin/x" } }],
};

// spec/mesh.md §8.5: one row per component rule, with default weights unless the row says otherwise.
const table: {
  rule: string;
  draft: InputDraft;
  id?: string;
  component: keyof NonNullable<NodeReport["score"]>;
  centi: number;
  flags?: string[];
}[] = [
  {
    rule: "execution gives a native route the native weight",
    draft: { nodes: [nodeDraft(A)] },
    component: "execution_centi",
    centi: 10_000,
  },
  {
    rule: "execution gives a native route on a dev board the fallback weight",
    draft: { nodes: [nodeDraft(A, { facts: { board: "dev" } })] },
    component: "execution_centi",
    centi: 4_000,
  },
  {
    rule: "execution gives an emulated route the emulated weight",
    draft: { nodes: [nodeDraft(A, x86Emulated)], spec: x86Only, request: { allow_emulated: true } },
    component: "execution_centi",
    centi: 2_000,
    flags: ["emulated"],
  },
  {
    rule: "execution weights are configuration with two decimals",
    draft: { nodes: [nodeDraft(A)], request: { weights: { execution: { native: 12.34 } } } },
    component: "execution_centi",
    centi: 1_234,
  },
  {
    rule: "locality sums the weight of every preference the node meets",
    draft: {
      nodes: [nodeDraft(A, { facts: { labels: { zone: "attic" } } })],
      spec: {
        preferences: [
          { requirement: { id: "label.zone", where: [{ attr: "value", op: "eq", value: "attic" }] }, weight: 5 },
          { requirement: { id: "node.class.pi5" }, weight: 7 },
          { requirement: { id: "accel.gpu.nvidia" }, weight: 900 },
        ],
      },
    },
    component: "locality_centi",
    centi: 1_200,
  },
  {
    rule: "accel_fit gives full weight to a node without accelerators when none is needed",
    draft: { nodes: [nodeDraft(A)] },
    component: "accel_fit_centi",
    centi: 1_000,
  },
  {
    rule: "accel_fit gives nothing to a node with an accelerator when none is needed",
    draft: { nodes: [nodeDraft(A, { facts: { accelerators: [{ id: "accel.npu.hailo8", mem_bytes: 0 }] } })] },
    component: "accel_fit_centi",
    centi: 0,
  },
  {
    rule: "accel_fit counts an extra accel.* capability as an accelerator",
    draft: { nodes: [nodeDraft(A, { facts: { capabilities: [{ id: "accel.tpu.coral" }] } })] },
    component: "accel_fit_centi",
    centi: 0,
  },
  {
    rule: "accel_fit scales a needed accelerator by the smallest assigned one among eligible nodes",
    draft: {
      nodes: [
        nodeDraft(A, { facts: { accelerators: [{ id: "accel.gpu.nvidia", mem_bytes: 8 * GiB }] } }),
        nodeDraft(B, { facts: { accelerators: [{ id: "accel.gpu.nvidia", mem_bytes: 3 * GiB }] } }),
      ],
      spec: { uses_accelerator: true, requirements: [{ id_prefix: "accel.gpu" }] },
    },
    component: "accel_fit_centi",
    centi: 375,
  },
  {
    rule: "accel_fit gives nothing to a node without the needed accelerator",
    draft: { nodes: [nodeDraft(A)], spec: { uses_accelerator: true } },
    component: "accel_fit_centi",
    centi: 0,
  },
  {
    rule: "perf (lower is better) scales best ÷ this",
    draft: {
      nodes: [
        nodeDraft(A, {
          facts: { perf: [{ metric: "latency", value_milli: 300, direction: "lower", measured_at_ms: 1 }] },
        }),
        nodeDraft(B, {
          facts: { perf: [{ metric: "latency", value_milli: 100, direction: "lower", measured_at_ms: 1 }] },
        }),
      ],
      spec: { perf: { metric: "latency", direction: "lower" } },
    },
    component: "perf_centi",
    centi: 1_000,
  },
  {
    rule: "perf (higher is better) scales this ÷ best",
    draft: {
      nodes: [
        nodeDraft(A, {
          facts: { perf: [{ metric: "tps", value_milli: 200, direction: "higher", measured_at_ms: 1 }] },
        }),
        nodeDraft(B, {
          facts: { perf: [{ metric: "tps", value_milli: 300, direction: "higher", measured_at_ms: 1 }] },
        }),
      ],
      spec: { perf: { metric: "tps", direction: "higher" } },
    },
    component: "perf_centi",
    centi: 2_000,
  },
  {
    rule: "perf without a measured value is 0 and flagged unmeasured",
    draft: {
      nodes: [
        nodeDraft(A, {
          facts: {
            perf: [{ metric: "tps", value_milli: 900, direction: "higher", measured_at_ms: 1, provenance: "claimed" }],
          },
        }),
      ],
      spec: { perf: { metric: "tps", direction: "higher" } },
    },
    component: "perf_centi",
    centi: 0,
    flags: ["unmeasured"],
  },
  {
    rule: "perf is 0 and unflagged when the workload names no metric",
    draft: { nodes: [nodeDraft(A)] },
    component: "perf_centi",
    centi: 0,
  },
  {
    rule: "load gives the weight times the idle share of the cpus",
    draft: { nodes: [nodeDraft(A, { facts: { cpu: { count: 4, load1_milli: 2_000 } } })] },
    component: "load_centi",
    centi: 500,
  },
  {
    rule: "load gives nothing to an overloaded node",
    draft: { nodes: [nodeDraft(A, { facts: { cpu: { count: 2, load1_milli: 7_000 } } })] },
    component: "load_centi",
    centi: 0,
  },
  {
    rule: "load rounds half up once",
    draft: {
      nodes: [nodeDraft(A, { facts: { cpu: { count: 2, load1_milli: 1_000 } } })],
      request: { weights: { load: 0.01 } },
    },
    component: "load_centi",
    centi: 1,
  },
  {
    rule: "an unknown load is 0 and flagged load_unknown",
    draft: { nodes: [nodeDraft(A, { facts: { cpu: { count: 4, load1_milli: null } } })] },
    component: "load_centi",
    centi: 0,
    flags: ["load_unknown"],
  },
  {
    rule: "stickiness gives the current node the stickiness weight",
    draft: { nodes: [nodeDraft(A)], request: { current_node: A } },
    component: "stickiness_centi",
    centi: 1_500,
  },
  {
    rule: "stickiness gives the current node of a sticky workload the sticky weight",
    draft: { nodes: [nodeDraft(A)], request: { current_node: A }, spec: { policy: { sticky: true } } },
    component: "stickiness_centi",
    centi: 100_000,
  },
  {
    rule: "stickiness gives nothing to any other node",
    draft: { nodes: [nodeDraft(A), nodeDraft(B)], request: { current_node: B } },
    component: "stickiness_centi",
    centi: 0,
  },
];

describe("scoring (spec/mesh.md §8.5)", () => {
  it.each(table)("$rule", ({ draft, id, component, centi, flags }) => {
    const r = reportOf(draft, id ?? A);
    expect(r.score?.[component]).toBe(centi);
    expect(r.flags).toEqual(flags ?? []);
  });

  it("the total is the sum of the components", () => {
    const r = reportOf({
      nodes: [nodeDraft(A, { facts: { cpu: { count: 4, load1_milli: 1_300 } } })],
      request: { current_node: A },
    });
    const s = r.score;
    if (s === null) throw new Error("not scored");
    expect(r.total_centi).toBe(
      s.execution_centi + s.locality_centi + s.accel_fit_centi + s.perf_centi + s.load_centi + s.stickiness_centi,
    );
    expect(r.total_centi).toBe(10_000 + 1_000 + 675 + 1_500);
  });

  it("the placement names the accelerator assigned on the winner: the smallest that satisfies the requirements", () => {
    const d = decision({
      nodes: [
        nodeDraft(A, {
          facts: {
            accelerators: [
              { id: "accel.gpu.nvidia", mem_bytes: 24 * GiB },
              { id: "accel.gpu.amd", mem_bytes: 8 * GiB },
              { id: "accel.npu.hailo8", mem_bytes: 0 },
            ],
          },
        }),
      ],
      spec: {
        uses_accelerator: true,
        requirements: [{ id_prefix: "accel.gpu", where: [{ attr: "mem_bytes", op: "gte", value: 4 * GiB }] }],
      },
    });
    expect(d.placement?.accelerator).toBe("accel.gpu.amd");
    expect(d.placement?.score.accel_fit_centi).toBe(1_000);
  });

  it("rejected nodes are not scored and do not set the reference values", () => {
    const d = decision({
      nodes: [
        nodeDraft(A, {
          facts: { perf: [{ metric: "tps", value_milli: 100, direction: "higher", measured_at_ms: 1 }] },
        }),
        nodeDraft(B, {
          liveness: "dead",
          facts: { perf: [{ metric: "tps", value_milli: 1_000, direction: "higher", measured_at_ms: 1 }] },
        }),
      ],
      spec: { perf: { metric: "tps", direction: "higher" } },
    });
    expect(d.candidates.find((c) => c.node_id === A)?.score?.perf_centi).toBe(3_000);
    expect(d.candidates.find((c) => c.node_id === B)?.score).toBeNull();
  });

  it("every score component is a non-negative integer, so a chained decision hashes the same everywhere", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 64 }),
        fc.integer({ min: 0, max: 10 ** 6 }),
        fc.integer({ min: 0, max: 10 ** 6 }),
        (count, load, w) => {
          const r = reportOf({
            nodes: [nodeDraft(A, { facts: { cpu: { count, load1_milli: load } } })],
            request: { weights: { load: w / 100 } },
          });
          for (const v of Object.values(r.score ?? {})) expect(Number.isSafeInteger(v) && v >= 0).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("exact half-up rounding of a × b ÷ c", () => {
  it("agrees with BigInt arithmetic on any non-negative safe integers", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000_000 }),
        fc.maxSafeNat(),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        (a, b, c) => {
          const exact = (2n * BigInt(a) * BigInt(b) + BigInt(c)) / (2n * BigInt(c));
          expect(mulDivHalfUp(a, b, c)).toBe(Number(exact));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("rounds a half up and anything below it down", () => {
    expect(mulDivHalfUp(1, 1, 2)).toBe(1);
    expect(mulDivHalfUp(1, 1, 3)).toBe(0);
    expect(mulDivHalfUp(3, 5, 2)).toBe(8);
    expect(mulDivHalfUp(1000, 7999, 8000)).toBe(1000);
  });
});

// Issue 16: the load dimension counts what is already placed, so equal nodes share agents.
describe("the placed part of the load (spread by default, binpack on request)", () => {
  const placed = (node_id: string, memory_bytes = 0) => ({
    node_id,
    name: `w-${node_id.slice(0, 4)}-${memory_bytes}`,
    memory_bytes,
    placed_at_ms: 1,
  });
  const equal = [nodeDraft(A), nodeDraft(B)];
  const parts = (d: PlacementDecision) =>
    Object.fromEntries(d.candidates.map((c) => [c.node_id, c.score?.load_placed_centi]));

  it("nothing placed anywhere gives every node 0, so a cluster without instances scores as before", () => {
    expect(parts(decision({ nodes: equal }))).toEqual({ [A]: 0, [B]: 0 });
  });

  it("spread gives the weight to the node with fewer instances, so two equal nodes share two agents", () => {
    const d = decision({ nodes: equal, cluster: { instances: [placed(A)] } });
    expect(parts(d)).toEqual({ [A]: 0, [B]: 1_000 });
    expect([d.strategy, d.placement?.node_id]).toEqual(["spread", B]);
  });

  it("binpack gives the weight to the node with more instances, filling it first", () => {
    const d = decision({ nodes: equal, cluster: { instances: [placed(A)] }, request: { strategy: "binpack" } });
    expect(parts(d)).toEqual({ [A]: 1_000, [B]: 0 });
    expect([d.strategy, d.placement?.node_id]).toEqual(["binpack", A]);
  });

  it("declared memory counts as a share of each node's memory, averaged with the instance count", () => {
    const mem = { memory: { total_bytes: 8 * GiB, available_bytes: 8 * GiB } };
    const d = decision({
      nodes: [nodeDraft(A, { facts: mem }), nodeDraft(B, { facts: mem })],
      cluster: { instances: [placed(A, 4 * GiB), placed(B, GiB)] },
    });
    // counts tie (0 each); memory shares 1/2 and 1/8: B gets 10 × (1/2 − 1/8) ÷ 1/2 = 7.50, halved with its count part.
    expect(parts(d)).toEqual({ [A]: 0, [B]: 375 });
  });

  it("the load is the cpu part plus the placed part, and its weight is configuration", () => {
    const r = reportOf({
      nodes: [nodeDraft(A, { facts: { cpu: { count: 4, load1_milli: 2_000 } } }), nodeDraft(B)],
      cluster: { instances: [placed(B)] },
      request: { weights: { placed: 2.5 } },
    });
    expect([r.score?.load_cpu_centi, r.score?.load_placed_centi, r.score?.load_centi]).toEqual([500, 250, 750]);
  });
});
