import { describe, expect, it } from "vitest";
import { alertsOf } from "./alerts";
import type { AgentState, AuditEvent, InstanceInfo, NodeInfo } from "./types";

const node = (name: string, liveness: NodeInfo["liveness"], error: string | null = null): NodeInfo => ({
  addr: `${name}:1`,
  node_id: `${name}-id`,
  key: null,
  name,
  tier: "paired",
  tier_source: "api",
  liveness,
  boot_id: null,
  learned_ms: null,
  last_ok_ms: null,
  facts_expire_at_ms: null,
  error,
  facts: null,
  cordoned: false,
  cordon_reason: null,
  forgotten_ms: null,
  forget_reason: null,
});
const instance = (name: string, id: string, state: string): InstanceInfo => ({
  instance_id: id,
  name,
  node_id: "n",
  decision_id: "d",
  variant: "v",
  route: "native",
  package_id: "p",
  placed_ms: 0,
  adopted: false,
  pending: null,
  state,
  status: null,
});
const agent = (name: string, error: string | null): AgentState => ({
  name,
  target: "mesh",
  state: "running",
  row: null,
  next: null,
  instance: null,
  observation: null,
  error,
});
const event = (seq: number, kind: string, source: string, payload: Record<string, unknown>): AuditEvent => ({
  seq,
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
const none = { nodes: [], unsettled: [], instances: [], agents: [], events: [] };

describe("the overview's alerts", () => {
  it("are none on a healthy mesh, and none for a node never described yet", () => {
    expect(
      alertsOf({
        ...none,
        nodes: [node("a", "alive"), node("b", "unknown")],
        instances: [instance("x", "x-1", "running")],
        agents: [agent("x", null)],
      }),
    ).toEqual([]);
  });

  it("name an unsettled decision, a dead or erroring node, and an agent in error, each with the view that shows it", () => {
    const alerts = alertsOf({
      ...none,
      unsettled: [
        { decision_id: "dec", name: "x", node_id: "n", variant: "v", package_id: "p", created_ms: 0, workload: {} },
      ],
      nodes: [node("a", "dead"), node("b", "unknown", "connect ECONNREFUSED")],
      agents: [agent("x", "node did not answer")],
    });
    expect(alerts.map((a) => [a.kind, a.view, a.id])).toEqual([
      ["unsettled", "placements", "dec"],
      ["node unreachable", "nodes", "a-id"],
      ["node unreachable", "nodes", "b-id"],
      ["agent error", "agents", "x"],
    ]);
  });

  it("flag an agent with two running instances, but not a running one beside a stopped copy", () => {
    const alerts = alertsOf({
      ...none,
      instances: [
        instance("x", "x-1", "running"),
        instance("x", "x-2", "running"),
        instance("y", "y-1", "running"),
        instance("y", "y-2", "exited"),
      ],
    });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ kind: "duplicate agent", id: "x" });
    expect(alerts[0]?.text).toContain("x-1, x-2");
  });

  it("list the chain's recent denials newest first, and not the permits", () => {
    const alerts = alertsOf({
      ...none,
      events: [
        event(1, "workload.place", "gate", { decision: "permit", action: "workload.place" }),
        event(2, "workload.refuse", "placement", { name: "x", error: "no signer" }),
        event(3, "api.call", "api", { phase: "outcome", status: 401, route: "/api/v1/nodes", error: "unauthorized" }),
        event(4, "workload.place", "gate", { decision: "deny", action: "workload.place", reason: "rule r" }),
      ],
    });
    expect(alerts.map((a) => a.id)).toEqual(["4", "3", "2"]);
    expect(alerts.every((a) => a.kind === "denied" && a.view === "audit")).toBe(true);
  });
});
