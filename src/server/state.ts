/**
 * What the server holds open for its lifetime, and how it opens it: one long-lived `MeshController` (the CLI may run
 * beside it on the same SQLite files, so every read goes back to the database or the nodes — nothing the CLI could
 * change is cached here), the node client for read-only status calls, and the way to a Kubernetes cluster. The
 * Kubernetes chain is opened per call, as the CLI opens it, so both processes see each other's writes at once; the
 * agent registry is in the controller's store (issue 20), read through the controller like everything else.
 */
import { ChainMirror } from "../chain/mirror.js";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { SigningKey } from "../core/crypto/ed25519.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { type ChainAudit, k8sStatePaths, openK8sChain } from "../kubernetes/audit.js";
import { storeAudit } from "../kubernetes/store-audit.js";
import type { Cluster } from "../kubernetes/cluster.js";
import { type Clock, realClock } from "../kit/clock.js";
import type { Result } from "../kit/result.js";
import { connect } from "../kubernetes/connect.js";
import { ControllerConnector, loadPlaintextOptIn, type PlaintextOptIn } from "../mesh/client/connector.js";
import { NodeClient } from "../mesh/client/node-client.js";
import { CONTROLLER_DB, MeshController } from "../mesh/controller/index.js";
import type { Connector } from "../mesh/transport/frames.js";
import { configuredContext } from "../up/kubernetes-target.js";

export type ClusterConnection = Result<Cluster>;

/** How the server reaches Kubernetes; tests inject the in-process fake cluster here. */
export interface KubernetesAccess {
  /** Whether a context is configured at all (no cluster is contacted). */
  configured(): { configured: true; context: string | null } | { configured: false; reason: string };
  connect(context: string | null): Promise<ClusterConnection>;
  readonly clock: Clock;
}

/** The kubeconfig the CLI uses (`$KUBECONFIG`, else `~/.kube/config`), read the same way `berth up` names it. */
export const kubeconfigAccess: KubernetesAccess = {
  configured: () => {
    const found = configuredContext(null);
    return found.ok ? { configured: true, context: found.value.context } : { configured: false, reason: found.error };
  },
  connect: (context) => connect(context),
  clock: realClock,
};

export interface ServerState {
  readonly dataDir: string;
  readonly version: string;
  readonly controller: MeshController;
  readonly key: SigningKey;
  /** Signs the read-only `status` calls the instance list makes straight to each node. */
  readonly client: NodeClient;
  /** The nodes `transport.json` opts in to plaintext (spec/mesh.md §4.11); announced by startServer. */
  readonly plaintext: PlaintextOptIn;
  readonly kubernetes: KubernetesAccess;
  readonly dbPaths: { readonly controller: string; readonly k8s: string };
  /**
   * Issue 20: when the controller's store is PostgreSQL, an in-memory copy of its chains (src/chain/mirror.ts) that
   * the audit routes, the event stream and the metrics read; null on SQLite (they read controller.db).
   */
  readonly controllerMirror: ChainMirror | null;
  /** Brings the mirror up to date (one sync at a time); a no-op on SQLite. */
  refreshChains(): Promise<void>;
  openK8sAudit(): ChainAudit;
  close(): Promise<void>;
}

export const controllerKeyPath = (dataDir: string) => join(dataDir, "keys", "controller.key");

/** The controller's key, created (0600) on first start like `berth up` does, refused when others can read it. */
export function loadOrCreateControllerKey(dataDir: string): SigningKey {
  const path = controllerKeyPath(dataDir);
  if (!existsSync(path)) saveKeyFile(path, generateSigningKey());
  return loadKeyFile(path);
}

export async function openServerState(o: {
  dataDir: string;
  version: string;
  database?: string;
  connector?: Connector;
  kubernetes?: KubernetesAccess;
}): Promise<ServerState> {
  const key = loadOrCreateControllerKey(o.dataDir);
  const plaintext = loadPlaintextOptIn(o.dataDir);
  const connector = o.connector ?? new ControllerConnector({ identity: key, plaintext });
  const controller = await MeshController.open({
    dataDir: o.dataDir,
    key,
    connector,
    ...(o.database ? { database: o.database } : {}),
  });
  const mirror = controller.store.engine.kind === "postgres" ? new ChainMirror(controller.store.engine) : null;
  let syncing: Promise<void> | null = null;
  const refreshChains = async (): Promise<void> => {
    if (mirror === null) return;
    // One sync at a time; a caller arriving during one waits for it and then runs its own (it may miss rows otherwise).
    while (syncing) await syncing.catch(() => undefined);
    syncing = mirror.sync().then(() => undefined);
    try {
      await syncing;
    } finally {
      syncing = null;
    }
  };
  await refreshChains();
  return {
    dataDir: o.dataDir,
    controllerMirror: mirror,
    refreshChains,
    version: o.version,
    controller,
    key,
    client: new NodeClient({ key, connector, onSend: controller.onSend }),
    plaintext,
    kubernetes: o.kubernetes ?? kubeconfigAccess,
    dbPaths: { controller: join(o.dataDir, CONTROLLER_DB), k8s: k8sStatePaths(o.dataDir).db },
    // Issue 20: on a PostgreSQL store the Kubernetes records are the store's (every server holds and verifies them).
    openK8sAudit: () =>
      controller.store.engine.kind === "postgres"
        ? storeAudit(controller.store.engine, controller.store.chain)
        : openK8sChain(o.dataDir),
    close: async () => {
      while (syncing) await syncing.catch(() => undefined);
      mirror?.close();
      await controller.close();
      if (connector instanceof ControllerConnector) connector.closeWarm();
    },
  };
}
