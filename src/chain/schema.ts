/**
 * The audit chain's tables (spec/audit-chain.md §7), living in the same file as the component's state.
 *
 * Version 2 (issue 19) drops v1's `UNIQUE (hash)`: an index keyed on a random hash dirtied about one B-tree leaf per
 * appended event (~130 of the ~160 pages a 100-event commit wrote). A duplicate hash stays impossible by
 * construction: the hash covers chain_id and seq (§5), which the primary key keeps unique, so two rows with one hash
 * would be a SHA-256 collision; and the verifier recomputes every hash (§8 check 8), so a row copied to another seq fails it.
 * A lookup by hash goes through the table that knows the event's seq (a decision's row) or scans one chain (§7).
 *
 * Version 3 (issue 38) adds `audit_tree`, each chain's Merkle tree written in the append's transaction (tree-store.ts).
 * The migration builds the tree of every stored chain once, in the migration's transaction (O(n) hashes, once); an
 * older berth refuses the v3 file, so no writer appends without extending the tree.
 */
import type { Tx } from "../store/engine.js";
import { ensureSchemaOn } from "../store/schema.js";
import { ensureSchema, type WriteTx } from "../store/sqlite.js";
import { ensureSummarySchema, ensureSummarySchemaOn } from "./summaries.js";
import { catchUpAllTrees, catchUpTreeOn, TREE_TABLE_POSTGRES, TREE_TABLE_SQLITE } from "./tree-store.js";

export const CHAIN_SCHEMA_VERSION = 3;

/** The events table (v2) under a given name: a v1 store's rows are copied into it (SQLite cannot drop a UNIQUE). */
const eventTableSqlite = (name: string) => `
        CREATE TABLE ${name} (chain_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,
                                  prev_hash TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                                  payload TEXT NOT NULL, payload_hash TEXT NOT NULL, hash TEXT NOT NULL,
                                  sig TEXT NOT NULL,
                                  phase TEXT GENERATED ALWAYS AS (json_extract(payload, '$.phase')) VIRTUAL,
                                  PRIMARY KEY (chain_id, seq)) WITHOUT ROWID;`;

/** The events table's index and append-only triggers; DROP TABLE takes them with the v1 table. */
const EVENT_EXTRAS_SQLITE = `
        CREATE INDEX audit_event_skp ON audit_event (chain_id, source, kind, phase);
        -- Defence in depth: the chain is append-only.
        CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
        CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
`;

const CHAIN_TABLES_SQLITE = `
        CREATE TABLE audit_chain (chain_id TEXT PRIMARY KEY, owner_key TEXT NOT NULL, role TEXT NOT NULL,
                                  own INTEGER NOT NULL, created_ms INTEGER NOT NULL);
        ${eventTableSqlite("audit_event")}
        ${EVENT_EXTRAS_SQLITE}
        CREATE TABLE audit_checkpoint (chain_id TEXT NOT NULL, seq INTEGER NOT NULL, head_hash TEXT NOT NULL,
                                       ts INTEGER NOT NULL, sig TEXT NOT NULL, PRIMARY KEY (chain_id, seq));
        CREATE TRIGGER audit_checkpoint_no_update BEFORE UPDATE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
        CREATE TRIGGER audit_checkpoint_no_delete BEFORE DELETE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
`;

/**
 * v1 → v2 on SQLite: every row copied, in key order, into the table without the hash index, inside the caller's
 * transaction (the rows are the same bytes, so the chain verifies as before). The copy is not an UPDATE or DELETE of
 * an event: the append-only triggers do not fire on DROP TABLE.
 */
const V2_REBUILD_SQLITE = `
        ${eventTableSqlite("audit_event_v2")}
        INSERT INTO audit_event_v2 (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig)
          SELECT chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig FROM audit_event ORDER BY chain_id, seq;
        DROP TABLE audit_event;
        ALTER TABLE audit_event_v2 RENAME TO audit_event;
        ${EVENT_EXTRAS_SQLITE}
`;

