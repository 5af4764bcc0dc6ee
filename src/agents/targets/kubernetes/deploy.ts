/**
 * Kubernetes agents (issue 7 §3): `berth deploy` of a spec whose target is `kubernetes` runs the Kubernetes backend's
 * own converge loop (`kubernetes/converge.ts`, run through `loop.ts`) on the request `core/agents/kubernetes-request.ts` builds — so the
 * rows, fences and `k8s.*` audit records are exactly those of `berth k8s deploy` and the provider protocol. Around it,
 * this file adds what both targets share: one quorum observation and its classification row before the loop acts
 * (for the `agent.deploy` event and the user-visible outcome), and the explicit `berth agent replace`, which on
 * Kubernetes is the backend's fenced user stop (the one path allowed to delete a started pod) followed by a deploy.
 *
 * Where the user-visible behaviour necessarily differs from the mesh: the loop waits up to the deadline for a
 * never-started or disappearing pod to settle, where the mesh answers at once (`waiting`, `blocked`), because the
 * apiserver, not berth, is the one that starts a pod.
 */
import type { Result } from "../../../kit/result.js";
import type { AgentDeployResult, DeployRound } from "../../../core/agents/deploy-event.js";
import { deployAnswers, pendingEditNote } from "../../../core/agents/deploy-event.js";
import { classifyKubernetes, type KubernetesRow } from "../../../core/agents/kubernetes-rows.js";
import type { JsonObject } from "../../../core/crypto/canonical.js";
import type { Action } from "../../../core/kubernetes/classify.js";
import { intentMatches } from "../../../core/kubernetes/intent.js";
import type { Cluster } from "../../../kubernetes/cluster.js";
import type { Prepared } from "../../../kubernetes/prepare.js";
import { type AgentRef, look, startupLabel, stop, type VerbDeps } from "../../../kubernetes/verbs.js";
import { type LoopOptions, runConvergeLoop } from "./loop.js";

/** What `berth serve`'s keep loop adds to a deploy it makes (serve/kubernetes/keeper.ts): the judged uid and who it is. */
export interface LoopAct {
  readonly onlyReplacing: { readonly uid: string };
  readonly by: JsonObject;
}

/** The backend's verb dependencies plus what its loop needs (`loop.ts`). */
export type KubernetesAgentDeps = VerbDeps & LoopOptions;

export type PreparedDeploy = Prepared & { ok: true };

export function refOf(prepared: PreparedDeploy): AgentRef {
  return { identity: prepared.value.inputs.identity, namespace: prepared.value.inputs.config.namespace };
}

type Look = Result<{
  readonly row: KubernetesRow;
  readonly action: Action;
  readonly observation: JsonObject;
  readonly fence: JsonObject | null;
  readonly pod: string;
}>;

/** One quorum read of the agent's pod, verified and classified: what the loop will find first. */
export async function observeKubernetes(cluster: Cluster, prepared: PreparedDeploy): Promise<Look> {
  const ref = refOf(prepared);
  const seen = await look(cluster, ref);
  const pod = ref.identity.podName;
  if (seen.kind === "error") return { ok: false, error: seen.message };
  if (seen.kind === "foreign")
    return {
      ok: false,
      error: `pod ${pod} in namespace ${ref.namespace} is not managed by berth/Buzz for this agent; refusing to touch it`,
    };
  const verified = seen.kind === "verified" ? seen.pod : null;
  const { row, action } = classifyKubernetes(verified, prepared.value.fingerprint, prepared.value.intent.equivalents);
  const observation: JsonObject =
    verified === null
      ? { pod, namespace: ref.namespace, observed: "absent" }
      : {
          pod,
          namespace: ref.namespace,
          observed: "verified",
          startup: startupLabel(verified.startup),
          deletion_marked: verified.deletionMarked,
          recorded_intent: verified.recordedIntent,
          uid: verified.fence.uid,
          resource_version: verified.fence.resourceVersion,
        };
  const fence =
    action.kind === "delete" ? { uid: action.fence.uid, resource_version: action.fence.resourceVersion } : null;
  return { ok: true, value: { row, action, observation, fence, pod } };
}

/** `berth deploy` of a Kubernetes agent; with `userReplace`, `berth agent replace`. */
export async function deployKubernetesAgent(
  deps: KubernetesAgentDeps,
  agent: string,
  prepared: PreparedDeploy,
  opts: { readonly userReplace?: boolean; readonly loop?: LoopAct } = {},
): Promise<AgentDeployResult> {
  const rounds: DeployRound[] = [];
  const answers = deployAnswers({ agent, target: "kubernetes", intent: prepared.value.fingerprint, rounds });
  const loop = opts.loop;
  const result: typeof answers = (...args) => ({ ...answers(...args), ...(loop ? { by: loop.by } : {}) });
  const first = await observeKubernetes(deps.cluster, prepared);
  if (!first.ok) return result(false, "failed", `${agent}: ${first.error}`);
  // The keep loop replaces only the pod it judged terminated; anything else it leaves for its next look.
  if (loop && !(first.value.row === "terminated" && first.value.observation.uid === loop.onlyReplacing.uid)) {
    return result(
      false,
      "failed",
      `${agent}: pod ${first.value.pod} is no longer the terminated pod the keep loop judged (now ${first.value.row}); nothing was done`,
      first.value.pod,
    );
  }
  const ref = refOf(prepared);
  const userAct =
    opts.userReplace === true && (first.value.row === "started" || first.value.row === "never-started-same-intent");
  rounds.push({
    row: first.value.row,
    action: userAct
      ? "replace (user)"
      : first.value.action.kind === "delete"
        ? `replace (${first.value.action.cause})`
        : first.value.action.kind,
    fence: userAct
      ? { uid: String(first.value.observation.uid), resource_version: String(first.value.observation.resource_version) }
      : first.value.fence,
    observation: first.value.observation,
  });
  if (userAct) {
    // The backend's user stop: fenced by the observation it makes itself, audited as k8s.stop, waits for the pod to go.
    const stopped = await stop(deps, ref, { wait: true });
    if (!stopped.ok)
      return result(
        false,
        "failed",
        `${agent}: could not clear ${first.value.pod} for the replace: ${stopped.message}; nothing was created.`,
        first.value.pod,
      );
  }
  const report = await runConvergeLoop(deps, prepared.value.inputs, loop ? { ...deps, loop } : deps);
  const a = report.answer;
  if (!a.ok) return result(false, "failed", `${agent}: ${a.error}`, first.value.pod);
  if (first.value.row === "started" && !userAct) {
    const recorded = first.value.observation.recorded_intent;
    const edited = !intentMatches(typeof recorded === "string" ? recorded : null, prepared.value.intent);
    const base = `${agent} is running as pod ${a.agentId} in namespace ${ref.namespace}`;
    return result(
      true,
      "unchanged",
      edited ? `${base}; ${pendingEditNote(`pod ${a.agentId}`)}` : `${base}; nothing to do`,
      a.agentId,
      edited,
    );
  }
  const how = userAct
    ? "replaced the previous pod: "
    : first.value.row === "terminated" || first.value.row === "never-started-diverged-intent"
      ? "replaced the previous pod: "
      : "";
  return result(true, "started", `${agent}: ${how}started pod ${a.agentId} in namespace ${ref.namespace}`, a.agentId);
}
