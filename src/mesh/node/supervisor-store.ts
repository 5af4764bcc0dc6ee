/**
 * The supervisor's bookkeeping in node.db (issue 15): per instance, when its recent restarts happened (the budget's
 * window), how many restarts it had since the operator last started it (shown in status rows), and when a granted
 * restart is due (so a daemon restarted during a backoff resumes it). Its own schema component (`node_supervision`),
 * beside the node's tables; rows of instances that left are dropped at start.
 */
import type { Statement } from "better-sqlite3";
import { type Db, ensureSchema, type WriteTx, withWriteTx } from "../../store/sqlite.js";

export interface SupervisionRow {
  readonly instance_id: string;
  /** Restart times (ms) inside the budget's window, oldest first. */
  readonly restarts_ms: readonly number[];
  /** Restarts since the operator last started the instance (or it was placed). */
  readonly restart_count: number;
  /** A granted restart not yet done: when it is due, and the reason to chain when it happens. */
  readonly next_restart_ms: number | null;
  readonly reason: string | null;
}

const SCHEMA_VERSION = 1;

export class SupervisionStore {
  /** Prepared once: every status reads the counts (issue 19). */
  private countsStmt: Statement | undefined;

  constructor(private readonly db: Db) {
    withWriteTx(db, (tx) =>
      ensureSchema(tx, "node_supervision", SCHEMA_VERSION, (from) => {
        if (from === 0) {
          tx.db.exec(`CREATE TABLE node_supervision (
            instance_id TEXT PRIMARY KEY, restarts_ms TEXT NOT NULL DEFAULT '[]', restart_count INTEGER NOT NULL DEFAULT 0,
            next_restart_ms INTEGER, reason TEXT)`);
        }
      }),
    );
  }

  get(instanceId: string): SupervisionRow {
    const raw = this.db.prepare("SELECT * FROM node_supervision WHERE instance_id = ?").get(instanceId) as
      | (Omit<SupervisionRow, "restarts_ms"> & { restarts_ms: string })
      | undefined;
    if (!raw)
      return { instance_id: instanceId, restarts_ms: [], restart_count: 0, next_restart_ms: null, reason: null };
    return { ...raw, restarts_ms: JSON.parse(raw.restarts_ms) as number[] };
  }

  /** Restart counts of every supervised instance, for status rows. */
  counts(): Map<string, number> {
    this.countsStmt ??= this.db.prepare("SELECT instance_id, restart_count FROM node_supervision");
    const rows = this.countsStmt.all() as { instance_id: string; restart_count: number }[];
    return new Map(rows.map((r) => [r.instance_id, r.restart_count]));
  }

  put(tx: WriteTx, row: SupervisionRow): void {
    tx.db
      .prepare(
        `INSERT INTO node_supervision (instance_id, restarts_ms, restart_count, next_restart_ms, reason) VALUES (?,?,?,?,?)
         ON CONFLICT(instance_id) DO UPDATE SET restarts_ms = excluded.restarts_ms, restart_count = excluded.restart_count,
           next_restart_ms = excluded.next_restart_ms, reason = excluded.reason`,
      )
      .run(row.instance_id, JSON.stringify(row.restarts_ms), row.restart_count, row.next_restart_ms, row.reason);
  }

  /** An operator start: a fresh budget. */
  reset(tx: WriteTx, instanceId: string): void {
    tx.db.prepare("DELETE FROM node_supervision WHERE instance_id = ?").run(instanceId);
  }

  /** Drops the rows of instances the node no longer holds. */
  dropDeparted(): void {
    withWriteTx(this.db, (tx) =>
      tx.db
        .prepare("DELETE FROM node_supervision WHERE instance_id NOT IN (SELECT instance_id FROM node_instance)")
        .run(),
    );
  }
}
