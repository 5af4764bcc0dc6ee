import { describe, expect, it } from "vitest";
import {
  type InputDraft,
  inputOf,
  type NodeOverrides,
  nid,
  nodeDraft,
} from "../../../test/support/placement/fixtures.js";
import { decide } from "./decide.js";
import type { PlacementDecision, PlacementResult } from "./outputs.js";
import { dispatchOrder } from "./select.js";

const A = nid(0xa1);
const B = nid(0xb2);
const C = nid(0xc3);
const D = nid(0xd4);

/** Load in milli on a 4-cpu node: 0 → load 10.00, 4000 → 0.00; so lower load ranks higher. */
const loaded = (load1_milli: number, more: NodeOverrides = {}): NodeOverrides => ({
  ...more,
  facts: { cpu: { count: 4, load1_milli }, ...(more.facts ?? {}) },
});

const emulatedOnly: NodeOverrides = {
  facts: {
    arch: "x86_64",
    routes: [
      { route: "native", arches: ["x86_64"] },
      { route: "emulated", via: "qemu-user", arches: ["aarch64"] },
    ],
  },
};

function run(draft: InputDraft): PlacementResult {
  return decide(inputOf(draft));
}

function decided(draft: InputDraft): PlacementDecision {
  const r = run(draft);
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
}

describe("ranking (spec/mesh.md §8.6)", () => {
  it("ranks eligible nodes by total descending, then node id ascending, and the rejected after them by node id", () => {
    const d = decided({
      nodes: [
        nodeDraft(D, loaded(0)),
        nodeDraft(C, { liveness: "dead" }),
        nodeDraft(B, loaded(2000)),
        nodeDraft(A, { tier: "discovered" }),
        nodeDraft(nid(0x01), loaded(2000)),
      ],
    });
    expect(d.candidates.map((c) => [c.node_id, c.eligible, c.total_centi])).toEqual([
      [D, true, 12_000],
      [nid(0x01), true, 11_500],
      [B, true, 11_500],
      [A, false, null],
      [C, false, null],
    ]);
    expect(d.placement?.node_id).toBe(D);
    expect(d.placement?.flags).toEqual([]);
  });

  it("nothing fits is a decision with placement null, not an error", () => {
    const r = run({ nodes: [nodeDraft(A, { liveness: "suspect" }), nodeDraft(B, { tier: "discovered" })] });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.placement).toBeNull();
  });

  it("no nodes at all is a decision with placement null", () => {
    const d = decided({ nodes: [] });
    expect(d.placement).toBeNull();
    expect(d.candidates).toEqual([]);
  });
});