function chainMigrationSqlite(from: number): string {
  return from === 0
    ? CHAIN_TABLES_SQLITE + TREE_TABLE_SQLITE
    : from < 2
      ? V2_REBUILD_SQLITE + TREE_TABLE_SQLITE
      : from < 3
        ? TREE_TABLE_SQLITE
        : "";
}

export function ensureChainSchema(tx: WriteTx): void {
  ensureSchema(tx, "audit", CHAIN_SCHEMA_VERSION, (from) => {
    tx.db.exec(chainMigrationSqlite(from));
    if (from > 0) catchUpAllTrees(tx.db);
  });
  // Issue 35: the gate summaries decision events name (summaries.ts), a component of its own.
  ensureSummarySchema(tx);
}

/**
 * The same tables on a `StoreEngine` (the controller's store, on either engine), at the same schema version. On
 * PostgreSQL the append-only rule is a trigger function, `phase` a stored generated column over the payload text
 * (kept as text: the verifier checks the exact canonical bytes), and times are BIGINT milliseconds.
 */
export async function ensureChainSchemaOn(tx: Tx): Promise<void> {
  await ensureSchemaOn(tx, "audit", CHAIN_SCHEMA_VERSION, async (from) => {
    const buildTrees = async () => {
      for (const { chain_id } of await tx.all<{ chain_id: string }>(
        "SELECT chain_id FROM audit_chain ORDER BY chain_id",
      ))
        await catchUpTreeOn(tx, chain_id);
    };
    if (tx.kind === "sqlite") {
      await tx.exec(chainMigrationSqlite(from));
      if (from > 0) await buildTrees();
      return;
    }
    // v1 → v2: the constraint PostgreSQL named after the column (audit_event_hash_key) and its index go.
    if (from === 1) await tx.exec("ALTER TABLE audit_event DROP CONSTRAINT IF EXISTS audit_event_hash_key");
    // v2 → v3: the Merkle tree, built once for every chain stored.
    if (from !== 0) {
      if (from < 3) {
        await tx.exec(TREE_TABLE_POSTGRES);
        await buildTrees();
      }
      return;
    }
    await tx.exec(`
      CREATE TABLE audit_chain (chain_id TEXT PRIMARY KEY, owner_key TEXT NOT NULL, role TEXT NOT NULL,
                                own INTEGER NOT NULL, created_ms BIGINT NOT NULL);
      CREATE TABLE audit_event (chain_id TEXT NOT NULL, seq BIGINT NOT NULL, ts BIGINT NOT NULL,
                                prev_hash TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                                payload TEXT NOT NULL, payload_hash TEXT NOT NULL, hash TEXT NOT NULL,
                                sig TEXT NOT NULL,
                                phase TEXT GENERATED ALWAYS AS ((payload::jsonb) ->> 'phase') STORED,
                                PRIMARY KEY (chain_id, seq));
      CREATE INDEX audit_event_skp ON audit_event (chain_id, source, kind, phase);
      CREATE TABLE audit_checkpoint (chain_id TEXT NOT NULL, seq BIGINT NOT NULL, head_hash TEXT NOT NULL,
                                     ts BIGINT NOT NULL, sig TEXT NOT NULL, PRIMARY KEY (chain_id, seq));
      CREATE FUNCTION berth_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '% rows are append-only', TG_TABLE_NAME; END $$;
      CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE ON audit_event FOR EACH ROW EXECUTE FUNCTION berth_append_only();
      CREATE TRIGGER audit_checkpoint_append_only BEFORE UPDATE OR DELETE ON audit_checkpoint FOR EACH ROW EXECUTE FUNCTION berth_append_only();
      ${TREE_TABLE_POSTGRES}
    `);
  });
  // Issue 35: the gate summaries decision events name (summaries.ts), a component of its own.
  await ensureSummarySchemaOn(tx);
}
