import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NodeId } from "../crypto/ed25519.js";
import {
  classifyMesh,
  classifyMeshReplace,
  type InstanceStartup,
  type MeshObservation,
  verifyInstance,
  type VerifiedInstance,
} from "./mesh-classify.js";

const NODE_A = "a".repeat(32) as NodeId;
const NODE_B = "b".repeat(32) as NodeId;

function instance(
  startup: InstanceStartup,
  intent: string | null,
  opts: { node?: NodeId; id?: string; seq?: number; generation?: number } = {},
): VerifiedInstance {
  const v = verifyInstance(
    {
      nodeId: opts.node ?? NODE_A,
      instanceId: opts.id ?? "inst-1",
      generation: opts.generation ?? 3,
      agent: "scout",
      intent,
      startup,
      placedSeq: opts.seq ?? 10,
    },
    "scout",
  );
  if (!v) throw new Error("fixture must verify");
  return v;
}
const seen = (...instances: VerifiedInstance[]): MeshObservation => ({ instances, unsettled: [], unobservable: [] });

describe("the mesh deploy classifier (rows ported from the Kubernetes table)", () => {
  it("places when no instance of the agent exists anywhere", () => {
    expect(classifyMesh(seen(), "f1").action).toEqual({ kind: "place" });
  });

  it("settles an unsettled decision before anything else, even when nothing is visible", () => {
    const r = classifyMesh({ instances: [], unsettled: ["d1"], unobservable: [] }, "f1");
    expect(r).toEqual({ row: "unsettled-decision", action: { kind: "settle-first", decisionIds: ["d1"] } });
    const withLive = classifyMesh(
      { instances: [instance({ kind: "started" }, "f1")], unsettled: ["d1"], unobservable: [] },
      "f1",
    );
    expect(withLive.action.kind).toBe("settle-first");
  });

  it("is a strict no-op on a started instance, even when the intent diverged", () => {
    for (const desired of ["f1", "f2"]) {
      const i = instance({ kind: "started" }, "f1");
      expect(classifyMesh(seen(i), desired)).toEqual({ row: "started", action: { kind: "no-op", instance: i.fence } });
    }
  });

  it("replaces a terminated instance through its own fence", () => {
    const i = instance({ kind: "terminated", exitCode: 1 }, "f1");
    const r = classifyMesh(seen(i), "f1");
    expect(r.row).toBe("terminated");
    expect(r.action).toMatchObject({ kind: "replace", cause: "terminated", fence: i.fence });
  });

  it("only observes a never-started instance whose recorded intent matches", () => {
    const i = instance({ kind: "never-started" }, "same");
    expect(classifyMesh(seen(i), "same").action).toEqual({ kind: "observe", instance: i.fence });
  });

  it("replaces a never-started instance whose intent diverged, or that recorded none", () => {
    for (const recorded of ["old", null]) {
      const i = instance({ kind: "never-started" }, recorded);
      expect(classifyMesh(seen(i), "new").action).toMatchObject({
        kind: "replace",
        cause: "intent-diverged",
        fence: i.fence,
      });
    }
  });

  it("awaits an instance that is going away, whatever else is true of it", () => {
    const i = instance({ kind: "going-away" }, "f1");
    expect(classifyMesh(seen(i), "f2").action).toEqual({ kind: "await-disappearance", fence: i.fence });
  });

  it("acts on nothing while a node holding an instance of the agent does not answer", () => {
    const away = [{ nodeId: NODE_B, instanceId: "scout-0123456789ab" }];
    expect(classifyMesh({ instances: [], unsettled: [], unobservable: away }, "f1")).toEqual({
      row: "instance-unobservable",
      action: { kind: "await-contact", instances: away },
    });
    const terminated = instance({ kind: "terminated", exitCode: 0 }, "f1");
    expect(
      classifyMesh({ instances: [terminated], unsettled: [], unobservable: away }, "f1").action.kind,
      "no fenced replace while blind",
    ).toBe("await-contact");
  });

  it("reports two live instances, keeps the older and touches neither", () => {
    const older = instance({ kind: "started" }, "f1", { node: NODE_B, id: "old", seq: 5 });
    const newer = instance({ kind: "started" }, "f1", { node: NODE_A, id: "new", seq: 9 });
    const r = classifyMesh(seen(newer, older), "f1");
    expect(r).toEqual({
      row: "two-live-instances",
      action: { kind: "report-duplicates", keep: older.fence, others: [newer.fence] },
    });
  });

  it("never lets an instance of another agent reach the classifier", () => {
    expect(
      verifyInstance(
        {
          nodeId: NODE_A,
          instanceId: "x",
          generation: 1,
          agent: "other",
          intent: "f",
          startup: { kind: "started" },
          placedSeq: 1,
        },
        "scout",
      ),
    ).toBeNull();
    expect(
      verifyInstance(
        {
          nodeId: NODE_A,
          instanceId: "x",
          generation: 1,
          agent: null,
          intent: "f",
          startup: { kind: "started" },
          placedSeq: 1,
        },
        "scout",
      ),
    ).toBeNull();
  });
});

