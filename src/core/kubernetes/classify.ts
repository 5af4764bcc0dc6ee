/**
 * The deploy state machine (spec/kubernetes.md §7) as one pure function: a verified observation and the desired
 * create-intent fingerprint in, one action out. No I/O, no clock, so every row is a unit test without a cluster.
 *
 * Invariants held by the types rather than by memory:
 * - A `DeleteAction` is built only by `deleteFrom`, which copies the fence of the pod it was given; no later step
 *   can re-read and substitute a fresher fence (I-1).
 * - The pull-failure branch is `reportFor`, whose return type is `ReportAction`; `DeleteCause` has no pull-failure
 *   member and the delete variant no `failure` field, so a reason string can never become deletion authority (I-2).
 * - Pod age is not a parameter. Any age threshold collides with autoscalers' own pod-age delays, and a
 *   delete-recreate resets exactly the age it keys on, so the strongest way to say "age triggers nothing" is to make
 *   it unrepresentable here.
 */
import { intentMatches } from "./intent.js";
import type { PullFailure } from "./pull-failure.js";
import type { Fence, VerifiedPod } from "./verify.js";

export type DeleteCause = "terminated" | "provably-broken" | "intent-diverged";

declare const classifiedBrand: unique symbol;

export type CreateAction = { readonly kind: "create" };
export type DeleteAction = {
  readonly kind: "delete";
  readonly name: string;
  readonly fence: Fence;
  readonly cause: DeleteCause;
  readonly [classifiedBrand]: true;
};
export type AwaitDisappearanceAction = {
  readonly kind: "await-disappearance";
  readonly name: string;
  readonly uid: string;
};
export type NoOpAction = { readonly kind: "no-op"; readonly agentId: string };
export type ObserveAction = { readonly kind: "observe"; readonly name: string };
export type ReportAction = { readonly kind: "report"; readonly name: string; readonly failure: PullFailure };

export type Action = CreateAction | DeleteAction | AwaitDisappearanceAction | NoOpAction | ObserveAction | ReportAction;

export function assertNever(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}

/** The one delete constructor: the fence is the observed pod's own. */
function deleteFrom(pod: VerifiedPod, cause: DeleteCause): DeleteAction {
  return { kind: "delete", name: pod.name, fence: pod.fence, cause } as DeleteAction;
}

/** Row 6, narrowed: this branch cannot return a delete whatever it is later changed to do. */
export function reportFor(pod: VerifiedPod, failure: PullFailure): ReportAction {
  return { kind: "report", name: pod.name, failure };
}

/**
 * The eight ordered rows of §7.1. `desired` is the freshly computed fingerprint, `equivalents` the other recorded
 * values that mean the same intent (another template version, §9.4); comparison is always recorded annotation vs
 * fresh computation, never a diff of the live spec (admission defaulting would make every pod diverge).
 */
export function classify(observed: VerifiedPod | null, desired: string, equivalents: readonly string[] = []): Action {
  // Row 1: nothing of ours there — first deploy, or after GC. (A foreign pod is refused by the loop before this.)
  if (observed === null) return { kind: "create" };
  const pod = observed;
  // Row 2, before any startup state: a gracefully deleting pod keeps phase Running and may still report
  // state.running, so checking startup first would answer with an agent id that is about to evaporate.
  if (pod.deletionMarked) return { kind: "await-disappearance", name: pod.name, uid: pod.fence.uid };
  const startup = pod.startup;
  switch (startup.kind) {
    // Row 3: strict no-op, even when the intent diverges. Automation never kills a live agent mid-turn; an edit
    // reaches a started agent only in its next generation.
    case "started":
      return { kind: "no-op", agentId: pod.name };
    // Row 4: residue of an exited generation; deleting it is the normal restart path.
    case "terminated":
      return deleteFrom(pod, "terminated");
    // Row 5: "provably" means a verified Secret absence or a structural image defect, never a reason string.
    case "provably-broken":
      return deleteFrom(pod, "provably-broken");
    // Row 6: reported at once instead of burning the deadline; never a delete, diverged intent or not.
    case "pull-failing":
      return reportFor(pod, startup.failure);
    // Rows 7–8: divergence is evidence of a config change the user is waiting on, and the only thing that
    // replaces a never-started pod. A missing or malformed recorded intent compares unequal.
    case "recoverable":
      return intentMatches(pod.recordedIntent, { fingerprint: desired, equivalents })
        ? { kind: "observe", name: pod.name }
        : deleteFrom(pod, "intent-diverged");
    default:
      return assertNever(startup);
  }
}
