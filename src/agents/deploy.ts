/**
 * `berth deploy FILE` and `berth agent replace NAME` (issue 7), for the CLI and `POST /api/v1/agents` alike: the
 * spec's target deploys it (`targets/*`), chains one `agent.deploy` event, and the registry remembers the spec by
 * name. Nothing here asks which target it is.
 */
import { isStoreAway } from "../store/open.js";
import { type AgentsEnv, targetFor } from "./env.js";
import { knownAgent } from "./lookup.js";
import type { LoadedSpec } from "./spec-file.js";
import type { DeployDone, DeployOptions, Outcome } from "./target.js";
import { err } from "../kit/result.js";
import type { DeployPlan } from "../core/agents/deploy-plan.js";

/** Deploys `loaded` on its target; with `userReplace`, stops what runs first (`berth agent replace`). */
export async function deployAgent(
  env: AgentsEnv,
  loaded: LoadedSpec,
  opts: Partial<DeployOptions> & { readonly rollbackOf?: number } = {},
): Promise<Outcome<DeployDone>> {
  const spec = loaded.spec;
  const done = await targetFor(env, spec.spec.target).deploy(loaded, {
    userReplace: opts.userReplace === true,
    ...(opts.loop ? { loop: opts.loop } : {}),
  });
  if (!done.ok) return done;
  const r = done.value.result;
  const outcome = { last_outcome: r.outcome, last_message: r.message };
  // Issue 37 (seed 11525): the target has acted; a store that is only restarting must not end the deploy unrecorded.
  const known = await despiteRestart(() => env.registry((reg) => reg.get(spec.metadata.name)));
  if (r.outcome === "failed" && r.instance === null) {
    // Issue 33, nothing half-applied: a deploy refused before anything was accepted (the node's gate, a permit, the
    // configuration, an unreachable cluster) leaves only its `agent.deploy` event. An agent deployed before keeps
    // its record and the spec that was accepted, with this deploy's outcome beside it, so `berth agents` says why.
    if (known !== null) await despiteRestart(() => env.registry((reg) => reg.remember({ ...known, ...outcome })));
    return done;
  }
  const remembered = {
    name: spec.metadata.name,
    target: spec.spec.target,
    spec_path: loaded.path,
    spec_text: loaded.text,
    intent: done.value.intent,
    deployed_ms: env.now(),
    ...outcome,
    ...(opts.rollbackOf !== undefined ? { rollback_of: opts.rollbackOf } : {}),
  };
  await despiteRestart(() => env.registry((reg) => reg.remember(remembered)));
  return done;
}

/**
 * Issue 36, `berth deploy --dry-run` and `POST /agents?dryRun=true`: what `deployAgent` would do now; its target looks
 * and classifies, and nothing is done, chained or remembered.
 */
export function planDeploy(env: AgentsEnv, loaded: LoadedSpec): Promise<Outcome<DeployPlan>> {
  return targetFor(env, loaded.spec.spec.target).plan(loaded);
}

/**
 * Issue 37 (campaign seed 1194): the target ran the agent, then the store restarted before the registry took its
 * record, and the deploy failed with the agent running unrecorded: `berth agent stop NAME` then answered "no agent
 * was deployed". The registry's read and write after the target acted are tried again while the store is only away
 * (a restart: seconds), for up to 20 s; a record that did land before its acknowledgement was lost is written again,
 * the same record. A process that dies here instead is covered by the placement (`AgentRegistry.recover`).
 */
async function despiteRestart<T>(op: () => Promise<T>): Promise<T> {
  const until = Date.now() + 20_000;
  for (let waitMs = 250; ; waitMs = Math.min(waitMs * 2, 2_000)) {
    try {
      return await op();
    } catch (error) {
      if (!isStoreAway(error) || Date.now() + waitMs > until) throw error;
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}

/**
 * `berth agent replace NAME`: the spec given (`from` says where it came from, for the error), else the one last
 * deployed under that name.
 */
export async function replaceAgent(
  env: AgentsEnv,
  name: string,
  given?: { readonly loaded: LoadedSpec; readonly from: string },
): Promise<Outcome<DeployDone>> {
  let loaded: LoadedSpec;
  if (given === undefined) {
    const known = await knownAgent(env, name);
    if (!known.ok) return known;
    loaded = known.value.loaded;
  } else {
    const described = given.loaded.spec.metadata.name;
    if (described !== name)
      return err({
        kind: "agent_mismatch",
        agent: name,
        message: `${given.from} describes agent ${described}, not ${name}`,
      });
    loaded = given.loaded;
  }
  return deployAgent(env, loaded, { userReplace: true });
}
