import { describe, expect, it } from "vitest";
import type { NodeId } from "../crypto/ed25519.js";
import { classifyMesh } from "./mesh-classify.js";
import { type ControllerRecords, type NodeInstanceRow, observeMeshAgent, startupOf } from "./mesh-observe.js";

const A = "a".repeat(32) as NodeId;
const B = "b".repeat(32) as NodeId;

function row(over: Partial<NodeInstanceRow> = {}): NodeInstanceRow {
  return { instance_id: "scout-000000000001", decision_id: "d1", name: "scout", state: "running", exit_code: null, agent: "scout", intent: "f1", generation: 1, ...over };
}
function records(over: Partial<ControllerRecords> = {}): ControllerRecords {
  return { placements: [], unsettled: [], seqOf: (id) => (id === "d1" ? 5 : id === "d2" ? 9 : null), ...over };
}
const placement = (instance_id: string, node_id: string, pending: string | null = null) => ({ instance_id, name: "scout", node_id, decision_id: "d1", pending });

describe("observing a mesh agent from node status rows", () => {
  it("maps every node state to the classifier's startup vocabulary", () => {
    expect(startupOf("running", null, null).kind).toBe("started");
    for (const s of ["loading", "loaded", "starting"]) expect(startupOf(s, null, null).kind).toBe("never-started");
    for (const s of ["stopped", "exited", "lost", "failed"]) expect(startupOf(s, 3, null)).toEqual({ kind: "terminated", exitCode: 3 });
    expect(startupOf("running", null, "unload").kind, "a lost unload answer: going away").toBe("going-away");
    expect(startupOf("something-new", null, null).kind, "an unknown state is never acted on").toBe("going-away");
  });

  it("classifies only rows that name the agent; a plain workload with the same name is reported as unclaimed", () => {
    const o = observeMeshAgent("scout", [{ kind: "answered", nodeId: A, rows: [row({ agent: null }), row({ instance_id: "other-000000000002", name: "other", agent: "other" })] }], records());
    expect(o.observation.instances).toEqual([]);
    expect(o.shown.unclaimed).toEqual([{ node_id: A, instance_id: "scout-000000000001" }]);
    expect(classifyMesh(o.observation, "f1").row).toBe("no-instance");
  });

  it("a silent node holding one of our placements makes the instance unobservable, never absent", () => {
    const o = observeMeshAgent("scout", [{ kind: "unreachable", nodeId: A, reason: "timeout" }], records({ placements: [placement("scout-000000000001", A)] }));
    expect(o.observation.unobservable).toEqual([{ nodeId: A, instanceId: "scout-000000000001" }]);
    expect(classifyMesh(o.observation, "f1").action.kind).toBe("await-contact");
  });

  it("a record whose node answered without listing it is stale and only holds the name", () => {
    const o = observeMeshAgent("scout", [{ kind: "answered", nodeId: A, rows: [] }], records({ placements: [placement("scout-000000000001", A)] }));
    expect(o.staleRecords).toEqual(["scout-000000000001"]);
    expect(classifyMesh(o.observation, "f1").action.kind).toBe("place");
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
    const o = observeMeshAgent("scout", [], records({ unsettled: [{ decision_id: "d9", name: "scout", node_id: A }, { decision_id: "d8", name: "other", node_id: A }] }));
    expect(o.observation.unsettled).toEqual(["d9"]);
  });
});
