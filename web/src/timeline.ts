/**
 * An agent's timeline, built from the controller's audit chain (issue 13: deploys, placements, exits, replaces).
 * Pure: events in (oldest first), the entries about one agent out. An event is about the agent when its payload
 * names it (`agent` of an agent.deploy, `name` of a placement or verb, the workload's `target_result.name`) or names
 * one of its instances, learned from the earlier events in the same pass (a replace's fence, a placement's instance).
 * The governance gate's events (source `gate`) are left out: their `agent` is the requesting controller, not ours.
 */
import type { AuditEvent } from "./types";

export type TimelineKind =
  | "deploy"
  | "replace"
  | "decision"
  | "placed"
  | "not placed"
  | "start"
  | "stop"
  | "unload"
  | "exit"
  | "refused"
  | "migrate";

export interface TimelineEntry {
  readonly seq: number;
  readonly ts: number;
  readonly kind: TimelineKind;
  readonly text: string;
  readonly decisionId: string | null;
  readonly instanceId: string | null;
  readonly nodeId: string | null;
}

type Payload = AuditEvent["payload"];

const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const obj = (v: unknown): Payload | null =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Payload) : null;

const VERBS: Readonly<Record<string, TimelineKind>> = {
  "workload.start": "start",
  "workload.stop": "stop",
  "workload.unload": "unload",
  "workload.migrate": "migrate",
};

export function timelineOf(agent: string, events: readonly AuditEvent[]): TimelineEntry[] {
  const instances = new Set<string>();
  const out: TimelineEntry[] = [];
  const entry = (
    e: AuditEvent,
    kind: TimelineKind,
    text: string,
    more: Partial<Pick<TimelineEntry, "decisionId" | "instanceId" | "nodeId">> = {},
  ) =>
    out.push({
      seq: e.seq,
      ts: e.ts,
      kind,
      text,
      decisionId: more.decisionId ?? null,
      instanceId: more.instanceId ?? null,
      nodeId: more.nodeId ?? null,
    });

  for (const e of events) {
    if (e.source === "gate") continue;
    const p = e.payload;
    const instance = str(p.instance_id);
    const ours =
      str(p.name) === agent ||
      str(obj(p.target_result)?.name) === agent ||
      (instance !== null && instances.has(instance));
    const node = str(p.node) ?? str(p.node_id);
    switch (e.kind) {
      case "agent.deploy": {
        if (str(p.agent) !== agent) break;
        const fenced = str(obj(p.fence)?.instance_id);
        if (fenced) instances.add(fenced);
        const placed = str(p.instance);
        if (placed) instances.add(placed);
        const action = str(p.action) ?? "deploy";
        entry(
          e,
          action.startsWith("replace") ? "replace" : "deploy",
          str(p.message) ?? `${action}: ${str(p.outcome) ?? ""}`,
          { instanceId: placed },
        );
        break;
      }
      case "workload.place": {
        if (!ours) break;
        if (instance) instances.add(instance);
        const phase = str(p.phase);
        if (phase === "decision") {
          const chosen = obj(obj(p.decision)?.placement);
          entry(
            e,
            "decision",
            chosen ? `placement decided${p.dry_run === true ? " (dry run)" : ""}` : "placement decided: nothing fits",
            { decisionId: e.hash },
          );
        } else if (phase === "placed") {
          entry(e, "placed", "instance placed", { decisionId: str(p.decision_id), instanceId: instance, nodeId: node });
        } else if (phase !== null) {
          entry(e, "not placed", `placement ${phase}${str(p.reason) ? `: ${str(p.reason)}` : ""}`, {
            decisionId: str(p.decision_id),
            instanceId: instance,
            nodeId: node,
          });
        }
        break;
      }
      case "workload.exit": {
        if (!ours) break;
        const code =
          typeof p.exit_code === "number"
            ? `code ${p.exit_code}`
            : str(p.signal)
              ? `signal ${str(p.signal)}`
              : "no code";
        entry(e, "exit", `instance ${instance ?? "?"} exited (${code})`, { instanceId: instance, nodeId: node });
        break;
      }
      case "workload.refuse": {
        if (!ours) break;
        entry(
          e,
          "refused",
          `refused (${str(p.phase) ?? "?"}): ${str(p.error) ?? str(p.reason) ?? str(p.code) ?? "no reason given"}`,
          { instanceId: instance, nodeId: node },
        );
        break;
      }
      default: {
        const verb = VERBS[e.kind];
        // A verb is chained as a request and an outcome; the outcome says how it ended, which is what a reader wants.
        if (verb === undefined || !ours || str(p.phase) !== "outcome") break;
        const result = str(p.result) ?? "done";
        // Its decision_id is the governance decision that permitted the verb, not a placement: not linked as one.
        entry(e, verb, `${verb}: ${result}${str(p.reason) ? ` (${str(p.reason)})` : ""}`, {
          instanceId: instance,
          nodeId: node,
        });
      }
    }
  }
  return out;
}
