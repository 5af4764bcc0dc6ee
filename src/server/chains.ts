/**
 * Reading the chains this server holds — the controller's (`controller.db`) and the Kubernetes backend's (`k8s.db`) —
 * through a read-only connection opened for the call, so events another process (the CLI) committed are always seen.
 */
import { existsSync } from "node:fs";
import { listChains } from "../chain/chain.js";
import { chainHead } from "../chain/read.js";
import { type Db, openDatabase } from "../store/sqlite.js";
import type { ServerState } from "./state.js";

export type ChainName = "controller" | "k8s";
export const CHAIN_NAMES: readonly ChainName[] = ["controller", "k8s"];

export interface OpenChain {
  readonly db: Db;
  readonly chainId: string;
  readonly ownerKey: string;
  readonly role: string;
  readonly events: number;
  close(): void;
}

/** The database's own chain, or null when the component has not written one yet. */
export function openChainReader(state: ServerState, name: ChainName): OpenChain | null {
  if (name === "controller" && state.controllerMirror) {
    // PostgreSQL (issue 20): the mirror the caller refreshed (state.refreshChains); it stays open with the server.
    const db = state.controllerMirror.db;
    const own = listChains(db).find((c) => c.own === 1);
    return own
      ? {
          db,
          chainId: own.chain_id,
          ownerKey: own.owner_key,
          role: own.role,
          events: own.events,
          close: () => undefined,
        }
      : null;
  }
  const path = state.dbPaths[name];
  if (!existsSync(path)) return null;
  const db = openDatabase(path, { readonly: true });
  try {
    const own = listChains(db).find((c) => c.own === 1);
    if (!own) {
      db.close();
      return null;
    }
    return {
      db,
      chainId: own.chain_id,
      ownerKey: own.owner_key,
      role: own.role,
      events: own.events,
      close: () => db.close(),
    };
  } catch {
    // No audit tables yet.
    db.close();
    return null;
  }
}

/** Why a chain is not there yet, for a 404: on a PostgreSQL store the Kubernetes records are the controller chain's. */
export function absentChainHint(state: ServerState, name: ChainName): string {
  if (name === "controller") return "it is created when the controller first starts";
  return state.controllerMirror
    ? "on a PostgreSQL store the Kubernetes records are in the controller chain (source k8s); a k8s.db here is only one written before the move"
    : "it is created by the first Kubernetes deploy";
}

export function headSeq(db: Db, chainId: string): number {
  return chainHead(db, chainId)?.seq ?? -1;
}
