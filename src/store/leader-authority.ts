/**
 * What a controller's requests to nodes carry behind its key (issue 20; the node's rules are
 * src/core/mesh/epoch-fence.ts): the store's id and the leader epoch.
 *
 * - **store id**: 16 random bytes (32 hex) made once, with the store, in `berth_store`; never changed. `berth migrate`
 *   copies the row, so a controller moved to PostgreSQL is still the store its nodes are bound to. A copied
 *   `BERTH_HOME` keeps the id too (it *is* the same store, forked): `berth node rehome` is the way out then.
 * - **leader epoch**: the epoch of the store's leadership, `berth_leader.epoch`, taken from the same counter as the
 *   owner leases (src/store/lease.ts). It moves only when leadership moves (a `berth serve` becoming leader), never
 *   because a CLI process opened the store. Why not each process's own lease epoch: every CLI call takes a new
 *   lease, so a long `berth deploy` that began before a later `berth instances` would be refused `stale_epoch` on its
 *   next request (a reconcile's unload included). One store-wide epoch lets every process of one store coexist and
 *   still fences a deposed leader: a process that holds leadership sends its *own* epoch (src/store/leader.ts),
 *   never the one it re-reads, so once its successor has reached a node it is refused there.
 * - a store with no leader ever (SQLite without `berth serve`) has epoch 0.
 */
import { randomBytes } from "node:crypto";
import type { Authority } from "../core/protocol/messages.js";
import { type Db, ensureSchema, type WriteTx, withWriteTx } from "./sqlite.js";

export const AUTHORITY_SCHEMA_VERSION = 1;

/** Creates the identity and leader tables (idempotent), in the caller's write transaction. */
export function ensureAuthorityTables(tx: WriteTx, nowMs: number): void {
  ensureSchema(tx, "berth_authority", AUTHORITY_SCHEMA_VERSION, (from) => {
    if (from === 0) {
      tx.db.exec(`
        CREATE TABLE IF NOT EXISTS berth_store (id INTEGER PRIMARY KEY CHECK (id = 1), store_id TEXT NOT NULL, created_ms INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS berth_leader (id INTEGER PRIMARY KEY CHECK (id = 1), owner_id TEXT NOT NULL, epoch INTEGER NOT NULL,
                                                 renewed_ms INTEGER NOT NULL, ttl_ms INTEGER NOT NULL, address TEXT, host TEXT NOT NULL,
                                                 pid INTEGER NOT NULL, taken_ms INTEGER NOT NULL, released_ms INTEGER);
      `);
    }
  });
  tx.db.prepare("INSERT OR IGNORE INTO berth_store (id, store_id, created_ms) VALUES (1, ?, ?)").run(randomBytes(16).toString("hex"), nowMs);
}

/** The store's id (made by ensureAuthorityTables). */
export function readStoreId(db: Db): string {
  const row = db.prepare("SELECT store_id FROM berth_store WHERE id = 1").get() as { store_id: string } | undefined;
  if (!row) throw new Error("the controller store has no store id (berth_store is empty)");
  return row.store_id;
}

/** The epoch of the store's current or last leadership; 0 when no process was ever leader. */
export function readLeaderEpoch(db: Db): number {
  const row = db.prepare("SELECT epoch FROM berth_leader WHERE id = 1").get() as { epoch: number } | undefined;
  return row?.epoch ?? 0;
}

/** The authority of a process that is not the leader: the store's id and its leadership's epoch, read now. */
export class StoreAuthority {
  readonly storeId: string;

  constructor(
    private readonly db: Db,
    clock: () => number,
  ) {
    withWriteTx(db, (tx) => ensureAuthorityTables(tx, clock()));
    this.storeId = readStoreId(db);
  }

  current(): Authority {
    return { store_id: this.storeId, epoch: readLeaderEpoch(this.db) };
  }
}
