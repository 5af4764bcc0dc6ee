import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NodeId } from "../crypto/ed25519.js";
import { classifyMesh } from "./mesh-classify.js";
import { type ControllerRecords, type NodeInstanceRow, observeMeshAgent, startupOf } from "./mesh-observe.js";

const A = "a".repeat(32) as NodeId;
const B = "b".repeat(32) as NodeId;

function row(over: Partial<NodeInstanceRow> = {}): NodeInstanceRow {
  return {
    instance_id: "scout-000000000001",
    decision_id: "d1",
    name: "scout",
    state: "running",
    exit_code: null,
    agent: "scout",
    intent: "f1",
    generation: 1,
    restarts: 0,
    ...over,
  };
}
function records(over: Partial<ControllerRecords> = {}): ControllerRecords {
  const placedBefore = new Set((over.placements ?? []).map((p) => p.decision_id));
  return {
    placements: [],
    unsettled: [],
    placedBefore,
    seqOf: (id) => (id === "d1" ? 5 : id === "d2" ? 9 : null),
    ...over,
  };
}
const placement = (instance_id: string, node_id: string, pending: string | null = null) => ({
  instance_id,
  name: "scout",
  node_id,
  decision_id: "d1",
  pending,
});

describe("observing a mesh agent from node status rows", () => {
  it("maps every node state to the classifier's startup vocabulary", () => {
    expect(startupOf("running", null, null).kind).toBe("started");
    for (const s of ["loading", "loaded", "starting"]) expect(startupOf(s, null, null).kind).toBe("never-started");
    for (const s of ["stopped", "exited", "lost", "failed", "finished"])
      expect(startupOf(s, 3, null)).toEqual({ kind: "terminated", exitCode: 3 });
    // Issue 15: the node is keeping it alive, so a deploy leaves it alone.
    for (const s of ["unhealthy", "backoff"]) expect(startupOf(s, null, null).kind).toBe("started");
    expect(startupOf("running", null, "unload").kind, "a lost unload answer: going away").toBe("going-away");
    expect(startupOf("something-new", null, null).kind, "an unknown state is never acted on").toBe("going-away");
  });

  it("classifies only rows that name the agent; a plain workload with the same name is reported as unclaimed", () => {
    const o = observeMeshAgent(
      "scout",
      [
        {
          kind: "answered",
          nodeId: A,
          rows: [row({ agent: null }), row({ instance_id: "other-000000000002", name: "other", agent: "other" })],
        },
      ],
      records(),
    );
    expect(o.observation.instances).toEqual([]);
    expect(o.shown.unclaimed).toEqual([{ node_id: A, instance_id: "scout-000000000001" }]);
    expect(classifyMesh(o.observation, "f1").row).toBe("no-instance");
  });

  it("a silent node holding one of our placements makes the instance unobservable, never absent", () => {
    const o = observeMeshAgent(
      "scout",
      [{ kind: "unreachable", nodeId: A, reason: "timeout" }],
      records({ placements: [placement("scout-000000000001", A)] }),
    );
    expect(o.observation.unobservable).toEqual([{ nodeId: A, instanceId: "scout-000000000001" }]);
    expect(classifyMesh(o.observation, "f1").action.kind).toBe("await-contact");
  });

  it("a record whose node answered without listing it is stale and only holds the name", () => {
    const o = observeMeshAgent(
      "scout",
      [{ kind: "answered", nodeId: A, rows: [] }],
      records({ placements: [placement("scout-000000000001", A)] }),
    );
    expect(o.staleRecords).toEqual([{ instanceId: "scout-000000000001", nodeId: A, decisionId: "d1" }]);
    expect(o.placedMeanwhile).toEqual([]);
    expect(classifyMesh(o.observation, "f1").action.kind).toBe("place");
  });

  it("a record that appeared while the nodes were asked is never stale, whichever node answered first", () => {
    const fresh = { ...placement("scout-000000000002", A), decision_id: "d2" };
    const o = observeMeshAgent(
      "scout",
      [{ kind: "answered", nodeId: A, rows: [] }],
      records({ placements: [fresh], placedBefore: new Set() }),
    );
    expect(o.staleRecords).toEqual([]);
    expect(o.placedMeanwhile).toEqual([{ instanceId: "scout-000000000002", nodeId: A, decisionId: "d2" }]);
  });

  it("staleness follows the decision id, not the instance: a record replaced under the same name is judged afresh", () => {
    const replaced = { ...placement("scout-000000000001", A), decision_id: "d2" };
    const o = observeMeshAgent(
      "scout",
      [{ kind: "answered", nodeId: A, rows: [] }],
      records({ placements: [replaced], placedBefore: new Set(["d1"]) }),
    );
    expect(o.staleRecords).toEqual([]);
    expect(o.placedMeanwhile.map((r) => r.decisionId)).toEqual(["d2"]);
  });

  it("orders duplicates by decision seq, and an instance this controller never decided is the youngest", () => {
    const o = observeMeshAgent(
      "scout",
      [
        { kind: "answered", nodeId: A, rows: [row({ instance_id: "scout-00000000000a", decision_id: "foreign" })] },
        { kind: "answered", nodeId: B, rows: [row({ instance_id: "scout-00000000000b", decision_id: "d2" })] },
      ],
      records(),
    );
    const c = classifyMesh(o.observation, "f1");
    expect(c.action).toMatchObject({ kind: "report-duplicates", keep: { instanceId: "scout-00000000000b" } });
  });

  it("picks up the agent's unsettled decisions only", () => {
    const o = observeMeshAgent(
      "scout",
      [],
      records({
        unsettled: [
          { decision_id: "d9", name: "scout", node_id: A },
          { decision_id: "d8", name: "other", node_id: A },
        ],
      }),
    );
    expect(o.observation.unsettled).toEqual(["d9"]);
  });
});

