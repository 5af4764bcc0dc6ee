/**
 * `berth deploy --dry-run` (issue 36): what a deploy would do now, said before anything is done. The same observation
 * and the same classifier as the deploy itself (`kubernetes-rows.ts`, `mesh-classify.ts`): this file only names the
 * row's action in words — create, no-op, a fenced replace of which pod or instance, a wait — and, on the mesh, where
 * a placement would go and why (the engine's explain). Pure: the targets' shells observe and call these.
 */

import type { JsonObject } from "../crypto/canonical.js";
import type { Action } from "../kubernetes/classify.js";
import type { DeployTarget } from "./deploy-event.js";
import type { MeshAction } from "./mesh-classify.js";

export interface DeployPlan {
  readonly dry_run: true;
  readonly agent: string;
  readonly target: DeployTarget;
  /** The spec's intent fingerprint, as an `agent.deploy` would record it. */
  readonly intent: string;
  /** The row of the deploy table the observation falls in. */
  readonly row: string;
  /** The action a deploy would take first, in `agent.deploy`'s words (`create`, `no-op`, `replace (terminated)` …). */
  readonly action: string;
  /** The pod or instance that runs the agent now, if any. */
  readonly instance: string | null;
  /** What the deploy would stop before it starts another, with the fence that would authorise it. */
  readonly replaces: { readonly instance: string; readonly node: string | null; readonly fence: JsonObject } | null;
  /** Mesh, when the deploy would place: the node it would choose (null: none fits) and the engine's explain. */
  readonly placement: { readonly node: string | null; readonly explain: string; readonly error: string | null } | null;
  readonly observation: JsonObject;
  /** One sentence for people: what a deploy would do, and that nothing was done. */
  readonly message: string;
}

type PlanBase = Pick<DeployPlan, "agent" | "intent" | "row" | "observation">;

/** The Kubernetes row's action in words; `pod` is the agent's pod name, `pendingEdit` a running pod's stale spec. */
export function kubernetesPlan(
  base: PlanBase & { readonly pod: string; readonly namespace: string; readonly pendingEdit: boolean },
  action: Action,
): DeployPlan {
  const plan = (
    act: string,
    instance: string | null,
    message: string,
    replaces: DeployPlan["replaces"] = null,
  ): DeployPlan => ({
    dry_run: true,
    agent: base.agent,
    target: "kubernetes",
    intent: base.intent,
    row: base.row,
    action: act,
    instance,
    replaces,
    placement: null,
    observation: base.observation,
    message: `${base.agent}: ${message}; nothing was done (dry run)`,
  });
  const where = `in namespace ${base.namespace}`;
  switch (action.kind) {
    case "create":
      return plan("create", null, `would create pod ${base.pod} ${where}`);
    case "delete": {
      const fence = { uid: action.fence.uid, resource_version: action.fence.resourceVersion };
      return plan(
        `replace (${action.cause})`,
        action.name,
        `would replace pod ${action.name} (${action.cause}): a delete fenced on uid ${fence.uid} and resourceVersion ${fence.resource_version}, then a create`,
        { instance: action.name, node: null, fence },
      );
    }
    case "await-disappearance":
      return plan(
        "await-disappearance",
        action.name,
        `pod ${action.name} is being deleted; would wait for it to go, then create`,
      );
    case "no-op":
      return plan(
        "no-op",
        action.agentId,
        base.pendingEdit
          ? `pod ${action.agentId} runs an older spec; a deploy leaves it running (berth agent replace applies the change)`
          : `pod ${action.agentId} runs this spec; nothing to do`,
      );
    case "observe":
      return plan(
        "observe",
        action.name,
        `pod ${action.name} has this spec and has not started yet; would wait for it`,
      );
    case "report":
      return plan(
        "report",
        action.name,
        `pod ${action.name} cannot pull its image (${action.failure}); would report it and delete nothing`,
      );
    default: {
      const never: never = action;
      throw new Error(`unreachable action ${JSON.stringify(never)}`);
    }
  }
}

/** The mesh row's action in words; `placement` is the engine's answer when the action places (or replaces, then places). */
export function meshPlan(
  base: PlanBase & { readonly pendingEdit: boolean; readonly placement: DeployPlan["placement"] },
  action: MeshAction,
): DeployPlan {
  const plan = (
    act: string,
    instance: string | null,
    message: string,
    replaces: DeployPlan["replaces"] = null,
    placement: DeployPlan["placement"] = null,
  ): DeployPlan => ({
    dry_run: true,
    agent: base.agent,
    target: "mesh",
    intent: base.intent,
    row: base.row,
    action: act,
    instance,
    replaces,
    placement,
    observation: base.observation,
    message: `${base.agent}: ${message}; nothing was done (dry run)`,
  });
  const onto = (p: DeployPlan["placement"]) =>
    p === null ? "" : p.node === null ? `; no node fits (${p.error ?? "see the explain"})` : ` on node ${p.node}`;
  switch (action.kind) {
    case "place":
      return plan("place", null, `would place it${onto(base.placement)}`, null, base.placement);
    case "replace": {
      const f = action.fence;
      const fence = { node_id: f.nodeId, instance_id: f.instanceId, generation: f.generation };
      return plan(
        `replace (${action.cause})`,
        f.instanceId,
        `would replace ${f.instanceId} on node ${f.nodeId} (${action.cause}): an unload fenced on generation ${f.generation}, then place it${onto(base.placement)}`,
        { instance: f.instanceId, node: f.nodeId, fence },
        base.placement,
      );
    }
    case "no-op":
      return plan(
        "no-op",
        action.instance.instanceId,
        base.pendingEdit
          ? `${action.instance.instanceId} on node ${action.instance.nodeId} runs an older spec; a deploy leaves it running (berth agent replace applies the change)`
          : `${action.instance.instanceId} runs this spec on node ${action.instance.nodeId}; nothing to do`,
      );
    case "observe":
      return plan(
        "observe",
        action.instance.instanceId,
        `${action.instance.instanceId} is loaded on node ${action.instance.nodeId} and not started; nothing to do`,
      );
    case "settle-first":
      return plan(
        "settle-first",
        null,
        `a placement's answer was lost (decision ${action.decisionIds.map((d) => d.slice(0, 12)).join(", ")}); would ask its node first, and place only if it holds nothing`,
      );
    case "await-contact":
      return plan(
        "await-contact",
        null,
        `node ${action.instances.map((i) => i.nodeId).join(", ")} holds ${action.instances.map((i) => i.instanceId).join(", ")} and does not answer; would do nothing until it does`,
      );
    case "await-disappearance":
      return plan(
        "await-disappearance",
        action.fence.instanceId,
        `${action.fence.instanceId} is being stopped or unloaded; would wait for it`,
      );
    case "report-duplicates":
      return plan(
        "report-duplicates",
        action.keep.instanceId,
        `${1 + action.others.length} live instances; would keep ${action.keep.instanceId}, report the others and stop nothing`,
      );
    default: {
      const never: never = action;
      throw new Error(`unreachable action ${JSON.stringify(never)}`);
    }
  }
}
