/**
 * Kubernetes agents (`berth k8s deploy|status|list|logs|stop|replace` over HTTP): the backend's own converge loop and
 * verbs (`src/kubernetes/verbs.ts`), on the cluster the kubeconfig names — or, in tests, the one injected through
 * `KubernetesAccess`. Without a configured context every route but the list answers 409 `k8s_not_configured`.
 */
import type { z } from "zod";
import { runConvergeLoop } from "../../agents/index.js";
import { parseSelector } from "../../core/agents/labels.js";
import { isValidNamespace } from "../../core/kubernetes/config.js";
import {
  type AgentIdentity,
  identityFromPubkeyHex,
  MANAGED_SELECTOR,
  PUBKEY_FULL_ANNOTATION,
} from "../../core/kubernetes/naming.js";
import type { Cluster } from "../../kubernetes/cluster.js";
import { silentLogger } from "../../kit/log.js";
import { type Prepared, prepareDeploy } from "../../kubernetes/prepare.js";
import { type K8sSettings, settingsFromEnv } from "../../kubernetes/settings.js";
import {
  type AgentRef,
  clearForReplace,
  list,
  replaceAuditEnd,
  replaceAuditStart,
  status,
  stop,
  type VerbDeps,
} from "../../kubernetes/verbs.js";
import type { Inputs } from "../contract.js";
import { ApiError, notFound } from "../errors.js";
import type { CallContext, Handlers } from "../handler.js";
import type { ServerState } from "../state.js";

type In<T extends z.ZodType> = z.infer<T>;
const LOG_CAP_BYTES = 1024 * 1024;

export const k8sNotConfigured = (reason: string) =>
  new ApiError(
    409,
    "k8s_not_configured",
    `no Kubernetes context is configured (${reason}); set KUBECONFIG or pass --kubeconfig to berth serve`,
  );

export function k8sSettings(): K8sSettings {
  const s = settingsFromEnv(process.env);
  if (!s.ok) throw new ApiError(422, "k8s_settings", s.error);
  return s.value;
}

/** Connects (409 when nothing is configured, 502 when the cluster cannot be reached), runs `fn`, closes. */
export async function withCluster<T>(
  state: ServerState,
  context: string | null,
  fn: (cluster: Cluster) => Promise<T>,
): Promise<T> {
  const configured = state.kubernetes.configured();
  if (!configured.configured) throw k8sNotConfigured(configured.reason);
  const c = await state.kubernetes.connect(context ?? configured.context);
  if (!c.ok) throw new ApiError(502, "k8s_unreachable", c.error);
  try {
    return await fn(c.value);
  } finally {
    c.value.close();
  }
}

export async function withVerbDeps<T>(
  state: ServerState,
  cluster: Cluster,
  fn: (deps: VerbDeps) => Promise<T>,
): Promise<T> {
  let audit: ReturnType<ServerState["openK8sAudit"]>;
  try {
    audit = state.openK8sAudit();
  } catch (error) {
    throw new ApiError(
      500,
      "audit_unavailable",
      `could not open the Kubernetes audit chain: ${(error as Error).message}`,
    );
  }
  try {
    return await fn({ cluster, clock: state.kubernetes.clock, audit, log: silentLogger, version: state.version });
  } finally {
    await audit.close();
  }
}

function prepared(raw: unknown): Prepared & { ok: true } {
  const p = prepareDeploy(raw, { requireCommand: true });
  if (!p.ok)
    throw new ApiError(400, "invalid_request", `body: ${p.error}`, { issues: [{ path: "body", message: p.error }] });
  return p;
}

/** The backend's deploy loop, as `berth k8s deploy` runs it; the answer is that verb's `--json` document. */
async function runDeploy(
  deps: VerbDeps,
  p: Prepared & { ok: true },
): Promise<{ ok: boolean; agent_id?: string; error?: string }> {
  const report = await runConvergeLoop(deps, p.value.inputs, { settings: k8sSettings() });
  return report.answer.ok ? { ok: true, agent_id: report.answer.agentId } : { ok: false, error: report.answer.error };
}

/** `{name}` is the agent's 64-hex public key, or its pod name looked up by the berth labels in the namespace. */
async function resolveRef(cluster: Cluster, name: string, namespace: string): Promise<AgentRef> {
  if (!isValidNamespace(namespace))
    throw new ApiError(400, "invalid_request", "query.namespace: must be a valid Kubernetes namespace", {
      issues: [{ path: "query.namespace", message: "must be a valid Kubernetes namespace" }],
    });
  let identity: AgentIdentity | null = null;
  if (/^[0-9a-f]{64}$/.test(name)) {
    const id = identityFromPubkeyHex(name);
    if (id.ok) identity = id.value;
  } else {
    const pods = await cluster.listPods(namespace, MANAGED_SELECTOR);
    if (pods.kind === "error") throw new ApiError(502, "k8s_unreachable", `could not list pods in ${namespace}`);
    const pod = pods.items.find((p) => p.metadata.name === name);
    const pubkey = pod?.metadata.annotations?.[PUBKEY_FULL_ANNOTATION];
    if (pubkey) {
      const id = identityFromPubkeyHex(pubkey);
      if (id.ok && id.value.podName === name) identity = id.value;
    }
  }
  if (identity === null)
    throw notFound(
      `agent ${name} in namespace ${namespace}`,
      "give its 64-hex public key or the pod name GET /api/v1/k8s/agents lists",
    );
  return { identity, namespace };
}

