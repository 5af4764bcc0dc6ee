/**
 * Startup state from pod status (spec/kubernetes.md §6). Only the container named `agent` counts, and pod phase never
 * means started: a pod can be `Running` while the harness container still waits. Decoding is the "settle" step the
 * loop and GC share; the one row that needs I/O (a Secret read for `CreateContainerConfigError`) is returned as a
 * question for the shell, which answers it and decodes again.
 */
import { AGENT_CONTAINER } from "./naming.js";
import { agentSecretRef, type PodObject } from "./objects.js";
import { classifyPullFailure, type PullFailure } from "./pull-failure.js";

export type Startup =
  | { readonly kind: "started" }
  | { readonly kind: "terminated" }
  | { readonly kind: "recoverable" }
  | { readonly kind: "provably-broken" }
  | { readonly kind: "pull-failing"; readonly failure: PullFailure };

export type Decoding =
  | { readonly kind: "decided"; readonly startup: Startup }
  | { readonly kind: "needs-secret"; readonly secretName: string };

/** The shell's answer to `needs-secret`, from one quorum GET of that Secret. */
export type SecretProbe = "present" | "absent";

const decided = (startup: Startup): Decoding => ({ kind: "decided", startup });

export function agentContainerState(pod: PodObject) {
  return pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER)?.state ?? null;
}

export function decodeStartup(pod: PodObject, secretProbe?: SecretProbe): Decoding {
  const state = agentContainerState(pod);
  // Row 1: the harness process is up. This, not phase, is what "live" means.
  if (state?.running) return decided({ kind: "started" });
  // Row 2: it ran and exited.
  if (state?.terminated) return decided({ kind: "terminated" });
  // Row 3 (berth deviation P-13): a Failed pod whose container still reports waiting would otherwise be observed forever.
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return decided({ kind: "terminated" });
  const reason = state?.waiting?.reason ?? "";
  // Row 4: a structural defect in the reference; the only reason string that proves breakage.
  if (reason === "InvalidImageName") return decided({ kind: "provably-broken" });
  // Row 5: pulls that will not heal are reported; all other pull trouble may still heal.
  if (reason === "ErrImagePull" || reason === "ImagePullBackOff") {
    const failure = classifyPullFailure(state?.waiting?.message);
    return decided(failure ? { kind: "pull-failing", failure } : { kind: "recoverable" });
  }
  // Row 6: only a confirmed 404 of the referenced Secret makes this provably broken; the reason alone is a hint.
  if (reason === "CreateContainerConfigError") {
    const secretName = agentSecretRef(pod);
    if (secretName === null) return decided({ kind: "recoverable" });
    if (secretProbe === undefined) return { kind: "needs-secret", secretName };
    return decided(secretProbe === "absent" ? { kind: "provably-broken" } : { kind: "recoverable" });
  }
  // Rows 7–8: any other waiting reason, or no status yet (unscheduled, quota-blocked, pulling). Unschedulable is
  // never fatal: scale-from-zero may still add a node.
  return decided({ kind: "recoverable" });
}

/** GC only needs to know which pods are terminated, and rows 1–3 never need the Secret read. */
export function isTerminated(pod: PodObject): boolean {
  const d = decodeStartup(pod, "present");
  return d.kind === "decided" && d.startup.kind === "terminated";
}
