/**
 * The small lookups of a stored chain that the layers above make on a SQLite connection (a home's file, or the
 * in-memory mirror of a PostgreSQL store, mirror.ts): the CLI's audit verbs, the API's audit routes and `berth up`'s
 * backup, and `berth migrate`'s source. With chain.ts's readers (`findEvents`, `listChains`, `storedCheckpoints`,
 * `exportChainLines`) and engine-chain.ts's on a `Query` (`ownChainOn`, `tipOn`, `eventPayloadsOn`, `eventPayloadOn`)
 * they are the only SQL over the audit tables outside src/chain's own writers, so a column or a table changes in one
 * folder.
 */
import type { ChainRole, SealedEvent } from "../core/chain/event.js";
import type { Db } from "../store/sqlite.js";
import { type EventRow, rowToEvent } from "./chain.js";

/** Whether the database has the audit tables at all (a file that predates its first chain has none). */
export function holdsChainTables(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_chain'").get() !== undefined;
}

/** The tip of a chain (its last event's seq and hash), or undefined for a chain with no event. */
export function chainHead(db: Db, chainId: string): { seq: number; hash: string } | undefined {
  return db.prepare("SELECT seq, hash FROM audit_event WHERE chain_id = ? ORDER BY seq DESC LIMIT 1").get(chainId) as
    | { seq: number; hash: string }
    | undefined;
}

export function eventCount(db: Db, chainId: string): number {
  return (db.prepare("SELECT COUNT(*) AS n FROM audit_event WHERE chain_id = ?").get(chainId) as { n: number }).n;
}

/** The key a chain names as its owner, or undefined when the database holds no such chain. */
export function ownerKeyOf(db: Db, chainId: string): string | undefined {
  return (
    db.prepare("SELECT owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as { owner_key: string } | undefined
  )?.owner_key;
}

/** The chain this database's component writes (the newest, after a reseal), or undefined when it has none. */
export function ownChain(db: Db): { chain_id: string; owner_key: string; role: ChainRole } | undefined {
  return db
    .prepare("SELECT chain_id, owner_key, role FROM audit_chain WHERE own = 1 ORDER BY created_ms DESC LIMIT 1")
    .get() as { chain_id: string; owner_key: string; role: ChainRole } | undefined;
}

/** The last `n` events of a chain, oldest first. */
export function tailEvents(db: Db, chainId: string, n: number): SealedEvent[] {
  const rows = db
    .prepare("SELECT * FROM audit_event WHERE chain_id = ? ORDER BY seq DESC LIMIT ?")
    .all(chainId, n) as EventRow[];
  return rows.reverse().map(rowToEvent);
}

/** Up to `limit` events appended after `afterSeq`, oldest first (`audit tail -f`, `berth events -f`). */
export function eventsAfter(db: Db, chainId: string, afterSeq: number, limit: number): SealedEvent[] {
  const rows = db
    .prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq > ? ORDER BY seq LIMIT ?")
    .all(chainId, afterSeq, limit) as EventRow[];
  return rows.map(rowToEvent);
}
