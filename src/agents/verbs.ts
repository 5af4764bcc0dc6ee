/**
 * `berth agent stop|logs|purge NAME` and `POST /api/v1/agents/{name}/stop`, `GET …/logs`: a verb on the agent's current
 * instance on its target. A stop is the user's say by name (invariant A2): nothing else stops a started agent.
 */
import type { JsonObject } from "../core/crypto/canonical.js";
import { deployAgent } from "./deploy.js";
import { targetFor, type AgentsEnv } from "./env.js";
import { knownAgent } from "./lookup.js";
import type { DeployDone, LogsAnswer, Outcome, StopAnswer } from "./target.js";
import { err, ok } from "../kit/result.js";

/** `wait`: until the instance is gone (Kubernetes; the mesh's stop answers when the node has stopped it). */
export async function stopAgent(
  env: AgentsEnv,
  name: string,
  opts: { readonly wait: boolean },
): Promise<Outcome<StopAnswer>> {
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
    return err({
      kind: "spec_unusable",
      usage: false,
      message: `${name} runs on ${target.kind}: berth never deletes its persistent workspace claim; delete the claim with kubectl if you mean to`,
    });
  }
  return target.purge(known.value);
}

export async function agentLogs(
  env: AgentsEnv,
  name: string,
  opts: { readonly tailBytes: number; readonly onChunk?: (chunk: string) => void },
): Promise<Outcome<LogsAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  return targetFor(env, known.value.record.target).logs(known.value, opts);
}

/**
 * `berth agent start NAME` (issue 33): the explicit start that ends a stop. It deploys the spec last deployed under
 * the name, so it is exactly `berth deploy` of the remembered spec: a stopped instance is replaced (fenced) by a new
 * one on the same node where it fits, a running agent is left alone, and a placement of the name clears the stop.
 */
export async function startAgent(env: AgentsEnv, name: string): Promise<Outcome<DeployDone>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  return deployAgent(env, known.value.loaded);
}

export interface DeleteAnswer {
  readonly ok: boolean;
  readonly agent: string;
  readonly message: string;
  /** The `agent.delete` event, when the record went. */
  readonly event?: { readonly seq: number; readonly hash: string };
}

/**
 * `berth agent delete NAME` (issue 33): the agent's record goes once nothing of it runs. The target is looked at
 * afresh: only the row `no-instance` (no instance on any node or cluster, nothing unsettled, no silent node holding
 * one) lets it go; every other answer refuses, naming what is there and the verb that clears it. The store then
 * re-checks, in the delete's own transaction, that nothing of the name was placed meanwhile (store-agents.ts).
 */
export async function deleteAgent(env: AgentsEnv, name: string, operator: JsonObject): Promise<Outcome<DeleteAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const [state] = await targetFor(env, known.value.record.target).states([known.value]);
  if (state === undefined) throw new Error(`the ${known.value.record.target} target returned no state for ${name}`);
  if (state.row !== "no-instance") {
    const why =
      state.error ??
      (state.instance
        ? `its instance ${state.instance} is ${state.lifecycle ?? state.state}`
        : `its target says ${state.row ?? state.state}`);
    const next = state.error
      ? "look again once its target answers"
      : "`berth agent purge NAME` stops and unloads it (or `berth agent stop NAME` first to keep it for a while)";
    return ok({
      ok: false,
      agent: name,
      message: `${name} was not deleted: ${why}; ${next.replace("NAME", name)}, then delete it`,
    });
  }
  const gone = await env.registry((r) => r.delete(name, operator));
  if (!gone.ok) return ok({ ok: false, agent: name, message: `${name} was not deleted: ${gone.error}` });
  return ok({
    ok: true,
    agent: name,
    message: `${name}: deleted; its record is gone (the chain keeps agent.delete)`,
    event: { seq: gone.value.seq, hash: gone.value.hash },
  });
}
