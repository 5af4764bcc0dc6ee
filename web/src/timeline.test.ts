import { describe, expect, it } from "vitest";
import { timelineOf } from "./timeline";
import type { AuditEvent } from "./types";

let seq = 0;
function ev(kind: string, source: string, payload: Record<string, unknown>): AuditEvent {
  seq++;
  return {
    seq,
    chain_id: "c",
    ts: 1_800_000_000_000 + seq,
    prev_hash: "",
    source,
    kind,
    payload,
    payload_hash: "",
    hash: `h${seq}`,
    sig: "",
  };
}

/** The chain `berth up` writes for one agent, then a replace, as seen on a real controller. */
const chain: AuditEvent[] = [
  ev("workload.place", "gate", { action: "workload.place", agent: "controller-id", decision: "permit", node: "n1" }),
  ev("workload.place", "placement", {
    phase: "decision",
    name: "heartbeat",
    dry_run: false,
    decision: { placement: { node_id: "n1" } },
  }),
  ev("workload.place", "placement", {
    phase: "placed",
    decision_id: "h2",
    instance_id: "heartbeat-1",
    node: "n1",
    target_result: { name: "heartbeat" },
  }),
  ev("agent.deploy", "placement", {
    agent: "heartbeat",
    action: "place",
    instance: "heartbeat-1",
    fence: null,
    message: "heartbeat: started heartbeat-1 on node n1",
  }),
  ev("workload.place", "placement", {
    phase: "placed",
    decision_id: "h9",
    instance_id: "scout-1",
    node: "n2",
    target_result: { name: "scout" },
  }),
  ev("workload.unload", "placement", { phase: "request", instance_id: "heartbeat-1", name: "heartbeat", node: "n1" }),
  ev("workload.unload", "placement", {
    phase: "outcome",
    instance_id: "heartbeat-1",
    node: "n1",
    result: "ok",
    decision_id: "d",
  }),
  ev("workload.exit", "node", { instance_id: "heartbeat-1", exit_code: 143 }),
  ev("agent.deploy", "placement", {
    agent: "heartbeat",
    action: "replace (user)",
    instance: "heartbeat-2",
    fence: { instance_id: "heartbeat-1" },
    message: "heartbeat: replaced",
  }),
];

describe("an agent's timeline from the chain", () => {
  it("lists its decision, placement, deploy, unload outcome, exit and replace in chain order, and nothing of other agents", () => {
    const t = timelineOf("heartbeat", chain);
    expect(t.map((e) => e.kind)).toEqual(["decision", "placed", "deploy", "unload", "exit", "replace"]);
    expect(t.find((e) => e.kind === "decision")?.decisionId).toBe("h2");
    expect(t.find((e) => e.kind === "placed")).toMatchObject({
      decisionId: "h2",
      instanceId: "heartbeat-1",
      nodeId: "n1",
    });
    expect(t.find((e) => e.kind === "exit")?.text).toContain("code 143");
  });

  it("leaves out the gate's events, whose agent is the controller, and a verb's request half", () => {
    const t = timelineOf("heartbeat", chain);
    expect(t.some((e) => e.seq === 1 || e.seq === 6)).toBe(false);
    expect(timelineOf("controller-id", chain)).toEqual([]);
  });

  it("follows an exit only once an earlier event tied the instance to the agent", () => {
    const exitFirst = [chain[7], chain[2]].filter((e): e is AuditEvent => e !== undefined);
    expect(timelineOf("heartbeat", exitFirst).map((e) => e.kind)).toEqual(["placed"]);
  });
});
