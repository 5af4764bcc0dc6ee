/**
 * The Kubernetes audit on the controller store's chain (issue 20): when the controller's store is PostgreSQL, every
 * `k8s.*` and `agent.deploy` record of the controller's backend — `berth serve`, the CLI verbs, the keeper — is an
 * event of source `k8s` on that store's chain (spec/audit-chain.md §6: a backend running inside the controller writes
 * into the controller's chain), signed by the controller key. Every server on the store then holds the whole record
 * and `berth audit verify` checks it there; a per-home `k8s.db` would leave it on whichever machine made it.
 *
 * Each record is one transaction of its own (`engine.transaction` + `EngineChain.append`, as `ControllerStore.appendAll`
 * does), committed before the promise resolves: an intent is durable in the shared store before the API call it
 * announces. A failed append rejects (`AuditWriteError`, audit.ts): never swallowed here.
 */
import type { EngineChain } from "../chain/engine-chain.js";
import type { StoreEngine } from "../store/engine.js";
import { ChainAudit } from "./audit.js";

/** `onClose` closes what the caller opened for this audit alone (a CLI verb's engine); a server's store stays open. */
export function storeAudit(
  engine: StoreEngine,
  chain: EngineChain,
  onClose: () => void | Promise<void> = () => {},
): ChainAudit {
  return new ChainAudit("controller", (draft) => engine.transaction((tx) => chain.append(tx, draft)), onClose);
}
