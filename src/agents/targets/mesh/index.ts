/**
 * The mesh `AgentTarget`: the observe → classify → act loop of `deploy.ts` through the controller, and the verbs on
 * the agent's current instance (`controller.instance`, signed and chained by the controller). Every call runs in one
 * session of the caller's controller (`MeshAccess`): the CLI opens it for the command, the server lends its own.
 */
import { agentStateOf } from "../../../core/agents/deploy-event.js";
import type { JsonObject } from "../../../core/crypto/canonical.js";
import type { VerbOptions, VerbResult } from "../../../mesh/controller/index.js";
import { recordMeshDeploy } from "../../audit.js";
import type { MeshAccess } from "../../access.js";
import type { Watch } from "../../target.js";
import { err, ok } from "../../../kit/result.js";
import type { AgentRecord } from "../../registry.js";
import { resolveSpecEnv } from "../../secret-env.js";
import { meshIntentOf } from "../../spec-file.js";
import type { AgentState } from "../../state.js";
import type { AgentTarget, KnownAgent, Outcome } from "../../target.js";
import { currentInstance, deployMeshAgent, type MeshAgentDeps, meshAgentStatus, planMeshDeploy } from "./deploy.js";

export {
  currentInstance,
  deployMeshAgent,
  fencedUnload,
  type MeshAgentDeps,
  type MeshDeployInput,
  meshAgentStatus,
  observeMesh,
} from "./deploy.js";

export async function meshAgentState(
  deps: MeshAgentDeps,
  record: Pick<AgentRecord, "name" | "intent">,
): Promise<AgentState> {
  const s = await meshAgentStatus(deps, record.name, record.intent);
  const observed = s.observation.instances as JsonObject[];
  const instances = observed.map((i) => String(i.instance_id));
  // The one kept alive if any (a duplicate is reported by the row), else the newest.
  const current = observed.find((i) => i.startup === "started") ?? observed.at(-1);
  return {
    name: record.name,
    target: "mesh",
    state: agentStateOf(s.row),
    row: s.row,
    next: s.next,
    instance: instances.join(",") || null,
    observation: s.observation,
    error: null,
    lifecycle: current ? String(current.state) : null,
    restarts: typeof current?.restarts === "number" ? current.restarts : null,
    started_ms: typeof current?.started_ms === "number" ? current.started_ms : null,
  };
}

/** A node verb on the agent's current instance (the live one, else the newest). */
async function onCurrentInstance(
  deps: MeshAgentDeps,
  agent: string,
  verb: "stop" | "logs" | "unload",
  options: VerbOptions,
): Promise<Outcome<{ instance: string; result: JsonObject }>> {
  const { instance } = await currentInstance(deps, agent);
  const what = verb === "logs" ? "read" : verb === "unload" ? "purge" : verb;
  if (instance === null)
    return err({
      kind: "no_instance",
      agent,
      verb,
      message: `${agent} has no instance on any node that answered; nothing to ${what}`,
    });
  const id = instance.instanceId;
  const r: VerbResult = await deps.controller.instance(verb, id, options);
  if (r.kind === "ok") return ok({ instance: id, result: r.result });
  return err({
    kind: "instance_verb_failed",
    agent,
    instance: id,
    verb,
    result: r,
    message: `${verb} ${agent} (${id}): ${r.kind}${"reason" in r ? `: ${r.reason}` : ""}`,
  });
}

export function meshTarget(
  access: MeshAccess,
  watch?: Watch,
  processEnv: NodeJS.ProcessEnv = process.env,
): AgentTarget {
  return {
    kind: "mesh",
    async deploy(loaded, { userReplace }) {
      const resolved = resolveSpecEnv(loaded, processEnv);
      if (!resolved.ok) return err({ kind: "spec_unusable", message: resolved.error, usage: false });
      const mi = meshIntentOf(loaded, resolved.value.env);
      if (!mi.ok) return err({ kind: "spec_unusable", message: mi.error, usage: true });
      const agent = loaded.spec.metadata.name;
      const input = {
        agent,
        spec: loaded.spec.spec,
        env: resolved.value.env,
        envFrom: resolved.value.refs,
        packageDir: mi.value.packageDir,
        intent: mi.value.intent,
        source: { spec_path: loaded.path, spec_text: loaded.text },
      };
      return access.session(async (deps) => {
        const run = () => deployMeshAgent(deps, input, { userReplace });
        const result = await (watch ? watch.waiting(`deploying ${agent} to the mesh`, run) : run());
        const event = await recordMeshDeploy(deps.controller, result);
        return ok({ result, intent: input.intent, event: { chain: "controller", seq: event.seq, hash: event.hash } });
      });
    },

    async plan(loaded) {
      const resolved = resolveSpecEnv(loaded, processEnv);
      if (!resolved.ok) return err({ kind: "spec_unusable", message: resolved.error, usage: false });
      const mi = meshIntentOf(loaded, resolved.value.env);
      if (!mi.ok) return err({ kind: "spec_unusable", message: mi.error, usage: true });
      const input = {
        agent: loaded.spec.metadata.name,
        spec: loaded.spec.spec,
        env: resolved.value.env,
        envFrom: resolved.value.refs,
        packageDir: mi.value.packageDir,
        intent: mi.value.intent,
      };
      return access.session(async (deps) => ok(await planMeshDeploy(deps, input)));
    },

    states: (agents) =>
      access.session(async (deps) => {
        const states: AgentState[] = [];
        for (const { record } of agents) states.push(await meshAgentState(deps, record));
        return states;
      }),

    stop: ({ record }: KnownAgent) =>
      access.session(async (deps) => {
        const r = await onCurrentInstance(deps, record.name, "stop", {});
        if (!r.ok) return r;
        // Issue 36: a stop of an instance that had ended says so (berth down reports only what it stopped).
        const already = r.value.result.already === true;
        return ok({
          ok: true,
          agent: record.name,
          instance: r.value.instance,
          message: already ? `${r.value.instance} had stopped already` : `stopped ${r.value.instance}`,
          result: r.value.result,
          ...(already ? { already_stopped: true as const } : {}),
        });
      }),

    // Issue 15: unloaded by name (the user's say, like stop), with the workspace removed in the node's chained unload.
    purge: ({ record }: KnownAgent) =>
      access.session(async (deps) => {
        const r = await onCurrentInstance(deps, record.name, "unload", { purge: true });
        if (!r.ok) return r;
        const removed =
          r.value.result.workspace_purged === true ? "and removed its workspace" : "(it had no workspace left)";
        return ok({
          ok: true,
          agent: record.name,
          instance: r.value.instance,
          message: `unloaded ${r.value.instance} ${removed}`,
          result: r.value.result,
        });
      }),

    logs: ({ record }, { tailBytes }) =>
      access.session(async (deps) => {
        const r = await onCurrentInstance(deps, record.name, "logs", { tail_bytes: tailBytes });
        if (!r.ok) return r;
        return ok({
          agent: record.name,
          instance: r.value.instance,
          stdout: String(r.value.result.stdout ?? ""),
          stderr: String(r.value.result.stderr ?? ""),
        });
      }),
  };
}
