/**
 * The `Cluster` seam: every Kubernetes API call berth makes, as typed outcomes instead of exceptions. Two
 * implementations follow the same documented apiserver semantics: `HttpCluster` (a real apiserver, through the
 * kubeconfig) and `FakeCluster` (in-process, with an injected clock). The converge loop, GC and the operator verbs
 * are written against this interface only, so a conformance suite can run the very same loop against a real
 * kube-apiserver.
 *
 * Reads are quorum reads (resourceVersion unset). Watches yield only a `WakeSignal` — never an object — so nothing
 * that can delete or answer success ever rests on a watch payload (I-4).
 */
import type { ApiError } from "../core/kubernetes/api-status.js";
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import type { ClaimObject, SecretMeta } from "../core/kubernetes/objects.js";
import type { QuorumPod } from "../core/kubernetes/quorum.js";
import type { Fence } from "../core/kubernetes/verify.js";

export type ReadResult<T> =
  | { readonly kind: "found"; readonly object: T }
  | { readonly kind: "absent" }
  | { readonly kind: "error"; readonly error: ApiError };
export type CreateResult<T> =
  | { readonly kind: "created"; readonly object: T }
  | { readonly kind: "already-exists" }
  | { readonly kind: "error"; readonly error: ApiError };
export type DeleteResult =
  | { readonly kind: "accepted" }
  | { readonly kind: "not-found" }
  | { readonly kind: "precondition-failed" }
  | { readonly kind: "error"; readonly error: ApiError };
export type ListResult<T> =
  /** `resourceVersion`: the list's own, where a watch of the same set resumes from (a real apiserver always sends it). */
  | {
      readonly kind: "listed";
      readonly items: readonly T[];
      readonly serverDateMs: number | null;
      readonly resourceVersion?: string;
    }
  | { readonly kind: "error"; readonly error: ApiError };

/** uid + resourceVersion preconditions for a Secret delete (from its create response or a quorum LIST). */
export interface ObjectPrecondition {
  readonly uid: string;
  readonly resourceVersion: string;
}

export interface RequestOptions {
  /** min(30 s, time left); the caller never issues a request with no time left. */
  readonly timeoutMs?: number;
}

/** A watch event reduced to a reason to read again: the pod's name and the event's resourceVersion (never the object). */
export type WakeSignal = {
  readonly podName: string;
  readonly kind: "added" | "modified" | "deleted";
  readonly resourceVersion?: string;
};
/** Why a watch ended: `gone` (410, restart from a fresh GET), `forbidden`/`unsupported` (disable for the call). */
export type WatchEnd = "closed" | "gone" | "forbidden" | "unsupported" | "error";

export interface WatchHandlers {
  readonly onEstablished: () => void;
  readonly onWake: (signal: WakeSignal) => void;
  readonly onEnd: (why: WatchEnd) => void;
  /** A bookmark: nothing changed up to this resourceVersion (where a reconnect resumes). */
  readonly onBookmark?: (resourceVersion: string) => void;
}

export interface WatchHandle {
  close(): void;
}

/**
 * A watch of every pod of a label selector in one namespace: the keep loop of `berth serve` (issue 16). Not part
 * of `Cluster`: a deploy call watches only its own pod; a cluster without it is resynced by LIST alone.
 */
export interface PodSetWatch {
  watchPods(
    ns: string,
    selector: string,
    fromResourceVersion: string | undefined,
    handlers: WatchHandlers,
  ): WatchHandle;
}

export function canWatchPodSets(cluster: Cluster): cluster is Cluster & PodSetWatch {
  return typeof (cluster as Partial<PodSetWatch>).watchPods === "function";
}

export type LogResult =
  | { readonly kind: "done" }
  | { readonly kind: "absent" }
  | { readonly kind: "error"; readonly error: ApiError };

export interface Cluster {
  /** API requests issued so far (benchmarks and the deploy outcome record). */
  readonly requestCount: number;
  /** For audit records: the kubeconfig context and the API server host. */
  readonly identity: { readonly context: string; readonly server: string };

  getNamespace(ns: string, o?: RequestOptions): Promise<ReadResult<unknown>>;
  createNamespace(manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<unknown>>;

  getPod(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<QuorumPod>>;
  /** `ns` null lists across all namespaces. */
  listPods(ns: string | null, selector: string, o?: RequestOptions): Promise<ListResult<QuorumPod>>;
  createPod(ns: string, manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<QuorumPod>>;
  /** The fenced delete of §8.6: preconditions from `fence`, never gracePeriodSeconds or propagationPolicy. */
  deletePod(
    ns: string,
    name: string,
    fence: Fence,
    authority: DeleteAuthority,
    o?: RequestOptions,
  ): Promise<DeleteResult>;

  getSecret(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<SecretMeta>>;
  listSecrets(ns: string, selector: string, o?: RequestOptions): Promise<ListResult<SecretMeta>>;
  createSecret(ns: string, manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<SecretMeta>>;
  deleteSecret(ns: string, name: string, pre: ObjectPrecondition, o?: RequestOptions): Promise<DeleteResult>;

  getClaim(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<ClaimObject>>;
  createClaim(ns: string, manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<ClaimObject>>;

  /** `fieldSelector=metadata.name=<name>` from `fromResourceVersion` (or the current state when undefined). */
  watchPod(ns: string, name: string, fromResourceVersion: string | undefined, handlers: WatchHandlers): WatchHandle;

  /** `GET pods/<name>/log?container=agent`, streamed to `onChunk` (the operator's terminal only). */
  readLog(
    ns: string,
    name: string,
    opts: { follow: boolean; tailLines?: number; onChunk: (chunk: string) => void; signal?: AbortSignal },
  ): Promise<LogResult>;

  /** Closes watches and sockets (§3.1 step 6). */
  close(): void;
}
