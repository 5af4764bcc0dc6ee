/**
 * What a caller of `src/agents` supplies: the registry, the way to each target (access.ts) and who is watching. The CLI builds one per command (it opens the controller for the command), the
 * server one per request over its long-lived controller; everything else about deploying is the same for both.
 */
import type { DeployTarget } from "../core/agents/deploy-event.js";
import type { KubernetesAccess, MeshAccess } from "./access.js";
import type { AgentRegistry } from "./registry.js";
import type { AgentTarget, Watch } from "./target.js";
import { kubernetesTarget } from "./targets/kubernetes/index.js";
import { meshTarget } from "./targets/mesh/index.js";

export interface AgentsEnv {
  /**
   * Runs `fn` on the registry in the controller store: the CLI opens its controller for the call, the server lends
   * its own, so every process on the store sees every deploy.
   */
  registry<T>(fn: (registry: AgentRegistry) => Promise<T>): Promise<T>;
  readonly mesh: MeshAccess;
  readonly kubernetes: KubernetesAccess;
  readonly watch?: Watch;
  /** Wall time for the registry's `deployed_ms`. */
  readonly now: () => number;
  /** Where `valueFrom: {env}` values are read (issue 17): this process's environment unless a test says otherwise. */
  readonly processEnv?: NodeJS.ProcessEnv;
}

export function targetFor(env: AgentsEnv, kind: DeployTarget): AgentTarget {
  switch (kind) {
    case "mesh":
      return meshTarget(env.mesh, env.watch, env.processEnv);
    case "kubernetes":
      return kubernetesTarget(env.kubernetes, env.watch);
    default: {
      const never: never = kind;
      throw new Error(`unknown target ${String(never)}`);
    }
  }
}
