/**
 * `berth agents`, `berth agent status NAME` and `GET /api/v1/agents[/{name}]`: each agent's state on its target
 * (`state.ts`), read afresh; the registry only says which agents there are. Each target looks at all of its agents
 * in one session (one controller open for the mesh).
 */
import { DEPLOY_TARGETS } from "../core/agents/deploy-event.js";
import type { Requirement } from "../core/agents/labels.js";
import { type AgentsEnv, targetFor } from "./env.js";
import { knownAgent, listAgents } from "./lookup.js";
import { selectedRecords } from "./selected.js";
import type { AgentRecord } from "./registry.js";
import { specFromText } from "./spec-file.js";
import { type AgentState, unknownAgentState, withLastDeploys } from "./state.js";
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

/**
 * Every agent deployed to this controller (its store), by name; with `selector` (issue 36) only those whose spec's
 * `metadata.labels` it selects, judged before any target is asked.
 */
export async function agentStates(env: AgentsEnv, selector: readonly Requirement[] = []): Promise<AgentState[]> {
  return statesOf(env, selectedRecords(await listAgents(env), selector));
}

/** Issue 36: every deployed agent's `metadata.labels`, by name (`berth instances -l` selects on its agent's). */
export async function agentLabels(env: AgentsEnv): Promise<Map<string, Readonly<Record<string, string>>>> {
  const records = await listAgents(env);
  return new Map(
    records.map((r) => {
      const loaded = specFromText(r.spec_text, r.spec_path);
      return [r.name, loaded.ok ? (loaded.value.spec.metadata.labels ?? {}) : {}];
    }),
  );
}

export async function agentState(env: AgentsEnv, name: string): Promise<Outcome<AgentState>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const [state] = await targetFor(env, known.value.record.target).states([known.value]);
  if (state === undefined) throw new Error(`the ${known.value.record.target} target returned no state for ${name}`);
  return { ok: true, value: withLastDeploys([state], [known.value.record])[0] as AgentState };
}
