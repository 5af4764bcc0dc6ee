/** The audit chain's tables (spec/audit-chain.md §7), living in the same file as the component's state. */
import { ensureSchema, type WriteTx } from "../store/sqlite.js";

export const CHAIN_SCHEMA_VERSION = 1;

export function ensureChainSchema(tx: WriteTx): void {
  ensureSchema(tx, "audit", CHAIN_SCHEMA_VERSION, (from) => {
    if (from === 0) {
      tx.db.exec(`
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
      `);
    }
  });
}
