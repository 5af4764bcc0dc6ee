/**
 * The way to each target that a caller of `src/agents` supplies: a session with the mesh controller, and a Kubernetes
 * cluster with its chain. Its own file so the adapters (targets/*) and the environment (env.ts) both depend on it,
 * never on each other.
 */
import type { K8sAudit } from "../kubernetes/audit.js";
import type { Cluster } from "../kubernetes/cluster.js";
import type { Clock } from "../kit/clock.js";
import type { Logger } from "../kit/log.js";
import type { Result } from "../kit/result.js";
import type { MeshAgentDeps } from "./targets/mesh/deploy.js";

export interface MeshAccess {
  /** Runs `fn` with the controller and the node client, opening and closing them if the caller owns them. */
  session<T>(fn: (deps: MeshAgentDeps) => Promise<T>): Promise<T>;
}

/** A failure says whether no cluster is configured at all, which the edges answer differently from one that did not answer. */
export type ClusterReach = Result<Cluster> & { readonly notConfigured?: boolean };

export interface KubernetesAccess {
  /** `context` is the spec's `provider_config.context`; the caller may override it (the CLI's --context). */
  connect(context: string | null): Promise<ClusterReach>;
  /**
   * The chain the backend records in, opened per call: the home's `k8s.db`, or the controller store's chain when the
   * store is PostgreSQL (issue 20). The `agent.deploy` event of a deploy goes to the same chain.
   */
  openAudit(): Promise<K8sAudit>;
  /** The berth home (the deploy's files; its `k8s.db` on a SQLite store). */
  readonly home: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly version: string;
}