describe("pin (spec/mesh.md §8.6)", () => {
  it("a pin naming no node in the input is the error unknown_pin", () => {
    const r = run({ nodes: [nodeDraft(A)], request: { pin: B } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("unknown_pin");
      expect(r.error.message).toContain(B);
    }
  });

  it("a pinned node that is rejected is the error pin_ineligible naming every failed constraint", () => {
    const r = run({
      nodes: [nodeDraft(A, { liveness: "suspect", tier: "discovered" }), nodeDraft(B)],
      request: { pin: A },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("pin_ineligible");
    expect(r.error.message).toContain("constraint `liveness`: node is suspect");
    expect(r.error.message).toContain("constraint `trust`: tier discovered is below required paired");
    expect(r.error.constraints.map((c) => c.constraint)).toEqual(["liveness", "trust"]);
  });

  it("a pin overrides scoring: the pinned node wins over a better one, flagged pinned", () => {
    const d = decided({ nodes: [nodeDraft(A, loaded(4000)), nodeDraft(B, loaded(0))], request: { pin: A } });
    expect(d.candidates[0]?.node_id).toBe(B);
    expect(d.placement?.node_id).toBe(A);
    expect(d.placement?.flags).toEqual(["pinned"]);
    expect(d.candidates.find((c) => c.node_id === A)?.flags).toEqual(["pinned"]);
  });

  it("a pinned emulated node wins over native ones when emulation is allowed, flagged emulated and pinned", () => {
    const d = decided({ nodes: [nodeDraft(A), nodeDraft(B, emulatedOnly)], request: { pin: B, allow_emulated: true } });
    expect(d.placement).toMatchObject({ node_id: B, route: "emulated", flags: ["emulated", "pinned"] });
  });

  it("with a pin only the pinned node is dispatched", () => {
    const d = decided({ nodes: [nodeDraft(A), nodeDraft(B), nodeDraft(C)], request: { pin: B } });
    expect(dispatchOrder(d).map((c) => c.node_id)).toEqual([B]);
  });
});

describe("prefer and avoid (spec/mesh.md §8.6)", () => {
  it("prefer narrows: the first preferred pool member wins, flagged affinity", () => {
    const d = decided({
      nodes: [nodeDraft(A, loaded(0)), nodeDraft(B, loaded(1000)), nodeDraft(C, loaded(2000))],
      request: { prefer: [C, B] },
    });
    expect(d.placement?.node_id).toBe(B);
    expect(d.placement?.flags).toEqual(["affinity"]);
  });

  it("a preferred node that is rejected is passed over", () => {
    const d = decided({ nodes: [nodeDraft(A), nodeDraft(B, { liveness: "dead" })], request: { prefer: [B] } });
    expect(d.placement?.node_id).toBe(A);
    expect(d.placement?.flags).toEqual([]);
  });

  it("prefer naming the top-ranked node does not flag affinity", () => {
    const d = decided({ nodes: [nodeDraft(A, loaded(0)), nodeDraft(B, loaded(1000))], request: { prefer: [A] } });
    expect(d.placement).toMatchObject({ node_id: A, flags: [] });
  });

  it("avoid demotes: the first pool member not avoided wins", () => {
    const d = decided({ nodes: [nodeDraft(A, loaded(0)), nodeDraft(B, loaded(1000))], request: { avoid: [A] } });
    expect(d.placement).toMatchObject({ node_id: B, flags: ["affinity"] });
  });

  it("avoid never excludes the only eligible node", () => {
    const d = decided({ nodes: [nodeDraft(A), nodeDraft(B, { liveness: "dead" })], request: { avoid: [A] } });
    expect(d.placement).toMatchObject({ node_id: A, flags: [] });
  });

  it("when every pool member is avoided the top-ranked one wins", () => {
    const d = decided({ nodes: [nodeDraft(A, loaded(1000)), nodeDraft(B, loaded(0))], request: { avoid: [A, B] } });
    expect(d.placement?.node_id).toBe(B);
  });

  it("prefer wins over avoid for a node named in both", () => {
    const d = decided({
      nodes: [nodeDraft(A, loaded(0)), nodeDraft(B, loaded(1000))],
      request: { prefer: [B], avoid: [B] },
    });
    expect(d.placement?.node_id).toBe(B);
  });
});

describe("emulation as a fallback (spec/mesh.md §8.6)", () => {
  it("an emulated node never wins while a native one is eligible, even when preferred", () => {
    const d = decided({
      nodes: [
        nodeDraft(A, loaded(4000)),
        nodeDraft(B, { ...emulatedOnly, facts: { ...emulatedOnly.facts, cpu: { count: 4, load1_milli: 0 } } }),
      ],
      // A large emulated weight ranks B first; the pool still keeps it out.
      request: { allow_emulated: true, prefer: [B], weights: { execution: { emulated: 500 } } },
    });
    expect(d.candidates[0]?.node_id).toBe(B);
    expect(d.placement?.node_id).toBe(A);
    expect(d.candidates.find((c) => c.node_id === B)).toMatchObject({
      eligible: true,
      route: "emulated",
      flags: ["emulated"],
    });
  });

  it("emulated nodes form the pool only when no native route fits anywhere", () => {
    const d = decided({
      nodes: [nodeDraft(A, { liveness: "dead" }), nodeDraft(B, emulatedOnly)],
      request: { allow_emulated: true },
    });
    expect(d.placement).toMatchObject({ node_id: B, route: "emulated", execution: "emulated", flags: ["emulated"] });
  });

  it("a fallback-tier native node wins over a higher-scored emulated one", () => {
    const d = decided({
      nodes: [nodeDraft(A, { facts: { board: "dev" } }), nodeDraft(B, emulatedOnly)],
      request: { allow_emulated: true, weights: { execution: { emulated: 500 } } },
    });
    expect(d.candidates[0]?.node_id).toBe(B);
    // The pool is A alone, so A is its top member: no affinity flag.
    expect(d.placement).toMatchObject({ node_id: A, execution: "fallback", flags: [] });
  });

  it("dispatch tries the winner, then the other pool members in rank order, then the emulated ones", () => {
    const d = decided({
      nodes: [
        nodeDraft(A, loaded(3000)),
        nodeDraft(B, emulatedOnly),
        nodeDraft(C, loaded(0)),
        nodeDraft(D, loaded(1000)),
      ],
      request: { allow_emulated: true, prefer: [A] },
    });
    expect(dispatchOrder(d)).toEqual([
      { node_id: A, variant: "aarch64-linux", route: "native" },
      { node_id: C, variant: "aarch64-linux", route: "native" },
      { node_id: D, variant: "aarch64-linux", route: "native" },
      { node_id: B, variant: "aarch64-linux", route: "emulated" },
    ]);
  });

  it("an unplaceable decision dispatches nothing", () => {
    expect(dispatchOrder(decided({ nodes: [nodeDraft(A, { liveness: "dead" })] }))).toEqual([]);
  });
});

describe("flags (spec/mesh.md §8.6)", () => {
  it("are listed sorted", () => {
    const d = decided({
      nodes: [
        nodeDraft(A, { liveness: "dead" }),
        nodeDraft(B, { ...emulatedOnly, facts: { ...emulatedOnly.facts, cpu: { count: 0, load1_milli: null } } }),
        nodeDraft(C, emulatedOnly),
      ],
      spec: { perf: { metric: "tps", direction: "higher" } },
      request: { allow_emulated: true, avoid: [C] },
    });
    expect(d.candidates[0]?.node_id).toBe(C);
    expect(d.placement?.node_id).toBe(B);
    expect(d.placement?.flags).toEqual(["affinity", "emulated", "load_unknown", "unmeasured"]);
  });
});
