/**
 * What "started" must mean before a deploy answers success (issue 34). The seed's rule stands: a pod is `Started` when
 * its `agent` container reports `state.running` (decode.ts, classify.ts are unchanged). But one observation of it is
 * not proof that the harness is up: a real kubelet publishes `state.running` for a container that exits within
 * milliseconds, and writes `terminated` only at its next relist (about a second later). A deploy that answered on the
 * first `running` reported a harness that crashes at start as started, and every later deploy replaced it and said
 * "started" again.
 *
 * So the converge loop's success edge (the seed's `Create`: "create the pod, then wait for the harness container to
 * start") answers only once the same container instance — same pod uid, container id and restart count — has been
 * seen running on two quorum reads at least `windowMs` apart. The second read is an ordinary pass of the loop: if it
 * shows the container terminated, `classify` takes its terminated row and the one-attempt rule answers K4 with the
 * exit code. The fast path is the exception: a pod already running when the call arrives is the strict no-op (one GET),
 * as the seed's row 3 says — confirming it would cost every no-op deploy the window.
 *
 * Pure: time is a number handed in by the shell. A confirmation can only delay a success; it never deletes anything.
 */
import type { PodObject } from "./objects.js";
import { AGENT_CONTAINER } from "./naming.js";

/** One running instance of the `agent` container, first seen at `since` (the shell's monotonic clock). */
export interface RunningSeen {
  readonly instance: string;
  readonly since: number;
}

export type StartConfirmation =
  | { readonly kind: "confirmed" }
  /** Read again at `until` (or at an earlier wake); `seen` is what the next decision compares against. */
  | { readonly kind: "confirming"; readonly seen: RunningSeen; readonly until: number };

/** Which running container this is: a restart, a new container id or a new pod starts the window again. */
export function runningInstance(pod: PodObject): string {
  const status = pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER);
  return [
    pod.metadata.uid ?? "",
    status?.containerID ?? "",
    String(status?.restartCount ?? 0),
    status?.state?.running?.startedAt ?? "",
  ].join("|");
}

export function confirmStart(
  previous: RunningSeen | null,
  instance: string,
  now: number,
  windowMs: number,
): StartConfirmation {
  const seen = previous !== null && previous.instance === instance ? previous : { instance, since: now };
  if (now - seen.since >= windowMs) return { kind: "confirmed" };
  return { kind: "confirming", seen, until: seen.since + windowMs };
}
