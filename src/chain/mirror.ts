/**
 * A read-only copy of a `StoreEngine`'s audit chains in an in-memory SQLite database (issue 20), for the readers
 * written against the synchronous chain functions of chain.ts: `berth audit verify|tail|export|chains` and the API's
 * audit routes, event stream and metrics, when the controller's store is PostgreSQL.
 *
 * The chain is append-only (a trigger refuses UPDATE and DELETE on both engines), so a copy is brought up to date by
 * copying only the rows past what it holds: `sync()` reads, in one snapshot, the chains, every event with a seq above
 * the copy's head of its chain, and the checkpoints likewise. What a reader then verifies are the stored rows byte for
 * byte (payload text, hashes, signatures): the copy proves nothing by itself, the verifier does.
 */
import type { StoreEngine } from "../store/engine.js";
import { type Db, openDatabase, withWriteTx } from "../store/sqlite.js";
import { EVENT_COLUMNS, type EventRow, INSERT_EVENT } from "./chain.js";
import { ensureChainSchema } from "./schema.js";
import { INSERT_TREE_NODE } from "./tree-store.js";

interface ChainRow {
  chain_id: string;
  owner_key: string;
  role: string;
  own: number;
  created_ms: number;
}
interface TreeRow {
  chain_id: string;
  level: number;
  idx: number;
  hash: string;
}
interface CheckpointRow {
  chain_id: string;
  seq: number;
  head_hash: string;
  ts: number;
  sig: string;
}

export class ChainMirror {
  /** The copy; synchronous chain readers take it as their database. */
  readonly db: Db;

  constructor(private readonly engine: StoreEngine) {
    this.db = openDatabase(":memory:");
    withWriteTx(this.db, (tx) => ensureChainSchema(tx));
  }

  /** Copies what the store appended since the last sync; resolves to the number of events copied. */
  async sync(): Promise<number> {
    const heads = new Map<string, { events: number; checkpoints: number }>();
    for (const r of this.db
      .prepare(
        "SELECT chain_id, (SELECT COALESCE(MAX(seq), -1) FROM audit_event e WHERE e.chain_id = c.chain_id) AS events, (SELECT COALESCE(MAX(seq), -1) FROM audit_checkpoint k WHERE k.chain_id = c.chain_id) AS checkpoints FROM audit_chain c",
      )
      .all() as Array<{ chain_id: string; events: number; checkpoints: number }>) {
      heads.set(r.chain_id, { events: r.events, checkpoints: r.checkpoints });
    }
    const { chains, events, checkpoints, tree } = await this.engine.read(async (q) => {
      const table =
        q.kind === "sqlite"
          ? await q.get("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit_chain'")
          : await q.get(
              "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'audit_chain'",
            );
      if (!table)
        return {
          chains: [] as ChainRow[],
          events: [] as EventRow[],
          checkpoints: [] as CheckpointRow[],
          tree: [] as TreeRow[],
        };
      const chains = await q.all<ChainRow>("SELECT chain_id, owner_key, role, own, created_ms FROM audit_chain");
      const events: EventRow[] = [];
      const checkpoints: CheckpointRow[] = [];
      const tree: TreeRow[] = [];
      for (const c of chains) {
        const h = heads.get(c.chain_id) ?? { events: -1, checkpoints: -1 };
        const copied = await q.all<EventRow>(
          `SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? AND seq > ? ORDER BY seq`,
          [c.chain_id, h.events],
        );
        events.push(...copied);
        // Issue 38: the stored Merkle tree's rows over those events (each row's last leaf past the copy's head),
        // copied as stored: proofs read from the mirror are proofs from the store's tree.
        const top = copied.length > 0 ? Number((copied[copied.length - 1] as EventRow).seq) : h.events;
        tree.push(
          ...(await q.all<TreeRow>(
            "SELECT chain_id, level, idx, hash FROM audit_tree WHERE chain_id = ? AND ((idx + 1) << level) > ? AND ((idx + 1) << level) <= ?",
            [c.chain_id, h.events + 1, top + 1],
          )),
        );
        checkpoints.push(
          ...(await q.all<CheckpointRow>(
            "SELECT chain_id, seq, head_hash, ts, sig FROM audit_checkpoint WHERE chain_id = ? AND seq > ? ORDER BY seq",
            [c.chain_id, h.checkpoints],
          )),
        );
      }
      return { chains, events, checkpoints, tree };
    });
    withWriteTx(this.db, (tx) => {
      const chain = tx.db.prepare(
        "INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,?,?) ON CONFLICT (chain_id) DO NOTHING",
      );
      for (const c of chains) chain.run(c.chain_id, c.owner_key, c.role, Number(c.own), Number(c.created_ms));
      const event = tx.db.prepare(INSERT_EVENT);
      for (const e of events)
        event.run(
          e.chain_id,
          Number(e.seq),
          Number(e.ts),
          e.prev_hash,
          e.source,
          e.kind,
          e.payload,
          e.payload_hash,
          e.hash,
          e.sig,
        );
      const checkpoint = tx.db.prepare(
        "INSERT INTO audit_checkpoint (chain_id, seq, head_hash, ts, sig) VALUES (?,?,?,?,?)",
      );
      for (const k of checkpoints) checkpoint.run(k.chain_id, Number(k.seq), k.head_hash, Number(k.ts), k.sig);
      const node = tx.db.prepare(`${INSERT_TREE_NODE} ON CONFLICT DO NOTHING`);
      for (const t of tree) node.run(t.chain_id, Number(t.level), Number(t.idx), t.hash);
    });
    return events.length;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
