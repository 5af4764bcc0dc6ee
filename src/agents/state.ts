/**
 * An agent's state on its target, as `berth agents` and `GET /api/v1/agents` show it: what the classifier sees now
 * (the row), what a deploy would do next, the instance, and the raw observation. One mapping for the CLI and the API,
 * so both say the same thing about the same agent.
 */
import { agentStateOf } from "../core/agents/deploy-event.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import type { Clock } from "../kubernetes/clock.js";
import type { Cluster } from "../kubernetes/cluster.js";
import { status as k8sStatus } from "../kubernetes/verbs.js";
import { observeKubernetes, type PreparedDeploy, refOf } from "./kubernetes.js";
import { type MeshAgentDeps, meshAgentStatus } from "./mesh.js";
import type { AgentRecord } from "./registry.js";

export interface AgentState {
  readonly name: string;
  readonly target: string;
  readonly state: string;
  readonly row: string | null;
  readonly next: string | null;
  readonly instance: string | null;
  readonly observation: JsonObject | null;
  readonly error: string | null;
}

/** The state of an agent berth could not look at, with the reason. */
export function unknownAgentState(record: Pick<AgentRecord, "name" | "target">, error: string): AgentState {
  return { name: record.name, target: record.target, state: "unknown", row: null, next: null, instance: null, observation: null, error };
}

export async function meshAgentState(deps: MeshAgentDeps, record: Pick<AgentRecord, "name" | "intent">): Promise<AgentState> {
  const s = await meshAgentStatus(deps, record.name, record.intent);
  const instances = (s.observation.instances as JsonObject[]).map((i) => String(i.instance_id));
  return { name: record.name, target: "mesh", state: agentStateOf(s.row), row: s.row, next: s.next, instance: instances.join(",") || null, observation: s.observation, error: null };
}

/** A Kubernetes agent's state from one quorum observation of its pod plus the pod's latest condition. */
export async function kubernetesAgentState(cluster: Cluster, clock: Clock, name: string, prepared: PreparedDeploy): Promise<AgentState> {
  const seen = await observeKubernetes(cluster, prepared);
  if (!seen.ok) return unknownAgentState({ name, target: "kubernetes" }, seen.error);
  const st = await k8sStatus({ cluster, clock }, refOf(prepared), prepared.fingerprint);
  const observation = "error" in st ? seen.observation : { ...seen.observation, condition: st.condition ?? null, intent: st.intent ?? null };
  const next = seen.action.kind === "delete" ? `replace (${seen.action.cause})` : seen.action.kind;
  return {
    name,
    target: "kubernetes",
    state: agentStateOf(seen.row),
    row: seen.row,
    next,
    instance: seen.row === "no-instance" ? null : seen.pod,
    observation,
    error: null,
  };
}
