/**
 * The Kubernetes deploy table (`core/kubernetes/classify.ts`, spec/kubernetes.md §7) in the agents' shared vocabulary, so
 * that one `agent.deploy` audit event and one `berth agent status` line mean the same on both targets. This adds no
 * decision: it names the row `classify` took. Rows present on one target only:
 * - Kubernetes only: `provably-broken` (a verified Secret absence or image defect) and `pull-failing` (reported,
 *   never deleted). A mesh package is verified against pinned hashes before load, so neither state exists there.
 * - mesh only: `unsettled-decision`, `instance-unobservable` and `two-live-instances` (see `mesh-classify.ts`): the
 *   apiserver is one source of truth read by quorum, and the pod name is the agent's identity, so a lost answer, a
 *   silent holder or a second copy cannot exist there.
 */
import { type Action, classify } from "../kubernetes/classify.js";
import type { VerifiedPod } from "../kubernetes/verify.js";

export const KUBERNETES_ROWS = [
  "no-instance",
  "going-away",
  "started",
  "terminated",
  "provably-broken",
  "pull-failing",
  "never-started-same-intent",
  "never-started-diverged-intent",
] as const;
export type KubernetesRow = (typeof KUBERNETES_ROWS)[number];

/** `classify`, with the name of the row it took. */
export function classifyKubernetes(
  observed: VerifiedPod | null,
  desired: string,
  equivalents: readonly string[] = [],
): { row: KubernetesRow; action: Action } {
  // `equivalents`: recorded intents that mean the same as `desired` (Buzz's template v1/v2, issue 18.2), so the
  // agents layer names the row exactly as the loop will act on it.
  const action = classify(observed, desired, equivalents);
  if (observed === null) return { row: "no-instance", action };
  if (observed.deletionMarked) return { row: "going-away", action };
  switch (observed.startup.kind) {
    case "started":
      return { row: "started", action };
    case "terminated":
      return { row: "terminated", action };
    case "provably-broken":
      return { row: "provably-broken", action };
    case "pull-failing":
      return { row: "pull-failing", action };
    case "recoverable":
      return { row: action.kind === "observe" ? "never-started-same-intent" : "never-started-diverged-intent", action };
    default: {
      const never: never = observed.startup;
      throw new Error(`unreachable startup ${JSON.stringify(never)}`);
    }
  }
}
