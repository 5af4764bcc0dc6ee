/**
 * `berth agents`, `berth agent status NAME` and `GET /api/v1/agents[/{name}]`: each agent's state on its target
 * (`state.ts`), read afresh; the registry only says which agents there are. Each target looks at all of its agents
 * in one session (one controller open for the mesh).
 */
import { DEPLOY_TARGETS } from "../core/agents/deploy-event.js";
import { type Requirement, selects } from "../core/agents/labels.js";
import { targetFor, type AgentsEnv } from "./env.js";
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
  return states.map((s) => withLastDeploy(s, records)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Issue 33: a record whose last deploy failed says why beside its state. */
function withLastDeploy(s: AgentState, records: readonly AgentRecord[]): AgentState {
  const r = records.find((x) => x.name === s.name);
  return r?.last_outcome === "failed" && r.last_message ? { ...s, last_deploy: r.last_message } : s;
}

/**
 * Every agent deployed to this controller (its store), by name; with `selector` (issue 36) only those whose spec's
 * `metadata.labels` it selects, judged before any target is asked.
 */
export async function agentStates(env: AgentsEnv, selector: readonly Requirement[] = []): Promise<AgentState[]> {
  const records = await listAgents(env);
  const chosen = selector.length === 0 ? records : records.filter((r) => {
    const loaded = specFromText(r.spec_text, r.spec_path);
    return selects(selector, loaded.ok ? (loaded.value.spec.metadata.labels ?? {}) : {});
  });
  return statesOf(env, chosen);
}

export async function agentState(env: AgentsEnv, name: string): Promise<Outcome<AgentState>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const [state] = await targetFor(env, known.value.record.target).states([known.value]);
  if (state === undefined) throw new Error(`the ${known.value.record.target} target returned no state for ${name}`);
  return { ok: true, value: withLastDeploy(state, [known.value.record]) };
}
