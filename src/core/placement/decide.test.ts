import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inputDraft, placementInput } from "../../../test/support/placement/arbitraries.js";
import { inputOf, nid, nodeDraft, specDraft } from "../../../test/support/placement/fixtures.js";
import { canonicalJson } from "../crypto/canonical.js";
import { decide, decideUnknown, parsePlacementInput, parsePlacementInputWithViews } from "./decide.js";
import { type PlacementInput, placementInputSchema } from "./inputs.js";
import { CONSTRAINTS, type PlacementDecision } from "./outputs.js";

const RUNS = { numRuns: 400 };

function decided(input: PlacementInput): PlacementDecision | null {
  const r = decide(input);
  return r.ok ? r.value : null;
}

/** The same input with the pin removed: what the nodes look like to the engine regardless of the pin. */
function unpinned(input: PlacementInput): PlacementDecision {
  const r = decide({ ...input, request: { ...input.request, pin: null } });
  if (!r.ok) throw new Error(`an unpinned valid input failed: ${r.error.code}`);
  return r.value;
}

describe("decisions over facts the engine has seen before (issue 35: what facts alone decide is memoised per facts object)", () => {
  it("are deep-equal to decisions over fresh copies of the same input, whatever was decided over those facts before", () => {
    fc.assert(
      fc.property(placementInput, placementInput, (a, b) => {
        // b's request over a's node views: the facts objects were first met under a's request.
        const mixed: PlacementInput = { ...b, nodes: a.nodes };
        decide(a);
        expect(decide(mixed)).toEqual(decide(structuredClone(mixed)));
        expect(decide(a)).toEqual(decide(structuredClone(a)));
      }),
      { numRuns: 300 },
    );
  });
});

describe("decide is total (spec/mesh.md §8.1)", () => {
  it("every generated input is valid for the schema", () => {
    fc.assert(
      fc.property(inputDraft, (d) => {
        expect(placementInputSchema.safeParse(d).success).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("never throws on a valid input, and fails only with a pin error", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const r = decide(input);
        if (!r.ok) {
          expect(["unknown_pin", "pin_ineligible"]).toContain(r.error.code);
          expect(input.request.pin).not.toBeNull();
        }
      }),
      RUNS,
    );
  });

  it("never throws on arbitrary JSON, answering invalid_request instead", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (raw) => {
        const r = decideUnknown(raw);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.error.code).toBe("invalid_request");
      }),
      { numRuns: 300 },
    );
  });

  it("a decision is canonical JSON: integers only, nothing undefined", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const d = decided(input);
        if (d) expect(() => canonicalJson(d)).not.toThrow();
      }),
      RUNS,
    );
  });
});

describe("determinism (spec/mesh.md §8.1, §18.4)", () => {
  it("equal inputs give deep-equal decisions whatever the order of nodes and instances", () => {
    const withShuffles = placementInput.chain((input) =>
      fc.tuple(
        fc.constant(input),
        fc.shuffledSubarray(input.nodes, { minLength: input.nodes.length, maxLength: input.nodes.length }),
        fc.shuffledSubarray(input.cluster.instances, {
          minLength: input.cluster.instances.length,
          maxLength: input.cluster.instances.length,
        }),
      ),
    );
    fc.assert(
      fc.property(withShuffles, ([input, nodes, instances]) => {
        const again = decide({ ...input, nodes, cluster: { ...input.cluster, instances } });
        expect(again).toEqual(decide(input));
      }),
      RUNS,
    );
  });

  it("deciding twice gives the same decision and leaves the input untouched", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const before = structuredClone(input);
        const first = decide(input);
        expect(decide(input)).toEqual(first);
        expect(input).toEqual(before);
      }),
      { numRuns: 200 },
    );
  });
});

describe("rank order and rejections (spec/mesh.md §8.3, §8.6)", () => {
  it("candidates are every node once: eligible by total descending then id, then rejected by id", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const d = unpinned(input);
        expect(d.candidates.map((c) => c.node_id).sort()).toEqual(input.nodes.map((n) => n.node_id).sort());
        for (let i = 1; i < d.candidates.length; i++) {
          const a = d.candidates[i - 1];
          const b = d.candidates[i];
          if (!a || !b) continue;
          if (a.eligible && b.eligible) {
            const at = a.total_centi ?? 0;
            const bt = b.total_centi ?? 0;
            expect(at > bt || (at === bt && a.node_id < b.node_id)).toBe(true);
          } else {
            expect(a.eligible || !b.eligible).toBe(true);
            if (!a.eligible) expect(a.node_id < b.node_id).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it("every rejected node lists at least one named constraint, and every eligible node none", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        for (const c of unpinned(input).candidates) {
          if (c.eligible) {
            expect(c.rejections).toEqual([]);
            expect(c.score).not.toBeNull();
            expect(c.variant).not.toBeNull();
          } else {
            expect(c.rejections.length).toBeGreaterThan(0);
            for (const r of c.rejections) {
              expect(CONSTRAINTS).toContain(r.constraint);
              expect(r.detail.length).toBeGreaterThan(0);
            }
            expect(c.score).toBeNull();
          }
        }
      }),
      RUNS,
    );
  });

  it("no eligible node gives placement null, and any eligible node gives a placement", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const d = unpinned(input);
        const anyEligible = d.candidates.some((c) => c.eligible);
        expect(d.placement !== null).toBe(anyEligible);
      }),
      RUNS,
    );
  });
});

