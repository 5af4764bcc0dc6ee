import { describe, expect, it } from "vitest";
import { gist, nodesOf } from "./audit-gist";
import type { AuditEvent } from "./types";

const A = "a".repeat(32);
const B = "b".repeat(32);
const event = (source: string, kind: string, payload: Record<string, unknown>): AuditEvent => ({
  seq: 1,
  chain_id: "c",
  ts: 0,
  prev_hash: "",
  source,
  kind,
  payload,
  payload_hash: "",
  hash: "",
  sig: "",
});

describe("the audit view's gist", () => {
  it("shows a gate verdict for one node with that node", () => {
    expect(gist(event("gate", "workload.load", { decision: "allow", node: A, permit_rule: "r" }))).toBe(
      `decision=allow node=${A} permit_rule=r`,
    );
  });

  it("counts the nodes a grouped gate verdict names, and its details link each of them", () => {
    const grouped = event("gate", "workload.load", { decision: "allow", nodes: [A, B], permit_rule: "r" });
    expect(gist(grouped)).toBe("decision=allow nodes=2 permit_rule=r");
    expect(nodesOf(grouped)).toEqual([A, B]);
    expect(gist(event("gate", "workload.load", { decision: "deny", nodes: [B] }))).toBe(`decision=deny node=${B}`);
  });

  it("says how many nodes the gate permitted for a decision naming a gate summary (issue 35)", () => {
    const decision = event("placement", "workload.place", {
      phase: "decision",
      name: "web",
      gate: { summary: "f".repeat(64), action: "workload.place", nodes: 1000, permitted: 998 },
    });
    expect(gist(decision)).toBe("name=web phase=decision gate=998/1000 permitted");
  });

  it("names no node for a payload whose node is not a node id", () => {
    expect(nodesOf(event("placement", "workload.place", { node: "somewhere", nodes: ["x"] }))).toEqual([]);
  });
});
