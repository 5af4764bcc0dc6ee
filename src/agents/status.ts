/**
 * `berth agents`, `berth agent status NAME` and `GET /api/v1/agents[/{name}]`: each agent's state on its target
 * (`state.ts`), read afresh; the registry only says which agents there are. Each target looks at all of its agents
 * in one session (one controller open for the mesh).
 */
import { DEPLOY_TARGETS } from "../core/agents/deploy-event.js";
import { type Requirement, selects } from "../core/agents/labels.js";
import { type AgentsEnv, targetFor } from "./env.js";
import { knownAgent, listAgents } from "./lookup.js";
import type { AgentRecord } from "./registry.js";
import { specFromText } from "./spec-file.js";
import { type AgentState, unknownAgentState } from "./state.js";
import type { KnownAgent, Outcome } from "./target.js";

async function statesOf(env: AgentsEnv, records: readonly AgentRecord[]): Promise<AgentState[]> {
  const states: AgentState[] = [];
  const known: KnownAgent[] = [];
  for (const record of records) {
    const loaded = specFromText(record.spec_text, record.spec_path);
    if (loaded.ok) known.push({ record, loaded: loaded.value });
    else states.push(unknownAgentState(record, loaded.error));
  }
  for (const kind of DEPLOY_TARGETS) {
    const mine = known.filter((k) => k.record.target === kind);
    if (mine.length > 0) states.push(...(await targetFor(env, kind).states(mine)));
  }
  return withLastDeploys(states, records);
}

/** Issue 33: a record whose last deploy failed says why beside its state (by name: one lookup per agent, issue 35). */
function withLastDeploys(states: readonly AgentState[], records: readonly AgentRecord[]): AgentState[] {
  const byName = new Map(records.map((r) => [r.name, r]));
  return states
    .map((s) => {
      const r = byName.get(s.name);
      return r?.last_outcome === "failed" && r.last_message ? { ...s, last_deploy: r.last_message } : s;
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** What `berth agents` says of a mesh agent whose nodes were not asked (issue 35: the list's default). */
export const NOT_ASKED_STATE = "not asked";

/**
 * Issue 35: every agent as the controller's store holds it, no node asked (`berth agents` by default; `--refresh` asks
 * every node, agentStates). A mesh agent shows the instance its placement names and the state "not asked" (or
 * "unsettled" while a lost answer is not settled, "not placed" without a placement); a Kubernetes agent is looked at in
 * its cluster as always (`kubernetes`: the target's own states, a read of the cluster, nothing written).
 */
export async function storedAgentStates(
  records: readonly AgentRecord[],
  stored: { readonly placements: ReadonlyArray<{ readonly name: string; readonly instance_id: string }>; readonly unsettled: ReadonlySet<string> },
  kubernetes: (known: KnownAgent[]) => Promise<AgentState[]>,
): Promise<AgentState[]> {
  const placed = new Map(stored.placements.map((p) => [p.name, p.instance_id]));
  const states: AgentState[] = [];
  const cluster: KnownAgent[] = [];
  for (const record of records) {
    if (record.target === "kubernetes") {
      const loaded = specFromText(record.spec_text, record.spec_path);
      if (loaded.ok) cluster.push({ record, loaded: loaded.value });
      else states.push(unknownAgentState(record, loaded.error));
      continue;
    }
    const instance = placed.get(record.name) ?? null;
    const state = stored.unsettled.has(record.name) ? "unsettled" : instance === null ? "not placed" : NOT_ASKED_STATE;
    states.push({ name: record.name, target: record.target, state, row: null, next: null, instance, observation: null, error: null, lifecycle: null, restarts: null });
  }
  if (cluster.length > 0) states.push(...(await kubernetes(cluster)));
  return withLastDeploys(states, records);
}

/**
 * Every agent deployed to this controller (its store), by name; with `selector` (issue 36) only those whose spec's
 * `metadata.labels` it selects, judged before any target is asked.
 */
export async function agentStates(env: AgentsEnv, selector: readonly Requirement[] = []): Promise<AgentState[]> {
  return statesOf(env, selectedRecords(await listAgents(env), selector));
}

/** Issue 36: the records whose spec's `metadata.labels` the selector selects (all of them for an empty one); one rule for the live and the stored list. */
export function selectedRecords(records: readonly AgentRecord[], selector: readonly Requirement[]): readonly AgentRecord[] {
  if (selector.length === 0) return records;
  return records.filter((r) => {
    const loaded = specFromText(r.spec_text, r.spec_path);
    return selects(selector, loaded.ok ? (loaded.value.spec.metadata.labels ?? {}) : {});
  });
}

export async function agentState(env: AgentsEnv, name: string): Promise<Outcome<AgentState>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const [state] = await targetFor(env, known.value.record.target).states([known.value]);
  if (state === undefined) throw new Error(`the ${known.value.record.target} target returned no state for ${name}`);
  return { ok: true, value: withLastDeploys([state], [known.value.record])[0] as AgentState };
}
