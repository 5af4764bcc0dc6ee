/**
 * `QuorumPod`: a pod read with `resourceVersion` unset, so it was served from etcd (spec/kubernetes.md §2, I-4). Only a
 * Cluster adapter's quorum GET or LIST may call `fromQuorumRead`; watch payloads and caches never become one, so
 * nothing that can delete or answer success ever rests on stale data.
 */
import type { PodObject } from "./objects.js";

declare const quorumBrand: unique symbol;
export type QuorumPod = PodObject & { readonly [quorumBrand]: true };

/** For Cluster adapters only, on the body of a quorum GET/LIST. */
export function fromQuorumRead(pod: PodObject): QuorumPod {
  return pod as QuorumPod;
}
