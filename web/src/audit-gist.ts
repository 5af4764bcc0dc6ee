/**
 * What an audit event is about, in a few words (the audit view's gist column), and which nodes it names. A gate
 * verdict shared by several targets of one placement is one event naming them all in `nodes` (docs/spec/mesh.md §7.7,
 * issue 19), so the gist counts them and the event's details link each. Since issue 35 a placement's verdicts over
 * the view are one gate summary its decision names (`payload.gate`): the gist says how many nodes the gate permitted.
 */
import type { AuditEvent } from "./types";

/** The payload members worth a glance; the gate's `agent` is the requesting controller, so its verdict is shown instead. */
const GIST_KEYS = ["name", "phase", "instance_id", "outcome", "node_id", "agent"] as const;
const GATE_GIST_KEYS = ["decision", "node", "permit_rule"] as const;
const NODE_ID = /^[0-9a-f]{32}$/;

export function gist(e: AuditEvent): string {
  const p = e.payload;
  const parts = (e.source === "gate" ? GATE_GIST_KEYS : GIST_KEYS)
    .filter((k) => typeof p[k] === "string" || typeof p[k] === "number")
    .map((k) => `${k}=${String(p[k])}`);
  const nodes = nodesOf(e);
  if (e.source === "gate" && p.node === undefined && nodes.length > 0)
    parts.splice(1, 0, nodes.length === 1 ? `node=${nodes[0]}` : `nodes=${nodes.length}`);
  const gate = p.gate as { permitted?: unknown; nodes?: unknown } | null | undefined;
  if (typeof gate === "object" && gate !== null && typeof gate.permitted === "number" && typeof gate.nodes === "number")
    parts.push(`gate=${gate.permitted}/${gate.nodes} permitted`);
  return parts.join(" ");
}

/** Every node id the event names: `node_id`, `node`, or a grouped verdict's `nodes`. */
export function nodesOf(e: AuditEvent): string[] {
  const p = e.payload;
  const one = typeof p.node_id === "string" ? p.node_id : typeof p.node === "string" ? p.node : null;
  const many = Array.isArray(p.nodes) ? p.nodes.filter((n): n is string => typeof n === "string") : [];
  return (one === null ? many : [one]).filter((n) => NODE_ID.test(n));
}
