/**
 * The Kubernetes `AgentTarget`: one bare pod per agent, through the backend's own converge loop (`loop.ts`), quorum
 * look (`deploy.ts`) and verbs (`kubernetes/verbs.ts`). A verb connects to the cluster the spec's
 * `provider_config.context` names (or the caller's override), opens the backend's chain for the call, and closes both.
 */
import { agentStateOf } from "../../../core/agents/deploy-event.js";
import { kubernetesDeployRequest } from "../../../core/agents/kubernetes-request.js";
import type { K8sAudit } from "../../../kubernetes/audit.js";
import type { Cluster } from "../../../kubernetes/cluster.js";
import type { Clock } from "../../../kit/clock.js";
import { prepareDeploy } from "../../../kubernetes/prepare.js";
import { type K8sSettings, settingsFromEnv } from "../../../kubernetes/settings.js";
import { status as k8sStatus, stop as k8sStop, type VerbDeps } from "../../../kubernetes/verbs.js";
import { recordKubernetesDeploy } from "../../audit.js";
import type { KubernetesAccess } from "../../access.js";
import type { Watch } from "../../target.js";
import { err, ok } from "../../../kit/result.js";
import { type LoadedSpec, readNsec } from "../../spec-file.js";
import { type AgentState, unknownAgentState } from "../../state.js";
import type { AgentTarget, Outcome } from "../../target.js";
import { deployKubernetesAgent, observeKubernetes, type PreparedDeploy, refOf } from "./deploy.js";
import { kubernetesPlan } from "../../../core/agents/deploy-plan.js";
import { intentMatches } from "../../../core/kubernetes/intent.js";

export { deployKubernetesAgent, observeKubernetes, type PreparedDeploy, refOf } from "./deploy.js";
export { cliBudget, loopDeps, runConvergeLoop } from "./loop.js";

/** The spec as the backend's deploy request; the nsec is read here and never appears in a failure. */
function prepare(loaded: LoadedSpec, requireCommand: boolean): Outcome<PreparedDeploy> {
  const nsec = readNsec(loaded, process.env);
  if (!nsec.ok) return err({ kind: "spec_unusable", message: nsec.error, usage: true });
  const prepared = prepareDeploy(kubernetesDeployRequest(loaded.spec, nsec.value), { requireCommand });
  if (!prepared.ok)
    return err({
      kind: "spec_unusable",
      message: loaded.source === null ? prepared.error : `${loaded.source}: ${prepared.error}`,
      usage: false,
    });
  return ok(prepared);
}

function settings(): Outcome<K8sSettings> {
  const s = settingsFromEnv(process.env);
  return s.ok ? ok(s.value) : err({ kind: "settings_invalid", message: s.error });
}

async function withCluster<T>(
  access: KubernetesAccess,
  prepared: PreparedDeploy,
  fn: (cluster: Cluster) => Promise<Outcome<T>>,
): Promise<Outcome<T>> {
  const c = await access.connect(prepared.value.inputs.config.context);
  if (!c.ok) return err({ kind: c.notConfigured ? "cluster_not_configured" : "cluster_unreachable", message: c.error });
  try {
    return await fn(c.value);
  } finally {
    c.value.close();
  }
}

async function withVerbDeps<T>(
  access: KubernetesAccess,
  cluster: Cluster,
  fn: (deps: VerbDeps) => Promise<Outcome<T>>,
): Promise<Outcome<T>> {
  let audit: K8sAudit;
  try {
    audit = await access.openAudit();
  } catch (error) {
    return err({
      kind: "audit_unavailable",
      message: `could not open the Kubernetes audit chain: ${(error as Error).message}`,
    });
  }
  try {
    return await fn({ cluster, clock: access.clock, audit, log: access.log, version: access.version });
  } finally {
    await audit.close();
  }
}

/** A Kubernetes agent's state from one quorum observation of its pod plus the pod's latest condition. */
export async function kubernetesAgentState(
  cluster: Cluster,
  clock: Clock,
  name: string,
  prepared: PreparedDeploy,
): Promise<AgentState> {
  const seen = await observeKubernetes(cluster, prepared);
  if (!seen.ok) return unknownAgentState({ name, target: "kubernetes" }, seen.error);
  const st = await k8sStatus({ cluster, clock }, refOf(prepared), prepared.value.intent);
  const observation =
    "error" in st
      ? seen.value.observation
      : { ...seen.value.observation, condition: st.condition ?? null, intent: st.intent ?? null };
  const next = seen.value.action.kind === "delete" ? `replace (${seen.value.action.cause})` : seen.value.action.kind;
  return {
    name,
    target: "kubernetes",
    state: agentStateOf(seen.value.row),
    row: seen.value.row,
    next,
    instance: seen.value.row === "no-instance" ? null : seen.value.pod,
    observation,
    error: null,
  };
}