const startupArb: fc.Arbitrary<InstanceStartup> = fc.oneof(
  fc.constant({ kind: "started" as const }),
  fc.record({ kind: fc.constant("terminated" as const), exitCode: fc.option(fc.integer({ min: 0, max: 255 })) }),
  fc.constant({ kind: "never-started" as const }),
  fc.constant({ kind: "going-away" as const }),
);
const observationArb = fc.record({
  instances: fc.array(
    fc.record({
      startup: startupArb,
      intent: fc.option(fc.constantFrom("f1", "f2")),
      node: fc.constantFrom(NODE_A, NODE_B),
      id: fc.string({ minLength: 1, maxLength: 4 }),
      seq: fc.nat(100),
      generation: fc.nat(5),
    }),
    { maxLength: 4 },
  ),
  unsettled: fc.array(fc.string({ minLength: 4, maxLength: 4 }), { maxLength: 2 }),
  unobservable: fc.array(fc.record({ nodeId: fc.constantFrom(NODE_A, NODE_B), instanceId: fc.constant("gone-1") }), {
    maxLength: 1,
  }),
});

describe("mesh classifier invariants (property)", () => {
  it("never replaces or otherwise touches a started instance", () => {
    fc.assert(
      fc.property(observationArb, fc.constantFrom("f1", "f2"), (o, desired) => {
        const instances = o.instances.map((i) => instance(i.startup, i.intent, i));
        const { action } = classifyMesh({ instances, unsettled: o.unsettled, unobservable: o.unobservable }, desired);
        if (action.kind === "replace") {
          const target = instances.find((i) => i.fence === action.fence);
          expect(target?.startup.kind).not.toBe("started");
        }
      }),
    );
  });

  it("every replace carries the fence of an observed instance, unchanged", () => {
    fc.assert(
      fc.property(observationArb, fc.constantFrom("f1", "f2"), (o, desired) => {
        const instances = o.instances.map((i) => instance(i.startup, i.intent, i));
        const { action } = classifyMesh({ instances, unsettled: o.unsettled, unobservable: o.unobservable }, desired);
        if (action.kind === "replace") expect(instances.some((i) => i.fence === action.fence)).toBe(true);
      }),
    );
  });

  it("repeated identical deploys of a started agent never place or replace anything", () => {
    fc.assert(
      fc.property(fc.constantFrom("f1", "f2"), fc.integer({ min: 1, max: 50 }), (intent, times) => {
        const i = instance({ kind: "started" }, intent);
        for (let n = 0; n < times; n++) expect(classifyMesh(seen(i), intent).action.kind).toBe("no-op");
      }),
    );
  });

  it("never places while a decision is unsettled or an instance exists", () => {
    fc.assert(
      fc.property(observationArb, fc.constantFrom("f1", "f2"), (o, desired) => {
        const instances = o.instances.map((i) => instance(i.startup, i.intent, i));
        const { action } = classifyMesh({ instances, unsettled: o.unsettled, unobservable: o.unobservable }, desired);
        if (action.kind === "place") {
          expect(o.unsettled).toEqual([]);
          expect(o.unobservable).toEqual([]);
          expect(instances).toEqual([]);
        }
      }),
    );
  });
});

describe("berth agent replace (the user's explicit say)", () => {
  it("turns a started or an observed never-started instance into a replace carrying its fence", () => {
    for (const [startup, intent] of [
      [{ kind: "started" }, "f2"],
      [{ kind: "never-started" }, "f1"],
    ] as const) {
      const i = instance(startup, intent);
      expect(classifyMeshReplace(seen(i), "f1").action).toMatchObject({
        kind: "replace",
        cause: "user",
        fence: i.fence,
      });
    }
  });

  it("still settles first, still refuses to act blind, and never chooses between duplicates", () => {
    const live = instance({ kind: "started" }, "f1");
    expect(classifyMeshReplace({ instances: [live], unsettled: ["d1"], unobservable: [] }, "f1").action.kind).toBe(
      "settle-first",
    );
    expect(
      classifyMeshReplace(
        { instances: [live], unsettled: [], unobservable: [{ nodeId: NODE_B, instanceId: "x" }] },
        "f1",
      ).action.kind,
    ).toBe("await-contact");
    const other = instance({ kind: "started" }, "f1", { node: NODE_B, id: "b", seq: 20 });
    expect(classifyMeshReplace(seen(live, other), "f1").action.kind).toBe("report-duplicates");
  });
});
