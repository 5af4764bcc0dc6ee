/**
 * `berth agent stop|logs|purge NAME` and `POST /api/v1/agents/{name}/stop`, `GET …/logs`: a verb on the agent's current
 * instance on its target. A stop is the user's say by name (invariant A2): nothing else stops a started agent.
 */
import { targetFor, type AgentsEnv } from "./env.js";
import { knownAgent } from "./lookup.js";
import { failed, type LogsAnswer, type Outcome, type StopAnswer } from "./target.js";

/** `wait`: until the instance is gone (Kubernetes; the mesh's stop answers when the node has stopped it). */
export async function stopAgent(env: AgentsEnv, name: string, opts: { readonly wait: boolean }): Promise<Outcome<StopAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  return targetFor(env, known.value.record.target).stop(known.value, opts);
}

/** `berth agent purge NAME` (issue 15): the instance is unloaded and the agent's workspace on its node removed. */
export async function purgeAgent(env: AgentsEnv, name: string): Promise<Outcome<StopAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const target = targetFor(env, known.value.record.target);
  if (target.purge === undefined) {
    return failed({
      kind: "spec_unusable",
      usage: false,
      message: `${name} runs on ${target.kind}: berth never deletes its persistent workspace claim; delete the claim with kubectl if you mean to`,
    });
  }
  return target.purge(known.value);
}

export async function agentLogs(env: AgentsEnv, name: string, opts: { readonly tailBytes: number; readonly onChunk?: (chunk: string) => void }): Promise<Outcome<LogsAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  return targetFor(env, known.value.record.target).logs(known.value, opts);
}
