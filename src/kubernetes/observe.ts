/**
 * The one pod observation (spec/kubernetes.md §5, §6): quorum GET → verify → settle, the Secret read of §6 row 6 only
 * for a pod that is ours. The converge loop, the race loser and the operator verbs all see a pod through this file,
 * so a read error is never absence and an unverified pod never reaches a decision anywhere.
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { decodeStartup } from "../core/kubernetes/decode.js";
import type { AgentIdentity } from "../core/kubernetes/naming.js";
import type { QuorumPod } from "../core/kubernetes/quorum.js";
import { type VerifiedPod, verifyPod } from "../core/kubernetes/verify.js";
import type { Cluster, ReadResult, RequestOptions } from "./cluster.js";

export type Observation =
  | { readonly kind: "absent" }
  | { readonly kind: "foreign"; readonly raw: QuorumPod }
  | { readonly kind: "verified"; readonly pod: VerifiedPod; readonly raw: QuorumPod }
  /** H5 (the pod read) or H1 (the Secret read), with the apiserver's reason. */
  | { readonly kind: "error"; readonly message: string };

/** One quorum GET of the agent's pod, settled. */
export async function observePod(
  cluster: Cluster,
  namespace: string,
  identity: AgentIdentity,
  o?: RequestOptions,
): Promise<Observation> {
  return settlePod(cluster, namespace, identity, await cluster.getPod(namespace, identity.podName, o), o);
}

/** Settles a pod read already made (the await-disappearance loop reads first, then settles only the last answer). */
export async function settlePod(
  cluster: Cluster,
  namespace: string,
  identity: AgentIdentity,
  r: ReadResult<QuorumPod>,
  o?: RequestOptions,
): Promise<Observation> {
  if (r.kind === "error") return { kind: "error", message: catalogue.H5(identity.podName, describeApiError(r.error)) };
  if (r.kind === "absent") return { kind: "absent" };
  const raw = r.object;
  // Ownership first: a foreign pod costs no Secret read.
  if (verifyPod(raw, identity, { kind: "recoverable" }).kind === "foreign") return { kind: "foreign", raw };
  let decoding = decodeStartup(raw);
  if (decoding.kind === "needs-secret") {
    const s = await cluster.getSecret(namespace, decoding.secretName, o);
    if (s.kind === "error")
      return { kind: "error", message: catalogue.H1(decoding.secretName, describeApiError(s.error)) };
    decoding = decodeStartup(raw, s.kind === "found" ? "present" : "absent");
  }
  if (decoding.kind !== "decided") throw new Error("unreachable: decoding needs a second Secret read");
  const v = verifyPod(raw, identity, decoding.startup);
  return v.kind === "verified" ? { kind: "verified", pod: v.pod, raw } : { kind: "foreign", raw };
}
