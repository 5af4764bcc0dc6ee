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
import type { Query, StoreEngine, Tx } from "./engine.js";
import { ensureSchemaOn } from "./schema.js";

export const AUTHORITY_SCHEMA_VERSION = 1;

/** Creates the identity and leader tables (idempotent), in the caller's write transaction; the same on both engines. */
export async function ensureAuthorityTables(tx: Tx, nowMs: number): Promise<void> {
  const int = tx.kind === "postgres" ? "BIGINT" : "INTEGER";
  await ensureSchemaOn(tx, "berth_authority", AUTHORITY_SCHEMA_VERSION, async (from) => {
    if (from === 0) {
      await tx.exec(`
        CREATE TABLE IF NOT EXISTS berth_store (id INTEGER PRIMARY KEY CHECK (id = 1), store_id TEXT NOT NULL, created_ms ${int} NOT NULL);
        CREATE TABLE IF NOT EXISTS berth_leader (id INTEGER PRIMARY KEY CHECK (id = 1), owner_id TEXT NOT NULL, epoch ${int} NOT NULL,
                                                 renewed_ms ${int} NOT NULL, ttl_ms ${int} NOT NULL, address TEXT, host TEXT NOT NULL,
                                                 pid INTEGER NOT NULL, taken_ms ${int} NOT NULL, released_ms ${int});
      `);
    }
  });
  await tx.run("INSERT INTO berth_store (id, store_id, created_ms) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING", [
    randomBytes(16).toString("hex"),
    nowMs,
  ]);
}

/** The store's id (made by ensureAuthorityTables). */
export async function readStoreId(q: Query): Promise<string> {
  const row = await q.get<{ store_id: string }>("SELECT store_id FROM berth_store WHERE id = 1");
  if (!row) throw new Error("the controller store has no store id (berth_store is empty)");
  return row.store_id;
}

/** The epoch of the store's current or last leadership; 0 when no process was ever leader. */
export async function readLeaderEpoch(q: Query): Promise<number> {
  const row = await q.get<{ epoch: number }>("SELECT epoch FROM berth_leader WHERE id = 1");
  return row === undefined ? 0 : Number(row.epoch);
}

/** The authority of a process that is not the leader: the store's id and its leadership's epoch, read now. */
export class StoreAuthority {
  private constructor(
    private readonly engine: StoreEngine,
    readonly storeId: string,
  ) {}

  static async open(engine: StoreEngine, clock: () => number): Promise<StoreAuthority> {
    await engine.transaction((tx) => ensureAuthorityTables(tx, clock()));
    return new StoreAuthority(engine, await engine.read(readStoreId));
  }

  async current(): Promise<Authority> {
    return { store_id: this.storeId, epoch: await this.engine.read(readLeaderEpoch) };
  }
}
