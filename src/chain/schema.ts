/** The audit chain's tables (spec/audit-chain.md §7), living in the same file as the component's state. */
import type { Tx } from "../store/engine.js";
import { ensureSchemaOn } from "../store/schema.js";
import { ensureSchema, type WriteTx } from "../store/sqlite.js";

export const CHAIN_SCHEMA_VERSION = 1;

const CHAIN_TABLES_SQLITE = `
        CREATE TABLE audit_chain (chain_id TEXT PRIMARY KEY, owner_key TEXT NOT NULL, role TEXT NOT NULL,
                                  own INTEGER NOT NULL, created_ms INTEGER NOT NULL);
        CREATE TABLE audit_event (chain_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,
                                  prev_hash TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                                  payload TEXT NOT NULL, payload_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
                                  sig TEXT NOT NULL,
                                  phase TEXT GENERATED ALWAYS AS (json_extract(payload, '$.phase')) VIRTUAL,
                                  PRIMARY KEY (chain_id, seq)) WITHOUT ROWID;
        CREATE INDEX audit_event_skp ON audit_event (chain_id, source, kind, phase);
        CREATE TABLE audit_checkpoint (chain_id TEXT NOT NULL, seq INTEGER NOT NULL, head_hash TEXT NOT NULL,
                                       ts INTEGER NOT NULL, sig TEXT NOT NULL, PRIMARY KEY (chain_id, seq));
        -- Defence in depth: the chain is append-only.
        CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
        CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
        CREATE TRIGGER audit_checkpoint_no_update BEFORE UPDATE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
        CREATE TRIGGER audit_checkpoint_no_delete BEFORE DELETE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END;
`;

export function ensureChainSchema(tx: WriteTx): void {
  ensureSchema(tx, "audit", CHAIN_SCHEMA_VERSION, (from) => {
    if (from === 0) {
      tx.db.exec(CHAIN_TABLES_SQLITE);
    }
  });
}

/**
 * The same tables on a `StoreEngine` (the controller's store, on either engine), at the same schema version. On
 * PostgreSQL the append-only rule is a trigger function, `phase` a stored generated column over the payload text
 * (kept as text: the verifier checks the exact canonical bytes), and times are BIGINT milliseconds.
 */
export async function ensureChainSchemaOn(tx: Tx): Promise<void> {
  await ensureSchemaOn(tx, "audit", CHAIN_SCHEMA_VERSION, async (from) => {
    if (from !== 0) return;
    if (tx.kind === "sqlite") {
      await tx.exec(CHAIN_TABLES_SQLITE);
      return;
    }
    await tx.exec(`
      CREATE TABLE audit_chain (chain_id TEXT PRIMARY KEY, owner_key TEXT NOT NULL, role TEXT NOT NULL,
                                own INTEGER NOT NULL, created_ms BIGINT NOT NULL);
      CREATE TABLE audit_event (chain_id TEXT NOT NULL, seq BIGINT NOT NULL, ts BIGINT NOT NULL,
                                prev_hash TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                                payload TEXT NOT NULL, payload_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
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
    `);
  });
}