describe("pin, avoid and emulation (spec/mesh.md §8.6)", () => {
  it("a pin never overrides a constraint: it wins only when eligible, else is an error listing its rejections", () => {
    const pinned = placementInput.filter((i) => i.request.pin !== null);
    fc.assert(
      fc.property(pinned, (input) => {
        const pin = input.request.pin as string;
        const view = unpinned(input).candidates.find((c) => c.node_id === pin);
        const r = decide(input);
        if (view === undefined) {
          expect(r.ok ? null : r.error.code).toBe("unknown_pin");
        } else if (!view.eligible) {
          expect(r.ok).toBe(false);
          if (r.ok) return;
          expect(r.error.code).toBe("pin_ineligible");
          expect(r.error.constraints).toEqual(view.rejections);
          for (const rej of view.rejections)
            expect(r.error.message).toContain(`constraint \`${rej.constraint}\`: ${rej.detail}`);
        } else {
          expect(r.ok && r.value.placement?.node_id).toBe(pin);
          expect(r.ok && r.value.placement?.flags).toContain("pinned");
        }
      }),
      RUNS,
    );
  });

  it("avoid never excludes the only eligible node", () => {
    const single = placementInput.map((input) => {
      const d = unpinned(input);
      const eligible = d.candidates.filter((c) => c.eligible).map((c) => c.node_id);
      return { input: { ...input, request: { ...input.request, pin: null, avoid: eligible } }, eligible };
    });
    fc.assert(
      fc.property(single, ({ input, eligible }) => {
        const d = unpinned(input);
        if (eligible.length === 1) expect(d.placement?.node_id).toBe(eligible[0]);
        if (eligible.length > 0) expect(d.placement).not.toBeNull();
      }),
      RUNS,
    );
  });

  it("avoid only demotes: avoiding nodes never changes which are eligible or their scores", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const plain = unpinned({ ...input, request: { ...input.request, avoid: [] } });
        const avoided = unpinned(input);
        const strip = (d: PlacementDecision) =>
          d.candidates.map((c) => ({ ...c, flags: c.flags.filter((f) => f !== "affinity") }));
        expect(strip(avoided)).toEqual(strip(plain));
      }),
      RUNS,
    );
  });

  it("an emulated node never wins while a native one is eligible, and never without allow_emulated", () => {
    fc.assert(
      fc.property(placementInput, (input) => {
        const d = unpinned(input);
        if (!input.request.allow_emulated) expect(d.candidates.some((c) => c.route === "emulated")).toBe(false);
        if (d.placement?.route === "emulated") {
          expect(d.candidates.some((c) => c.eligible && c.route === "native")).toBe(false);
        }
      }),
      RUNS,
    );
  });
});

describe("input errors (spec/mesh.md §8.1)", () => {
  const A = nid(0xa1);

  it("a node listed twice is the error duplicate_node", () => {
    const input = inputOf({ nodes: [nodeDraft(A), nodeDraft(A, { liveness: "dead" })] });
    const r = decide(input);
    expect(r.ok ? null : r.error.code).toBe("duplicate_node");
  });

  it("facts filed under another node's id are invalid_request", () => {
    const input = inputOf({ nodes: [nodeDraft(A)] });
    const other = { ...input, nodes: [{ ...input.nodes[0], node_id: nid(0xb2) } as PlacementInput["nodes"][number]] };
    const r = decide(other);
    expect(r.ok ? null : r.error.code).toBe("invalid_request");
  });

  it("a malformed input is invalid_request naming the offending field", () => {
    const r = parsePlacementInput({
      request: { spec: specDraft({ name: "Not A Name" }) },
      nodes: [],
      cluster: { now_ms: 0 },
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("invalid_request");
      expect(r.error.message).toContain("request.spec.name");
    }
  });

  it("a weight with more than two decimals is invalid_request", () => {
    const r = decideUnknown({
      request: { spec: specDraft(), weights: { load: 0.125 } },
      nodes: [],
      cluster: { now_ms: 0 },
    });
    expect(r.ok ? null : r.error.code).toBe("invalid_request");
  });
});

describe("parsePlacementInputWithViews (issue 19: node views validated where they are made)", () => {
  it("decides exactly what parsePlacementInput decides for the same generated input", () => {
    fc.assert(
      fc.property(inputDraft, (d) => {
        const whole = parsePlacementInput(d);
        if (!whole.ok) throw new Error("a generated draft did not parse");
        const split = parsePlacementInputWithViews({ request: d.request, cluster: d.cluster }, whole.value.nodes);
        if (!split.ok) throw new Error("the split parse refused what the whole parse took");
        expect(split.value).toEqual(whole.value);
        expect(decide(split.value)).toEqual(decide(whole.value));
      }),
      { numRuns: 200 },
    );
  });

  it("still refuses a malformed request or cluster state, naming the field", () => {
    const input = inputOf({ nodes: [nodeDraft(nid(1))] });
    const badRequest = parsePlacementInputWithViews(
      { request: { ...input.request, strategy: "sideways" }, cluster: input.cluster },
      input.nodes,
    );
    expect(badRequest.ok ? null : badRequest.error.message).toMatch(/request\.strategy/);
    const badCluster = parsePlacementInputWithViews({ request: input.request, cluster: { now_ms: -1 } }, input.nodes);
    expect(badCluster.ok ? null : badCluster.error.message).toMatch(/cluster\.now_ms/);
  });
});