describe("mesh observation invariants (property)", () => {
  const rowArb = fc.record({
    node: fc.constantFrom(A, B),
    state: fc.constantFrom("loading", "loaded", "starting", "running", "stopped", "exited", "lost", "failed", "weird"),
    agent: fc.constantFrom("scout", "other", null),
    intent: fc.constantFrom("f1", "f2", null),
    id: fc.constantFrom("scout-000000000001", "scout-000000000002", "other-000000000003"),
    generation: fc.nat(3),
  });
  const worldArb = fc.record({
    rows: fc.array(rowArb, { maxLength: 4 }),
    silent: fc.subarray([A, B]),
    placed: fc.array(
      fc.record({
        id: fc.constantFrom("scout-000000000001", "scout-000000000002"),
        node: fc.constantFrom(A, B),
        pending: fc.constantFrom(null, "unload", "stop"),
      }),
      { maxLength: 2 },
    ),
  });

  it("never places or replaces while a node holding one of the agent's placements is silent, and never acts on a started instance", () => {
    fc.assert(
      fc.property(worldArb, fc.constantFrom("f1", "f2"), (w, desired) => {
        const answers = [A, B].map((n) =>
          w.silent.includes(n)
            ? { kind: "unreachable" as const, nodeId: n, reason: "cut" }
            : {
                kind: "answered" as const,
                nodeId: n,
                rows: w.rows
                  .filter((r) => r.node === n)
                  .map((r) =>
                    row({
                      instance_id: r.id,
                      state: r.state,
                      agent: r.agent,
                      intent: r.intent,
                      generation: r.generation,
                    }),
                  ),
              },
        );
        const o = observeMeshAgent(
          "scout",
          answers,
          records({ placements: w.placed.map((p) => ({ ...placement(p.id, p.node, p.pending) })) }),
        );
        const { action } = classifyMesh(o.observation, desired);
        const holdsSilent = w.placed.some((p) => w.silent.includes(p.node));
        if (holdsSilent) expect(["place", "replace"]).not.toContain(action.kind);
        if (action.kind === "replace") {
          const target = o.observation.instances.find((i) => i.fence === action.fence);
          expect(target?.startup.kind).not.toBe("started");
        }
      }),
    );
  });
});
