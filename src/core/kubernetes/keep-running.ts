/**
 * The Kubernetes side of the keep loop in `berth serve` (issue 16): given one settled quorum observation of an
 * agent's pod and the agent spec's restart policy (`spec.restart`, core/node/restart-policy.ts), what the loop does.
 * Level-triggered like a controller-runtime Reconciler: the same observation always gives the same verdict, and the
 * loop keeps nothing but backoff between passes.
 *
 * | observation                                         | policy              | verdict                                 |
 * |-----------------------------------------------------|---------------------|-----------------------------------------|
 * | no pod                                              | any                 | none (stopped, or never deployed: the loop never creates from absence) |
 * | a pod that is not ours on the agent's name          | any                 | alert foreign                           |
 * | deletion-marked                                     | any                 | none (going away; whoever deleted it decides) |
 * | started                                             | any                 | none — strict no-op, whatever the intent |
 * | terminated                                          | never               | none                                    |
 * | terminated with exit code 0 (clean)                 | on-failure          | none                                    |
 * | terminated otherwise (non-zero, signal, unknown)    | on-failure          | replace                                 |
 * | terminated                                          | always              | replace                                 |
 * | pull-failing                                        | any                 | alert pull_failing (never a delete)     |
 * | provably broken, recoverable (never started)        | any                 | none (a deploy's own rows, not the loop's) |
 *
 * Structural rules:
 * - `replace` is built only by `replaceFrom`, which copies the fence of the verified pod it was given, so the delete
 *   the shell performs carries the fence of the observation that authorised it (I-1);
 * - the pull-failure branch returns `AlertVerdict`, which has no fence: a pull failure can never reach a delete (I-2);
 * - a started pod has no row that acts (A2, classify.ts row 3).
 *
 * Pure.
 */
import type { RestartPolicy } from "../node/restart-policy.js";
import { assertNever } from "./classify.js";
import { agentContainerState } from "./decode.js";
import type { PodObject } from "./objects.js";
import type { Fence, VerifiedPod } from "./verify.js";

/** What one quorum read settled to (src/kubernetes/observe.ts), with the raw pod for the exit code. */
export type KeepObservation =
  | { readonly kind: "absent" }
  | { readonly kind: "foreign" }
  | { readonly kind: "verified"; readonly pod: VerifiedPod; readonly raw: PodObject };

export type KeepAlertReason = "foreign" | "pull_failing";

declare const replaceBrand: unique symbol;

export type NoneVerdict = { readonly kind: "none"; readonly why: string };
export type AlertVerdict = { readonly kind: "alert"; readonly reason: KeepAlertReason; readonly why: string };
/** The state machine's terminated row (classify.ts row 4): fenced delete of this observation, then create. */
export type ReplaceVerdict = {
  readonly kind: "replace";
  readonly name: string;
  readonly fence: Fence;
  readonly why: string;
  readonly [replaceBrand]: true;
};
export type KeepVerdict = NoneVerdict | AlertVerdict | ReplaceVerdict;

/** How the agent container ended: the exit code when the kubelet wrote one, else what the phase says. */
export function exitOf(raw: PodObject): { readonly clean: boolean; readonly describe: string } {
  const code = agentContainerState(raw)?.terminated?.exitCode;
  if (typeof code === "number") return { clean: code === 0, describe: `exited with code ${code}` };
  const phase = raw.status?.phase ?? null;
  // Without an exit code only `Succeeded` says the run was clean; `Failed` or nothing at all is a failure.
  return phase === "Succeeded"
    ? { clean: true, describe: "succeeded (no exit code recorded)" }
    : { clean: false, describe: `ended with phase ${phase ?? "unknown"} and no exit code` };
}

function replaceFrom(pod: VerifiedPod, why: string): ReplaceVerdict {
  return { kind: "replace", name: pod.name, fence: pod.fence, why } as ReplaceVerdict;
}

export function judgeAgentPod(observed: KeepObservation, policy: RestartPolicy): KeepVerdict {
  if (observed.kind === "absent")
    return { kind: "none", why: "no pod: the agent was stopped or never created; the loop never creates from absence" };
  if (observed.kind === "foreign")
    return {
      kind: "alert",
      reason: "foreign",
      why: "a pod that berth does not own holds the agent's name; it is never touched",
    };
  const pod = observed.pod;
  // Before the startup state, as classify.ts row 2: a deleting pod may still report running.
  if (pod.deletionMarked) return { kind: "none", why: "the pod is being deleted" };
  const startup = pod.startup;
  switch (startup.kind) {
    case "started":
      return { kind: "none", why: "running" };
    case "terminated": {
      const end = exitOf(observed.raw);
      if (policy === "never") return { kind: "none", why: `${end.describe}; restart policy never` };
      if (policy === "on-failure" && end.clean)
        return { kind: "none", why: `${end.describe}; restart policy on-failure keeps a clean exit final` };
      return replaceFrom(pod, `${end.describe}; restart policy ${policy}`);
    }
    case "pull-failing":
      return {
        kind: "alert",
        reason: "pull_failing",
        why: `the image cannot be pulled (${startup.failure}); nothing is deleted`,
      };
    case "provably-broken":
    case "recoverable":
      return { kind: "none", why: `never started (${startup.kind}); a deploy decides, not the loop` };
    default:
      return assertNever(startup);
  }
}
