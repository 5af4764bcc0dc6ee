/**
 * Agents over HTTP (issue 7's deploy endpoint, issue 8): `POST /agents` is `berth deploy` of a spec sent as JSON, one
 * deploy model over both targets — the mesh through the long-lived `MeshController`, Kubernetes through the backend's
 * reconcile loop — and the same `agent.deploy` event on the same chain as the CLI. The registry (`agents.db`) is
 * opened per call, as the CLI does, so both see every deploy.
 *
 * A spec posted here has no file: it is remembered as `<data dir>/<name>.agent.json`, so a relative `spec.package` or
 * `nsec_file` resolves against the server's data directory (say so to the caller; absolute paths are clearer).
 */
import { join } from "node:path";
import type { z } from "zod";
import { recordKubernetesDeploy, recordMeshDeploy } from "../../agents/audit.js";
import { deployKubernetesAgent, type PreparedDeploy, refOf } from "../../agents/kubernetes.js";
import { currentInstance, deployMeshAgent, type MeshAgentDeps } from "../../agents/mesh.js";
import type { AgentRecord } from "../../agents/registry.js";
import { type LoadedSpec, meshIntentOf, readNsec, specFromText } from "../../agents/spec-file.js";
import { type AgentState, kubernetesAgentState, meshAgentState, unknownAgentState } from "../../agents/state.js";
import { type AgentDeployResult, deployEventPayload } from "../../core/agents/deploy-event.js";
import { kubernetesDeployRequest } from "../../core/agents/kubernetes-request.js";
import { AgentSpecSchema } from "../../core/agents/spec.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { prepareDeploy } from "../../kubernetes/prepare.js";
import { stop as k8sStop } from "../../kubernetes/verbs.js";
import type { Inputs } from "../contract.js";
import { ApiError, invalidRequest, notFound } from "../errors.js";
import type { Answer, CallContext, Handlers } from "../handler.js";
import type { ServerState } from "../state.js";
import { KeyedLock } from "../keyed-lock.js";
import { k8sSettings, withCluster, withVerbDeps } from "./kubernetes.js";

/** Deploys, replaces and stops of one agent run one at a time in this server (see keyed-lock.ts). */
const perAgent = new KeyedLock();

type In<T extends z.ZodType> = z.infer<T>;

/** The spec document as the CLI would have read it from a file in the data directory. */
function loadedFromBody(state: ServerState, body: unknown, where: string): LoadedSpec {
  const parsed = AgentSpecSchema.safeParse(body);
  if (!parsed.success) throw invalidRequest("body", parsed.error.issues.map((i) => ({ ...i, path: where === "body" ? i.path : [where.replace(/^body\./, ""), ...i.path] })));
  const path = join(state.dataDir, `${parsed.data.metadata.name}.agent.json`);
  const loaded = specFromText(`${JSON.stringify(body, null, 2)}\n`, path);
  if (!loaded.ok) throw new ApiError(400, "invalid_request", loaded.error, { issues: [{ path: where, message: loaded.error }] });
  return loaded.value;
}

function withRegistry<T>(state: ServerState, fn: (r: ReturnType<ServerState["openRegistry"]>) => T): T {
  const registry = state.openRegistry();
  try {
    return fn(registry);
  } finally {
    registry.close();
  }
}

function recordOf(state: ServerState, name: string): { record: AgentRecord; loaded: LoadedSpec } {
  const record = withRegistry(state, (r) => r.get(name));
  if (record === null) throw notFound(`agent ${name}`, "deploy it with POST /api/v1/agents");
  const loaded = specFromText(record.spec_text, record.spec_path);
  if (!loaded.ok) throw new ApiError(422, "spec_unreadable", loaded.error);
  return { record, loaded: loaded.value };
}

const meshDeps = (state: ServerState): MeshAgentDeps => ({ controller: state.controller, client: state.client });

function preparedKubernetes(loaded: LoadedSpec): PreparedDeploy {
  const nsec = readNsec(loaded, process.env);
  if (!nsec.ok) throw new ApiError(422, "spec_unusable", nsec.error);
  const prepared = prepareDeploy(kubernetesDeployRequest(loaded.spec, nsec.value), { requireCommand: true });
  if (!prepared.ok) throw new ApiError(422, "spec_unusable", prepared.error);
  return prepared;
}

/** `berth deploy` (or with `userReplace`, `berth agent replace`) of one loaded spec, chained and remembered. */
async function runDeploy(ctx: CallContext, loaded: LoadedSpec, userReplace: boolean): Promise<Answer> {
  const state = ctx.state;
  const spec = loaded.spec;
  const name = spec.metadata.name;
  let result: AgentDeployResult;
  let intent: string;
  let event: { hash: string; seq: number };
  if (spec.spec.target === "mesh") {
    const mi = meshIntentOf(loaded);
    if (!mi.ok) throw new ApiError(422, "spec_unusable", mi.error);
    intent = mi.value.intent;
    result = await deployMeshAgent(meshDeps(state), { agent: name, spec: spec.spec, packageDir: mi.value.packageDir, intent }, { userReplace });
    event = recordMeshDeploy(state.controller, result);
  } else {
    const prepared = preparedKubernetes(loaded);
    intent = prepared.fingerprint;
    const settings = k8sSettings();
    result = await withCluster(state, prepared.inputs.config.context, (cluster) =>
      withVerbDeps(state, cluster, (deps) => deployKubernetesAgent({ ...deps, settings }, name, prepared, { userReplace })),
    );
    event = recordKubernetesDeploy(state.dataDir, result);
  }
  withRegistry(state, (r) => r.remember({ name, target: spec.spec.target, spec_path: loaded.path, spec_text: loaded.text, intent, deployed_ms: Date.now() }));
  const refs: JsonObject = { agent: name, agent_deploy: { chain: spec.spec.target === "mesh" ? "controller" : "k8s", seq: event.seq, hash: event.hash }, outcome: result.outcome };
  return { body: deployEventPayload(result), refs };
}

