/**
 * The Kubernetes audit of a CLI verb (`berth deploy` of a Kubernetes agent, `berth agent stop`, `berth k8s …`):
 * with the controller store on PostgreSQL (`--database` / $BERTH_DATABASE_URL, issue 20) the records are events of
 * source `k8s` on that store's chain, signed by the controller key, like the server's and the keeper's
 * (src/kubernetes/store-audit.ts); otherwise the home's own `k8s.db`, as always.
 *
 * Why SQLite keeps `k8s.db`: one machine's home is already one truth there, existing homes keep one place for their
 * Kubernetes history (no chain that starts halfway in another file), and `berth k8s` keeps working on a home with no
 * controller key. The shared store is the only case where a per-home file loses the record.
 */
import { EngineChain } from "../chain/engine-chain.js";
import { type ChainAudit, openK8sChain } from "../kubernetes/audit.js";
import { storeAudit } from "../kubernetes/store-audit.js";
import { loadKeyFile } from "../keys/key-file.js";
import { openStoreEngine, parseDatabaseAddress } from "../store/open.js";
import { ensureControllerKey } from "./controller.js";
import { databaseOf } from "./database.js";
import { defaultPaths } from "./paths.js";

export interface K8sAuditPlace {
  /** The home whose `k8s.db` holds the records on a SQLite store. */
  readonly home: string;
  /** `--database`, if the verb has it; else $BERTH_DATABASE_URL (database.ts). */
  readonly database?: string | undefined;
  /** The controller key that signs the store's chain; default `$BERTH_HOME/keys/controller.key`. */
  readonly keyFile?: string | undefined;
}

/** Opens the chain this verb records in, for the verb's duration; `close()` ends what it opened. */
export async function openCliK8sAudit(place: K8sAuditPlace): Promise<ChainAudit> {
  const database = databaseOf(place.database);
  if (database === undefined || parseDatabaseAddress(database, "").kind !== "postgres") return openK8sChain(place.home);
  const keyFile = place.keyFile ?? defaultPaths.controllerKey();
  // As `berth deploy` makes it for the registry: the default key on first use, never a --key-file the user named.
  if (keyFile === defaultPaths.controllerKey()) ensureControllerKey(keyFile);
  const key = loadKeyFile(keyFile);
  const engine = await openStoreEngine({ database, sqlitePath: "" });
  try {
    // The start-up check (§7) and the owner key: a key that is not the store's chain owner is refused here.
    const chain = await EngineChain.open(engine, key, "controller");
    return storeAudit(engine, chain, () => engine.close());
  } catch (error) {
    await engine.close();
    throw error;
  }
}