export function answerOf(r: { ok: boolean; agent_id?: string; error?: string }, refs: Record<string, string | null>) {
  return { status: r.ok ? 200 : 422, body: r, refs, ...(r.ok ? {} : { error: "k8s_deploy_failed" }) };
}

export const kubernetesHandlers: Handlers = {
  listK8sAgents: async (i, ctx: CallContext) => {
    const q = i.query as In<typeof Inputs.k8sListQuery>;
    const configured = ctx.state.kubernetes.configured();
    if (!configured.configured) return { body: { configured: false, context: null, agents: [], error: null } };
    const c = await ctx.state.kubernetes.connect(configured.context);
    if (!c.ok) return { body: { configured: true, context: configured.context, agents: [], error: c.error } };
    try {
      const parsed = parseSelector(q.labelSelector ?? "");
      if (!parsed.ok)
        throw new ApiError(400, "invalid_request", `query.labelSelector: ${parsed.error}`, {
          issues: [{ path: "query.labelSelector", message: parsed.error }],
        });
      const rows = await list(c.value, q.namespace ?? null, parsed.value);
      return {
        body: {
          configured: true,
          context: c.value.identity.context,
          agents: "error" in rows ? [] : rows,
          error: "error" in rows ? rows.error : null,
        },
      };
    } finally {
      c.value.close();
    }
  },
  deployK8sAgent: async (i, ctx) => {
    const p = prepared(i.body);
    return withCluster(ctx.state, p.value.inputs.config.context, async (cluster) =>
      answerOf(await withVerbDeps(ctx.state, cluster, (deps) => runDeploy(deps, p)), {
        pod: p.value.inputs.identity.podName,
        namespace: p.value.inputs.config.namespace,
      }),
    );
  },
  getK8sAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.k8sAgentRef>;
    const q = i.query as In<typeof Inputs.k8sAgentQuery>;
    return withCluster(ctx.state, null, async (cluster) => {
      const ref = await resolveRef(cluster, name, q.namespace);
      const r = await status({ cluster, clock: ctx.state.kubernetes.clock }, ref, null);
      if ("error" in r) throw new ApiError(502, "k8s_unreachable", r.error);
      return { body: r };
    });
  },
  k8sAgentLogs: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.k8sAgentRef>;
    const q = i.query as In<typeof Inputs.k8sLogsQuery>;
    return withCluster(ctx.state, null, async (cluster) => {
      const ref = await resolveRef(cluster, name, q.namespace);
      let log = "";
      const r = await cluster.readLog(ref.namespace, ref.identity.podName, {
        follow: false,
        ...(q.tail !== undefined ? { tailLines: q.tail } : {}),
        onChunk: (c) => {
          if (log.length < LOG_CAP_BYTES) log += c;
        },
      });
      if (r.kind === "absent") throw notFound(`pod ${ref.identity.podName}`, "deploy the agent first");
      if (r.kind === "error")
        throw new ApiError(502, "k8s_unreachable", `could not read the log of ${ref.identity.podName}`);
      return { body: { pod: ref.identity.podName, namespace: ref.namespace, log } };
    });
  },
  stopK8sAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.k8sAgentRef>;
    const b = i.body as In<typeof Inputs.k8sStop>;
    return withCluster(ctx.state, null, async (cluster) => {
      const ref = await resolveRef(cluster, name, b.namespace);
      const r = await withVerbDeps(ctx.state, cluster, (deps) => stop(deps, ref, { wait: b.wait }));
      return {
        status: r.ok ? 200 : 422,
        body: r,
        refs: { pod: ref.identity.podName },
        ...(r.ok ? {} : { error: "k8s_stop_failed" }),
      };
    });
  },
  replaceK8sAgent: async (i, ctx) => {
    const { name } = i.params as In<typeof Inputs.k8sAgentRef>;
    const p = prepared(i.body);
    if (name !== p.value.inputs.identity.podName && name !== p.value.inputs.identity.pubkey) {
      throw new ApiError(
        422,
        "agent_mismatch",
        `the body describes agent ${p.value.inputs.identity.podName}, not ${name}`,
      );
    }
    const ref: AgentRef = { identity: p.value.inputs.identity, namespace: p.value.inputs.config.namespace };
    return withCluster(ctx.state, p.value.inputs.config.context, (cluster) =>
      withVerbDeps(ctx.state, cluster, async (deps) => {
        const actionId = await replaceAuditStart(deps, ref);
        const cleared = await clearForReplace(deps, ref, actionId, k8sSettings().deadlineSeconds * 1000);
        const r = cleared.ok ? await runDeploy(deps, p) : { ok: false, error: cleared.message };
        await replaceAuditEnd(
          deps,
          ref,
          actionId,
          r.ok ? { ok: true, message: r.agent_id ?? "" } : { ok: false, message: r.error ?? "" },
        );
        return answerOf(r, { pod: ref.identity.podName, replace_action: actionId });
      }),
    );
  },
};