/** `berth agents --json` rows (src/agents/state.ts): the agent, its target, the classification row and what a deploy would do now. */
async function stateOf(state: ServerState, record: AgentRecord): Promise<AgentState> {
  const loaded = specFromText(record.spec_text, record.spec_path);
  if (!loaded.ok) return unknownAgentState(record, loaded.error);
  if (record.target === "mesh") return meshAgentState(meshDeps(state), record);
  try {
    const prepared = preparedKubernetes(loaded.value);
    return await withCluster(state, prepared.inputs.config.context, (cluster) => kubernetesAgentState(cluster, state.kubernetes.clock, record.name, prepared));
  } catch (error) {
    if (error instanceof ApiError) return unknownAgentState(record, error.message);
    throw error;
  }
}

/** The mesh instance a verb on the agent acts on (the live one, else the newest); 409 when there is none. */
async function meshInstance(state: ServerState, name: string, verb: string): Promise<string> {
  const { instance } = await currentInstance(meshDeps(state), name);
  if (instance === null) throw new ApiError(409, "no_instance", `${name} has no instance on any node that answered; nothing to ${verb}. Deploy it with POST /api/v1/agents`);
  return instance.instanceId;
}

function verbFailed(name: string, instance: string, verb: string, r: { kind: string; reason?: string }): ApiError {
  return new ApiError(r.kind === "refused" ? 409 : 502, `instance_${r.kind}`, `${verb} ${name} (${instance}): ${r.kind}${r.reason ? `: ${r.reason}` : ""}`);
}

export const agentHandlers: Handlers = {
  listAgents: async (_i, ctx) => {
    const records = withRegistry(ctx.state, (r) => r.list());
    const agents: AgentState[] = [];
    for (const record of records) agents.push(await stateOf(ctx.state, record));
    return { body: { agents } };
  },
  deployAgent: async (i, ctx) => {
    const loaded = loadedFromBody(ctx.state, i.body, "body");
    return perAgent.run(loaded.spec.metadata.name, () => runDeploy(ctx, loaded, false));
  },
  getAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return { body: await stateOf(ctx.state, recordOf(ctx.state, name).record) };
  },
  agentLogs: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const q = i.query as In<typeof Inputs.logsQuery>;
    const { record, loaded } = recordOf(ctx.state, name);
    if (record.target === "mesh") {
      const instance = await meshInstance(ctx.state, name, "read");
      const r = await ctx.state.controller.instance("logs", instance, { tail_bytes: q.tail_bytes ?? 65_536 });
      if (r.kind !== "ok") throw verbFailed(name, instance, "logs", r);
      return { body: { agent: name, instance, stdout: String(r.result.stdout ?? ""), stderr: String(r.result.stderr ?? "") } };
    }
    const prepared = preparedKubernetes(loaded);
    return withCluster(ctx.state, prepared.inputs.config.context, async (cluster) => {
      const ref = refOf(prepared);
      let log = "";
      const r = await cluster.readLog(ref.namespace, ref.identity.podName, { follow: false, onChunk: (c) => (log += c) });
      if (r.kind === "absent") throw notFound(`pod ${ref.identity.podName}`, "deploy the agent first");
      if (r.kind === "error") throw new ApiError(502, "k8s_unreachable", `could not read the log of ${ref.identity.podName}`);
      return { body: { agent: name, instance: ref.identity.podName, stdout: log, stderr: "" } };
    });
  },
  stopAgent: async (i, ctx) => perAgent.run((i.params as In<typeof Inputs.agentRef>).name, () => stopAgent(i.params as In<typeof Inputs.agentRef>, ctx)),
  replaceAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const b = i.body as In<typeof Inputs.agentReplace>;
    const loaded = b.spec === undefined ? recordOf(ctx.state, name).loaded : loadedFromBody(ctx.state, b.spec, "body.spec");
    if (loaded.spec.metadata.name !== name) throw new ApiError(422, "agent_mismatch", `body.spec describes agent ${loaded.spec.metadata.name}, not ${name}`);
    return perAgent.run(name, () => runDeploy(ctx, loaded, true));
  },
};

async function stopAgent({ name }: In<typeof Inputs.agentRef>, ctx: CallContext): Promise<Answer> {
  const { record, loaded } = recordOf(ctx.state, name);
  if (record.target === "mesh") {
    const instance = await meshInstance(ctx.state, name, "stop");
    const r = await ctx.state.controller.instance("stop", instance);
    if (r.kind !== "ok") throw verbFailed(name, instance, "stop", r);
    return { body: { ok: true, agent: name, instance, message: `stopped ${instance}; a deploy starts it again` }, refs: { instance_id: instance } };
  }
  const prepared = preparedKubernetes(loaded);
  return withCluster(ctx.state, prepared.inputs.config.context, (cluster) =>
    withVerbDeps(ctx.state, cluster, async (deps) => {
      const r = await k8sStop(deps, refOf(prepared), { wait: false });
      return { status: r.ok ? 200 : 422, body: { ok: r.ok, agent: name, instance: refOf(prepared).identity.podName, message: r.message }, ...(r.ok ? {} : { error: "k8s_stop_failed" }) };
    }),
  );
}
