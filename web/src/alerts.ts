/**
 * What needs a person, from what the API already offers (issue 13, overview "alerts"): unsettled decisions, nodes
 * that do not answer, agents with more than one live instance, agents in error, and recent denials in the chain
 * (a refused workload, a refused node key, a gate's deny, a call the API turned away for its token). Pure.
 */
import type { View } from "./route";
import type { AgentState, AuditEvent, InstanceInfo, NodeInfo, UnsettledDecision } from "./types";

export type AlertKind = "unsettled" | "node unreachable" | "duplicate agent" | "agent error" | "denied";

export interface Alert {
  readonly kind: AlertKind;
  readonly severity: "bad" | "warn";
  readonly text: string;
  readonly view: View;
  readonly id: string;
}

export interface AlertInputs {
  readonly nodes: readonly NodeInfo[];
  readonly unsettled: readonly UnsettledDecision[];
  readonly instances: readonly InstanceInfo[];
  readonly agents: readonly AgentState[];
  /** The newest audit events, oldest first (the app's tail). */
  readonly events: readonly AuditEvent[];
}

/** How many recent denials the overview lists (older ones stay in the Audit view). */
export const DENIALS_SHOWN = 10;

/** Instance states in which a copy of the agent runs (a loaded or stopped copy is not a second live one). */
const LIVE_STATES = new Set(["running", "starting"]);

function denial(e: AuditEvent): string | null {
  const p = e.payload;
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  if (e.kind === "workload.refuse")
    return `${text(p.name) || text(p.instance_id) || "a workload"} refused: ${text(p.error) || text(p.reason) || text(p.code)}`;
  if (e.kind === "peer.key_refused") return `a node key was refused at ${text(p.addr) || text(p.node) || "?"}`;
  if (e.source === "gate" && p.decision !== undefined && p.decision !== "permit")
    return `${text(p.action) || e.kind} denied by the governance gate: ${text(p.reason)}`;
  if (e.kind === "api.call" && (p.status === 401 || p.status === 403))
    return `the API turned away ${text(p.route)} (${String(p.status)} ${text(p.error)})`;
  return null;
}

export function alertsOf(i: AlertInputs): Alert[] {
  const out: Alert[] = [];
  for (const u of i.unsettled) {
    out.push({
      kind: "unsettled",
      severity: "bad",
      text: `${u.name}: decision unsettled since ${new Date(u.created_ms).toISOString()}; its node may hold the instance`,
      view: "placements",
      id: u.decision_id,
    });
  }
  for (const n of i.nodes) {
    if (n.liveness === "alive") continue;
    if (n.liveness === "unknown" && n.error === null) continue; // never described yet: nothing is known to be wrong
    out.push({
      kind: "node unreachable",
      severity: n.liveness === "dead" ? "bad" : "warn",
      text: `${n.name ?? n.addr} is ${n.liveness}${n.error ? `: ${n.error}` : ""}`,
      view: "nodes",
      id: n.node_id ?? n.addr,
    });
  }
  const live = new Map<string, InstanceInfo[]>();
  for (const inst of i.instances) {
    if (!LIVE_STATES.has(inst.state)) continue;
    live.set(inst.name, [...(live.get(inst.name) ?? []), inst]);
  }
  for (const [name, copies] of live) {
    if (copies.length < 2) continue;
    out.push({
      kind: "duplicate agent",
      severity: "bad",
      text: `${name} has ${copies.length} live instances: ${copies.map((c) => c.instance_id).join(", ")}`,
      view: "agents",
      id: name,
    });
  }
  for (const a of i.agents) {
    if (a.error !== null)
      out.push({
        kind: "agent error",
        severity: "warn",
        text: `${a.name} on ${a.target}: ${a.error}`,
        view: "agents",
        id: a.name,
      });
  }
  const denials = i.events.flatMap((e) => {
    const text = denial(e);
    return text === null
      ? []
      : [
          {
            kind: "denied" as const,
            severity: "warn" as const,
            text: `#${e.seq} ${text}`,
            view: "audit" as const,
            id: String(e.seq),
          },
        ];
  });
  out.push(...denials.slice(-DENIALS_SHOWN).reverse());
  return out;
}
