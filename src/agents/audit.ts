/**
 * Chaining an agent deploy's outcome (issue 7 §4): one `agent.deploy` event per deploy, on the chain of the component
 * that acted — the mesh controller's chain (source `placement`) or the Kubernetes backend's own chain (source `k8s`,
 * the same `k8s.db` and key `berth k8s` and the provider use). The payload shape is `core/agents/deploy-event.ts`.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Chain } from "../chain/chain.js";
import { type AgentDeployResult, deployEventDraft } from "../core/agents/deploy-event.js";
import type { SealedEvent } from "../core/chain/event.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { k8sStatePaths } from "../kubernetes/audit.js";
import type { MeshController } from "../mesh/controller/index.js";
import { openDatabase } from "../store/sqlite.js";

export async function recordMeshDeploy(controller: MeshController, result: AgentDeployResult): Promise<SealedEvent> {
  const [event] = await controller.store.appendAll([deployEventDraft(result)]);
  if (event === undefined) throw new Error("the agent.deploy event was not appended");
  return event;
}

/** Appends to the Kubernetes backend's chain in `home` (created with its key on first use, as `openK8sChain` does). */
export function recordKubernetesDeploy(home: string, result: AgentDeployResult): SealedEvent {
  const paths = k8sStatePaths(home);
  if (!existsSync(dirname(paths.db))) mkdirSync(dirname(paths.db), { recursive: true, mode: 0o700 });
  const key = existsSync(paths.key)
    ? loadKeyFile(paths.key)
    : (() => {
        const k = generateSigningKey();
        saveKeyFile(paths.key, k);
        return k;
      })();
  const db = openDatabase(paths.db);
  try {
    const chain = Chain.open(db, key, "k8s");
    return chain.record(deployEventDraft(result), () => undefined).event;
  } finally {
    db.close();
  }
}
