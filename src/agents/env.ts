/**
 * What a caller of `src/agents` supplies: the registry, a session with the mesh controller, and the way to a
 * Kubernetes cluster and its chain. The CLI builds one per command (it opens the controller for the command), the
 * server one per request over its long-lived controller; everything else about deploying is the same for both.
 */
import type { DeployTarget } from "../core/agents/deploy-event.js";
import type { K8sAudit } from "../kubernetes/audit.js";
import type { Cluster } from "../kubernetes/cluster.js";
import type { Clock } from "../kubernetes/clock.js";
import type { Logger } from "../kubernetes/log.js";
import type { AgentRegistry } from "./registry.js";
import type { AgentTarget } from "./target.js";
import { kubernetesTarget } from "./targets/kubernetes/index.js";
import type { MeshAgentDeps } from "./targets/mesh/deploy.js";
import { meshTarget } from "./targets/mesh/index.js";

/** A person watching (the CLI on a terminal); the server has none. */
export interface Watch {
  /** Runs a wait that has no conditions to show (a spinner on a terminal). */
  waiting<T>(what: string, fn: () => Promise<T>): Promise<T>;
  /** Shows the latest condition of a longer wait until `stop`. */
  conditions(): { update(line: string): void; stop(): void };
}

export interface MeshAccess {
  /** Runs `fn` with the controller and the node client, opening and closing them if the caller owns them. */
  session<T>(fn: (deps: MeshAgentDeps) => Promise<T>): Promise<T>;
}

export type ClusterReach = { readonly ok: true; readonly cluster: Cluster } | { readonly ok: false; readonly error: string; readonly notConfigured?: boolean };

export interface KubernetesAccess {
  /** `context` is the spec's `provider_config.context`; the caller may override it (the CLI's --context). */
  connect(context: string | null): Promise<ClusterReach>;
  /** The backend's chain (`k8s.db`), opened per call. */
  openAudit(): K8sAudit;
  /** The berth home whose `k8s.db` chains the `agent.deploy` event. */
  readonly home: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly version: string;
}

export interface AgentsEnv {
  /** Opened per call, as every process does, so the CLI and the server see each other's deploys. */
  openRegistry(): AgentRegistry;
  readonly mesh: MeshAccess;
  readonly kubernetes: KubernetesAccess;
  readonly watch?: Watch;
  /** Wall time for the registry's `deployed_ms`. */
  readonly now: () => number;
}

export function targetFor(env: AgentsEnv, kind: DeployTarget): AgentTarget {
  switch (kind) {
    case "mesh":
      return meshTarget(env.mesh, env.watch);
    case "kubernetes":
      return kubernetesTarget(env.kubernetes, env.watch);
    default: {
      const never: never = kind;
      throw new Error(`unknown target ${String(never)}`);
    }
  }
}
