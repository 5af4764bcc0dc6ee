/**
 * Agents over HTTP (issue 7's deploy endpoint, issue 8): `POST /agents` is `berth deploy` of a spec sent as JSON, one
 * deploy model over both targets — the mesh through the long-lived `MeshController`, Kubernetes through the backend's
 * converge loop — and the same `agent.deploy` event on the same chain as the CLI. Translation only (issue 14.1):
 * HTTP into an `AgentsEnv` and calls of `src/agents`, answers into bodies, failures into status codes. The registry is
 * in the controller's store (issue 20), so the CLI and every server on the store see every deploy.
 *
 * A spec posted here has no file: it is remembered as `<data dir>/<name>.agent.json`, so a relative `spec.package` or
 * `nsec_file` resolves against the server's data directory (say so to the caller; absolute paths are clearer).
 */
import { join } from "node:path";
import type { z } from "zod";
import { deployEventPayload } from "../../core/agents/deploy-event.js";
import { parseSelector } from "../../core/agents/labels.js";
import { AgentSpecSchema, validateAgentSpec } from "../../core/agents/spec.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { silentLogger } from "../../kit/log.js";
import type { Inputs } from "../contract.js";
import { ApiError, invalidRequest, notFound } from "../errors.js";
import type { Answer, Handlers } from "../handler.js";
import { KeyedLock } from "../keyed-lock.js";
import type { ServerState } from "../state.js";
import { k8sNotConfigured } from "./kubernetes.js";
import {
  agentHistory,
  rollbackAgent,
  AgentRegistry,
  type AgentsEnv,
  agentLogs,
  agentState,
  agentStates,
  type DeployDone,
  deleteAgent,
  deployAgent,
  type FailureMap,
  type LoadedSpec,
  type Outcome,
  planDeploy,
  purgeAgent,
  replaceAgent,
  specFromText,
  startAgent,
  stopAgent,
  translateFailure,
  unwrap,
} from "../../agents/index.js";

/** Deploys, replaces and stops of one agent run one at a time in this server (see keyed-lock.ts). */
const perAgent = new KeyedLock();

type In<T extends z.ZodType> = z.infer<T>;

/**
 * The spec document as the CLI would have read it from a file in the data directory. `source` (the CLI's FILE, from
 * `?source=`) names it in messages; a refusal carries the `spec_invalid` failure in the spec's own field names, which
 * the CLI prints exactly as it does for the same file on its own (issue 36), beside the API's `body.…` issues.
 */
function loadedFromBody(state: ServerState, body: unknown, where: string, source: string | null): LoadedSpec {
  const parsed = AgentSpecSchema.safeParse(body);
  if (!parsed.success) {
    const api = invalidRequest(
      "body",
      parsed.error.issues.map((i) => ({
        ...i,
        path: where === "body" ? i.path : [where.replace(/^body\./, ""), ...i.path],
      })),
    );
    const spec = validateAgentSpec(body, source);
    throw new ApiError(400, api.code, api.message, {
      ...api.extra,
      failure: { kind: "spec_invalid", message: spec.ok ? api.message : spec.error.join("\n") },
    });
  }
  const path = join(state.dataDir, `${parsed.data.metadata.name}.agent.json`);
  const loaded = specFromText(`${JSON.stringify(body, null, 2)}\n`, path, source);
  if (!loaded.ok)
    throw new ApiError(400, "invalid_request", loaded.error, {
      issues: [{ path: where, message: loaded.error }],
      failure: { kind: "spec_invalid", message: loaded.error },
    });
  return loaded.value;
}

/** The server's long-lived controller and node client; the cluster its kubeconfig (or a test) names. */
export function agentsEnv(state: ServerState): AgentsEnv {
  return {
    registry: (fn) => fn(new AgentRegistry(state.controller.store)),
    mesh: { session: (fn) => fn({ controller: state.controller, client: state.client }) },
    kubernetes: {
      connect: async (context) => {
        const configured = state.kubernetes.configured();
        if (!configured.configured)
          return { ok: false, notConfigured: true, error: k8sNotConfigured(configured.reason).message };
        return state.kubernetes.connect(context ?? configured.context);
      },
      openAudit: async () => state.openK8sAudit(),
      home: state.dataDir,
      clock: state.kubernetes.clock,
      log: silentLogger,
      version: state.version,
    },
    now: Date.now,
  };
}

const API_ERRORS: FailureMap<ApiError> = {
  spec_invalid: (f) => new ApiError(400, "invalid_request", f.message),
  unknown_agent: (f) => notFound(`agent ${f.agent}`, "deploy it with POST /api/v1/agents"),
  agent_mismatch: (f) => new ApiError(422, "agent_mismatch", f.message),
  spec_unreadable: (f) => new ApiError(422, "spec_unreadable", f.message),
  // A spec that cannot run as written is a request that could not be made (400), as the CLI's exit 2 says.
  spec_unusable: (f) => new ApiError(f.usage ? 400 : 422, "spec_unusable", f.message),
  settings_invalid: (f) => new ApiError(422, "k8s_settings", f.message),
  audit_unavailable: (f) => new ApiError(500, "audit_unavailable", f.message),
  cluster_not_configured: (f) => new ApiError(409, "k8s_not_configured", f.message),
  cluster_unreachable: (f) => new ApiError(502, "k8s_unreachable", f.message),
  no_instance: (f) => new ApiError(409, "no_instance", `${f.message}. Deploy it with POST /api/v1/agents`),
  instance_verb_failed: (f) =>
    new ApiError(f.result.kind === "refused" ? 409 : 502, `instance_${f.result.kind}`, f.message),
  pod_absent: (f) => notFound(`pod ${f.pod}`, "deploy the agent first"),
  log_unreadable: (f) => new ApiError(502, "k8s_unreachable", `could not read the log of ${f.pod}`),
};