export function kubernetesTarget(access: KubernetesAccess, watch?: Watch): AgentTarget {
  return {
    kind: "kubernetes",
    async deploy(loaded, { userReplace, loop }) {
      const prepared = prepare(loaded, true);
      if (!prepared.ok) return prepared;
      const s = settings();
      if (!s.ok) return s;
      const done = await withCluster(access, prepared.value, (cluster) =>
        withVerbDeps(access, cluster, async (deps) => {
          const progress = watch?.conditions();
          let result: Awaited<ReturnType<typeof deployKubernetesAgent>>;
          try {
            const onProgress = progress ? (line: string) => progress.update(line) : undefined;
            result = await deployKubernetesAgent(
              { ...deps, settings: s.value, ...(onProgress ? { onProgress } : {}) },
              loaded.spec.metadata.name,
              prepared.value,
              { userReplace, ...(loop ? { loop } : {}) },
            );
          } finally {
            progress?.stop();
          }
          // On the chain the deploy's k8s.* records went to, before it is closed.
          const event = await recordKubernetesDeploy(deps.audit, result);
          return ok({ result, event: { chain: deps.audit.chain, seq: event.seq, hash: event.hash } });
        }),
      );
      if (!done.ok) return done;
      return ok({ result: done.value.result, intent: prepared.value.value.fingerprint, event: done.value.event });
    },

    // Issue 36: one quorum look and its row, as the deploy's first round; no audit chain is opened, nothing is written.
    async plan(loaded) {
      const prepared = prepare(loaded, true);
      if (!prepared.ok) return prepared;
      const s = settings();
      if (!s.ok) return s;
      return withCluster(access, prepared.value, async (cluster) => {
        const seen = await observeKubernetes(cluster, prepared.value);
        const agent = loaded.spec.metadata.name;
        if (!seen.ok) return err({ kind: "cluster_unreachable", message: `${agent}: ${seen.error}` });
        const recorded = seen.value.observation.recorded_intent;
        const pendingEdit =
          seen.value.row === "started" &&
          !intentMatches(typeof recorded === "string" ? recorded : null, prepared.value.value.intent);
        const base = {
          agent,
          intent: prepared.value.value.fingerprint,
          row: seen.value.row,
          observation: seen.value.observation,
          pod: seen.value.pod,
          namespace: refOf(prepared.value).namespace,
          pendingEdit,
        };
        return ok(kubernetesPlan(base, seen.value.action));
      });
    },

    async states(agents) {
      const states: AgentState[] = [];
      for (const { record, loaded } of agents) {
        // A status needs no command: it only reads.
        const prepared = prepare(loaded, false);
        const state = prepared.ok
          ? await withCluster(access, prepared.value, async (cluster) =>
              ok(await kubernetesAgentState(cluster, access.clock, record.name, prepared.value)),
            )
          : prepared;
        states.push(state.ok ? state.value : unknownAgentState(record, state.error.message));
      }
      return states;
    },

    async stop({ record, loaded }, { wait }) {
      const prepared = prepare(loaded, true);
      if (!prepared.ok) return prepared;
      const ref = refOf(prepared.value);
      return withCluster(access, prepared.value, (cluster) =>
        withVerbDeps(access, cluster, async (deps) => {
          const r = await k8sStop(deps, ref, { wait });
          return ok({ ok: r.ok, agent: record.name, instance: ref.identity.podName, message: r.message });
        }),
      );
    },

    async logs({ record, loaded }, { onChunk }) {
      const prepared = prepare(loaded, true);
      if (!prepared.ok) return prepared;
      const ref = refOf(prepared.value);
      const pod = ref.identity.podName;
      const agent = record.name;
      return withCluster(access, prepared.value, async (cluster) => {
        let log = "";
        const r = await cluster.readLog(ref.namespace, pod, {
          follow: false,
          onChunk: (c) => {
            log += c;
            onChunk?.(c);
          },
        });
        if (r.kind === "absent")
          return err({ kind: "pod_absent", agent, pod, message: `${agent}: pod ${pod} does not exist` });
        if (r.kind === "error")
          return err({ kind: "log_unreadable", agent, pod, message: `${agent}: could not read the log of ${pod}` });
        return ok({ agent, instance: pod, stdout: log, stderr: "" });
      });
    },
  };
}
