/**
 * The latest condition string (spec/kubernetes.md §10.3) and what it may contain (§10.4). Kubelet waiting and terminated
 * *messages* never appear — waiting messages can carry registry tokens and terminated messages are process output —
 * only reasons, exit codes, phases and pod-condition text (which derives from the pod spec and is actionable).
 */
import { agentContainerState } from "./decode.js";
import type { PodObject } from "./objects.js";

export const POD_GONE = "the pod no longer exists";

export function latestCondition(pod: PodObject): string {
  // A gracefully deleting pod keeps phase Running (and its container may still run) for its whole grace period: say
  // what it is, not "the pod is Running" (issue 34).
  if (pod.metadata.deletionTimestamp) {
    const grace = pod.spec.terminationGracePeriodSeconds;
    return typeof grace === "number"
      ? `the pod is terminating (deletion requested; grace period ${grace}s)`
      : "the pod is terminating (deletion requested)";
  }
  const state = agentContainerState(pod);
  const waitingReason = state?.waiting?.reason;
  if (state?.waiting && waitingReason) return `the container is waiting, reason ${waitingReason}`;
  if (state?.terminated) {
    const code = state.terminated.exitCode ?? 0;
    const reason = state.terminated.reason;
    return reason ? `the container exited with code ${code} (${reason})` : `the container exited with code ${code}`;
  }
  const falseCondition = pod.status?.conditions?.find((c) => c.status === "False");
  if (falseCondition) {
    const parts = [falseCondition.reason ?? "", falseCondition.message ?? ""].filter((p) => p !== "");
    return parts.length
      ? `pod condition ${falseCondition.type} is false: ${parts.join(": ")}`
      : `pod condition ${falseCondition.type} is false`;
  }
  const phase = pod.status?.phase;
  if (phase) return `the pod is ${phase}`;
  return "no condition reported by the cluster";
}

export function unreadableCondition(error: string): string {
  return `the pod's condition could not be read: ${error}`;
}
