/**
 * The converge loop's own small decisions (spec/kubernetes.md §8), as pure tables beside `classify`: what the executor
 * does with a classified action given what this call already did, and what a race loser concludes from the winner's
 * pod. The shell only performs the step these return, as the seed's `reconcile` only executes `classify`'s actions.
 *
 * Rules held here:
 * - One create attempt per call (§8.7): once this call created a pod, neither another create nor a delete of our own
 *   pod is allowed; an immediate exit recurs until its cause is fixed, so the call gives up (K4) instead of looping.
 * - The race loser only observes (§8.8): never a delete of the winner, never the divergence row (two contenders would
 *   delete each other), never a second create; and the deletion mark is checked before startup (P-4: a dying winner
 *   is not success, even while it still reports `state.running`).
 */
import { type Action, assertNever, type DeleteAction } from "./classify.js";
import type { PullFailure } from "./pull-failure.js";
import type { VerifiedPod } from "./verify.js";

/** What the loop does next; `give-up` carries where K4's condition comes from (the observed pod, or "gone"). */
export type LoopStep =
  | { readonly kind: "succeed"; readonly agentId: string }
  | { readonly kind: "wait" }
  | { readonly kind: "report"; readonly failure: PullFailure }
  | { readonly kind: "await-disappearance"; readonly uid: string }
  | { readonly kind: "delete"; readonly action: DeleteAction }
  | { readonly kind: "create" }
  | { readonly kind: "give-up"; readonly condition: "observed" | "gone" };

/** `classify`'s action, filtered through the one-create-attempt rule. */
export function loopStep(action: Action, createdThisCall: boolean): LoopStep {
  switch (action.kind) {
    // The only success edge.
    case "no-op":
      return { kind: "succeed", agentId: action.agentId };
    case "observe":
      return { kind: "wait" };
    case "report":
      return { kind: "report", failure: action.failure };
    case "await-disappearance":
      return { kind: "await-disappearance", uid: action.uid };
    // Our own pod did not stay running: deleting it to try again would be a second attempt.
    case "delete":
      return createdThisCall ? { kind: "give-up", condition: "observed" } : { kind: "delete", action };
    // Our own pod vanished after we created it: creating again would be a second attempt.
    case "create":
      return createdThisCall ? { kind: "give-up", condition: "gone" } : { kind: "create" };
    default:
      return assertNever(action);
  }
}

/** What the loser of a create race concludes from one observation of the winner's pod (null: absent for now). */
export type LoserStep =
  | { readonly kind: "succeed"; readonly agentId: string }
  | { readonly kind: "wait" }
  | { readonly kind: "winner-dying" }
  | { readonly kind: "winner-did-not-start" }
  | { readonly kind: "report"; readonly failure: PullFailure };

export function loserStep(pod: VerifiedPod | null): LoserStep {
  if (pod === null) return { kind: "wait" };
  // Deletion mark before started: a dying winner keeps phase Running and may still report state.running.
  if (pod.deletionMarked) return { kind: "winner-dying" };
  const s = pod.startup;
  switch (s.kind) {
    case "started":
      return { kind: "succeed", agentId: pod.name };
    case "terminated":
    case "provably-broken":
      return { kind: "winner-did-not-start" };
    case "pull-failing":
      return { kind: "report", failure: s.failure };
    // Never-started and plausibly healing: the winner's call owns the divergence row, not the loser.
    case "recoverable":
      return { kind: "wait" };
    default:
      return assertNever(s);
  }
}