/** The API's words for a failure, with the failure itself attached so the CLI can word it as it does locally. */
const answered = <T>(o: Outcome<T>): T =>
  unwrap(o, (f) => {
    const e = translateFailure(API_ERRORS, f);
    return new ApiError(e.status, e.code, e.message, { ...e.extra, failure: f });
  });

/** The deploy's answer, with refs naming the `agent.deploy` event for the api.call outcome. */
function deployAnswer(done: Outcome<DeployDone>): Answer {
  const { result, event } = answered(done);
  const refs: JsonObject = {
    agent: result.agent,
    agent_deploy: { chain: event.chain, seq: event.seq, hash: event.hash },
    outcome: result.outcome,
  };
  return { body: deployEventPayload(result), refs };
}

export const agentHandlers: Handlers = {
  listAgents: async (i, ctx) => {
    const { labelSelector } = i.query as In<typeof Inputs.labelQuery>;
    const parsed = parseSelector(labelSelector ?? "");
    if (!parsed.ok)
      throw new ApiError(400, "invalid_request", `query.labelSelector: ${parsed.error}`, {
        issues: [{ path: "query.labelSelector", message: parsed.error }],
      });
    return { body: { agents: await agentStates(agentsEnv(ctx.state), parsed.value) } };
  },
  deployAgent: async (i, ctx) => {
    const loaded = loadedFromBody(ctx.state, i.body, "body", (i.query as In<typeof Inputs.deployQuery>).source ?? null);
    // Issue 36: the plan is a read: no lock, nothing chained (contract.ts readOnlyWhen), nothing done.
    if ((i.query as In<typeof Inputs.deployQuery>).dryRun === "true")
      return { body: answered(await planDeploy(agentsEnv(ctx.state), loaded)) as unknown as JsonObject };
    return perAgent.run(loaded.spec.metadata.name, async () =>
      deployAnswer(await deployAgent(agentsEnv(ctx.state), loaded)),
    );
  },
  getAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return { body: answered(await agentState(agentsEnv(ctx.state), name)) };
  },
  agentLogs: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const q = i.query as In<typeof Inputs.logsQuery>;
    return { body: answered(await agentLogs(agentsEnv(ctx.state), name, { tailBytes: q.tail_bytes ?? 65_536 })) };
  },
  stopAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return perAgent.run(name, async () => {
      const b = i.body as In<typeof Inputs.agentStop>;
      const r = answered(await stopAgent(agentsEnv(ctx.state), name, { wait: b.wait === true }));
      const body = {
        ok: r.ok,
        agent: r.agent,
        instance: r.instance,
        message: r.ok ? `${r.message}; a deploy starts it again` : r.message,
        ...(r.already_stopped ? { already_stopped: true } : {}),
      };
      return r.ok
        ? { body, ...(r.instance ? { refs: { instance_id: r.instance } } : {}) }
        : { status: 422, body, error: "k8s_stop_failed" };
    });
  },
  purgeAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return perAgent.run(name, async () => {
      const r = answered(await purgeAgent(agentsEnv(ctx.state), name));
      return {
        body: { ok: r.ok, agent: r.agent, instance: r.instance, message: r.message },
        ...(r.instance ? { refs: { instance_id: r.instance } } : {}),
      };
    });
  },
  agentHistory: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return { body: answered(await agentHistory(agentsEnv(ctx.state), name)) as unknown as JsonObject };
  },
  rollbackAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const { revision } = i.body as In<typeof Inputs.agentRollback>;
    return perAgent.run(name, async () => {
      const done = await rollbackAgent(agentsEnv(ctx.state), name, revision);
      const answer = deployAnswer(done);
      return done.ok
        ? { ...answer, body: { ...(answer.body as JsonObject), rollback_of: done.value.revision } }
        : answer;
    });
  },
  startAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    return perAgent.run(name, async () => deployAnswer(await startAgent(agentsEnv(ctx.state), name)));
  },
  deleteAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const b = i.body as In<typeof Inputs.agentDelete>;
    const operator: JsonObject = {
      via: "api (berth agent delete)",
      token: ctx.caller.who,
      remote: ctx.caller.remote,
      ...(b.operator ? { claimed: { ...b.operator } } : {}),
    };
    return perAgent.run(name, async () => {
      const r = answered(await deleteAgent(agentsEnv(ctx.state), name, operator));
      return { body: { ...r } };
    });
  },
  replaceAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.agentRef>;
    const b = i.body as In<typeof Inputs.agentReplace>;
    const given =
      b.spec === undefined
        ? undefined
        : {
            loaded: loadedFromBody(
              ctx.state,
              b.spec,
              "body.spec",
              (i.query as In<typeof Inputs.specSourceQuery>).source ?? null,
            ),
            from: (i.query as In<typeof Inputs.specSourceQuery>).source ?? "body.spec",
          };
    return perAgent.run(name, async () => deployAnswer(await replaceAgent(agentsEnv(ctx.state), name, given)));
  },
};
