/**
 * Chaining an agent deploy's outcome (issue 7 §4): one `agent.deploy` event per deploy, on the chain of the component
 * that acted — the mesh controller's chain (source `placement`) or the Kubernetes backend's (source `k8s`, through the
 * deploy's own `K8sAudit`: the home's `k8s.db`, or the controller store's chain when that store is PostgreSQL, issue
 * 20). The payload shape is `core/agents/deploy-event.ts`.
 */
import { type AgentDeployResult, deployEventDraft } from "../core/agents/deploy-event.js";
import type { SealedEvent } from "../core/chain/event.js";
import type { K8sAudit } from "../kubernetes/audit.js";
import type { MeshController } from "../mesh/controller/index.js";

export async function recordMeshDeploy(controller: MeshController, result: AgentDeployResult): Promise<SealedEvent> {
  const [event] = await controller.store.appendAll([deployEventDraft(result)]);
  if (event === undefined) throw new Error("the agent.deploy event was not appended");
  return event;
}

/** Appends to the chain the deploy's Kubernetes records went to; rejects (`AuditWriteError`) when it cannot. */
export function recordKubernetesDeploy(audit: K8sAudit, result: AgentDeployResult): Promise<SealedEvent> {
  return audit.append(deployEventDraft(result));
}
