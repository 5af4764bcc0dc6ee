import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ControllerBinding, judgeAuthority, judgeRehome } from "./epoch-fence.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const bound = (store_id: string, epoch: number): ControllerBinding => ({ store_id, epoch });

describe("the node's fence on a controller's store and leader epoch (issue 20)", () => {
  it.each([
    [
      "an unbound key is bound to the first store that names itself, by a mutating request",
      null,
      { store_id: A, epoch: 3 },
      true,
      { kind: "serve", change: { kind: "bind", store_id: A, epoch: 3 } },
    ],
    [
      "an unbound key is bound by a read too (a new store's first describe)",
      null,
      { store_id: A, epoch: 0 },
      false,
      { kind: "serve", change: { kind: "bind", store_id: A, epoch: 0 } },
    ],
    ["a read without an authority changes nothing", bound(A, 2), null, false, { kind: "serve", change: null }],
    [
      "the bound store at the same epoch is served unchanged",
      bound(A, 2),
      { store_id: A, epoch: 2 },
      true,
      { kind: "serve", change: null },
    ],
    [
      "a higher epoch of the bound store is raised before it is served",
      bound(A, 2),
      { store_id: A, epoch: 5 },
      true,
      { kind: "serve", change: { kind: "raise", store_id: A, from: 2, to: 5 } },
    ],
    [
      "a read with a higher epoch raises it too (a new leader's describe fences the old)",
      bound(A, 2),
      { store_id: A, epoch: 5 },
      false,
      { kind: "serve", change: { kind: "raise", store_id: A, from: 2, to: 5 } },
    ],
    [
      "a read with a lower epoch is answered and changes nothing",
      bound(A, 5),
      { store_id: A, epoch: 2 },
      false,
      { kind: "serve", change: null },
    ],
    [
      "a read from another store is answered and changes nothing",
      bound(A, 5),
      { store_id: B, epoch: 9 },
      false,
      { kind: "serve", change: null },
    ],
  ] as const)("%s", (_name, binding, authority, mutating, expected) => {
    expect(judgeAuthority(binding, authority, mutating)).toEqual(expected);
  });

  it("refuses a mutating request from another store foreign_store, whatever its epoch, and says how to move the node", () => {
    for (const epoch of [0, 5, 99]) {
      const v = judgeAuthority(bound(A, 5), { store_id: B, epoch }, true);
      expect(v).toMatchObject({ kind: "refuse", code: "foreign_store" });
      if (v.kind === "refuse") expect(v.reason).toMatch(/berth node rehome/);
    }
  });

  it("refuses a mutating request below the highest epoch seen stale_epoch", () => {
    expect(judgeAuthority(bound(A, 5), { store_id: A, epoch: 4 }, true)).toMatchObject({
      kind: "refuse",
      code: "stale_epoch",
    });
  });

  it("never lets an epoch of the bound store go down, and never moves the binding to another store, over any sequence of requests", () => {
    const request = fc.record({ store: fc.constantFrom(A, B), epoch: fc.nat({ max: 20 }), mutating: fc.boolean() });
    fc.assert(
      fc.property(fc.array(request, { maxLength: 40 }), (requests) => {
        let binding: ControllerBinding | null = null;
        let firstStore: string | null = null;
        let highest = -1;
        for (const r of requests) {
          const v = judgeAuthority(binding, { store_id: r.store, epoch: r.epoch }, r.mutating);
          if (v.kind === "serve" && r.mutating) {
            // A mutating request is served only from the first store, at or above every epoch seen from it.
            expect(r.store).toBe(firstStore ?? r.store);
            expect(r.epoch).toBeGreaterThanOrEqual(highest);
          }
          if (v.kind === "serve" && v.change)
            binding =
              v.change.kind === "bind"
                ? { store_id: v.change.store_id, epoch: v.change.epoch }
                : { store_id: v.change.store_id, epoch: v.change.to };
          firstStore ??= binding?.store_id ?? null;
          if (binding) {
            expect(binding.store_id).toBe(firstStore);
            expect(binding.epoch).toBeGreaterThanOrEqual(highest);
            highest = binding.epoch;
          }
        }
      }),
    );
  });
});

describe("rehome, the operator's move of a node to another store", () => {
  it("moves the binding to another store at that store's epoch, naming the binding it replaces", () => {
    expect(judgeRehome(bound(A, 7), { store_id: B, epoch: 1 })).toEqual({
      kind: "rehome",
      from: bound(A, 7),
      to: bound(B, 1),
    });
    expect(judgeRehome(null, { store_id: B, epoch: 0 })).toEqual({ kind: "rehome", from: null, to: bound(B, 0) });
  });

  it("from the bound store itself cannot lower the epoch: a deposed leader re-homing to its own store is stale_epoch", () => {
    expect(judgeRehome(bound(A, 7), { store_id: A, epoch: 3 })).toMatchObject({ kind: "refuse", code: "stale_epoch" });
    expect(judgeRehome(bound(A, 7), { store_id: A, epoch: 9 })).toEqual({
      kind: "rehome",
      from: bound(A, 7),
      to: bound(A, 9),
    });
  });
});
