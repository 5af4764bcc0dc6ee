/**
 * What the node lease's argument needs the controller to remember (issue 16, docs/concepts.md "The node lease", rules
 * 4–5): for each node, the `issued_at_ms` of the last request any process of this controller *stamped* for it —
 * persisted before the request leaves, answered or not — and the `lease_ms` its last accepted facts advertised.
 * Every `NodeClient` the controller's processes build records through `record` (its `onSend` hook), so a CLI call, the
 * agents layer and `berth serve` all raise the same stamp; the maximum is kept, so concurrent writers cannot lower it.
 *
 * Not chained: a stamp is an observation of our own sends, and a tick must not grow the chain. Kept in its own table
 * (created here, idempotent) beside the controller store's, so the store's schema version is untouched until issue
 * 20's asynchronous store takes it in.
 */
import type { Db } from "../../store/sqlite.js";

export interface NodeStamps {
  readonly node_id: string;
  readonly last_sent_ms: number | null;
  readonly lease_ms: number | null;
}

export class SentStamps {
  constructor(private readonly db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS mesh_watch_nodes (
      node_id TEXT PRIMARY KEY, last_sent_ms INTEGER, lease_ms INTEGER)`);
  }

  /** Before a request for `nodeId` leaves: raise its stamp to `issuedAtMs` (never lower it). */
  record(nodeId: string, issuedAtMs: number): void {
    if (!/^[0-9a-f]{32}$/.test(nodeId)) return; // a first describe to "*": no node id yet, nothing of ours runs there
    this.db
      .prepare(
        `INSERT INTO mesh_watch_nodes (node_id, last_sent_ms) VALUES (?, ?)
         ON CONFLICT(node_id) DO UPDATE SET last_sent_ms = MAX(COALESCE(last_sent_ms, 0), excluded.last_sent_ms)`,
      )
      .run(nodeId, issuedAtMs);
  }

  /** The lease a node advertised in facts this controller accepted (null: it runs without one). */
  recordLease(nodeId: string, leaseMs: number | null): void {
    this.db
      .prepare(`INSERT INTO mesh_watch_nodes (node_id, lease_ms) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET lease_ms = excluded.lease_ms`)
      .run(nodeId, leaseMs);
  }

  of(nodeId: string): NodeStamps {
    const row = this.db.prepare("SELECT node_id, last_sent_ms, lease_ms FROM mesh_watch_nodes WHERE node_id = ?").get(nodeId) as NodeStamps | undefined;
    return row ?? { node_id: nodeId, last_sent_ms: null, lease_ms: null };
  }
}

/** The `lease_ms` member of a node's raw facts, as §6.1 allows it: a positive integer or null. */
export function leaseOfFacts(raw: Readonly<Record<string, unknown>>): number | null {
  const v = raw.lease_ms;
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : null;
}
