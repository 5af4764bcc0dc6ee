/**
 * What the node lease's argument needs the controller to remember (issue 16, docs/concepts.md "The node lease", rules
 * 4–5): for each node, the `issued_at_ms` of the last request any process of this controller *stamped* for it —
 * persisted before the request leaves, answered or not — and the `lease_ms` its last accepted facts advertised.
 * Every `NodeClient` the controller's processes build records through `record` (its `onSend` hook), so a CLI call, the
 * agents layer and `berth serve` all raise the same stamp; the maximum is kept, so concurrent writers cannot lower it.
 *
 * A request that provably never left (the connection could not be opened, or the TLS handshake proved another key:
 * the node client's `unreachable` and `no_answer {sent: false}`) cannot have renewed anything, so its stamp is taken
 * back: each stamp is a row, pending until its call ends, deleted when nothing was sent, kept when the request may
 * have reached the node (and then every lower row of that node is dominated and dropped). The last-sent stamp is the
 * maximum over the rows, pending ones included (a process killed mid-call leaves its row: counted, the safe way).
 * Without this, a tick that keeps trying a dead node would push the stamp forward for ever and its lease would never
 * be certainly over.
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

/** Told when the call ends: whether the request may have reached the node. */
export type SettleSend = (mayHaveArrived: boolean) => void;

export class SentStamps {
  constructor(private readonly db: Db) {
    // `last_sent_ms` of mesh_watch_nodes is what builds before the per-request rows wrote: kept as a floor.
    db.exec(`CREATE TABLE IF NOT EXISTS mesh_watch_nodes (
      node_id TEXT PRIMARY KEY, last_sent_ms INTEGER, lease_ms INTEGER);
      CREATE TABLE IF NOT EXISTS mesh_watch_sends (id INTEGER PRIMARY KEY AUTOINCREMENT, node_id TEXT NOT NULL,
        issued_at_ms INTEGER NOT NULL, settled INTEGER NOT NULL DEFAULT 0);
      CREATE INDEX IF NOT EXISTS mesh_watch_sends_node ON mesh_watch_sends (node_id, issued_at_ms)`);
  }

  /**
   * Before a request for `nodeId` leaves: its stamp is persisted (pending). The returned function settles it when
   * the call ends: taken back if the request provably never left, kept (dominating every lower stamp) otherwise.
   */
  record(nodeId: string, issuedAtMs: number): SettleSend {
    if (!/^[0-9a-f]{32}$/.test(nodeId)) return () => undefined; // a first describe to "*": no node id yet, nothing of ours runs there
    const id = Number(this.db.prepare("INSERT INTO mesh_watch_sends (node_id, issued_at_ms) VALUES (?, ?)").run(nodeId, issuedAtMs).lastInsertRowid);
    return (mayHaveArrived) => {
      try {
        if (!mayHaveArrived) {
          this.db.prepare("DELETE FROM mesh_watch_sends WHERE id = ?").run(id);
          return;
        }
        this.db.prepare("UPDATE mesh_watch_sends SET settled = 1 WHERE id = ?").run(id);
        this.db.prepare("DELETE FROM mesh_watch_sends WHERE node_id = ? AND issued_at_ms < ?").run(nodeId, issuedAtMs);
      } catch {
        // a closed store: the row stays pending, which counts it (the safe reading)
      }
    };
  }

  /** The lease a node advertised in facts this controller accepted (null: it runs without one). */
  recordLease(nodeId: string, leaseMs: number | null): void {
    this.db
      .prepare(`INSERT INTO mesh_watch_nodes (node_id, lease_ms) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET lease_ms = excluded.lease_ms`)
      .run(nodeId, leaseMs);
  }

  of(nodeId: string): NodeStamps {
    const row = this.db.prepare("SELECT node_id, last_sent_ms, lease_ms FROM mesh_watch_nodes WHERE node_id = ?").get(nodeId) as NodeStamps | undefined;
    const sent = (this.db.prepare("SELECT MAX(issued_at_ms) AS m FROM mesh_watch_sends WHERE node_id = ?").get(nodeId) as { m: number | null }).m;
    const floor = row?.last_sent_ms ?? null;
    const last = sent === null ? floor : floor === null ? sent : Math.max(sent, floor);
    return { node_id: nodeId, last_sent_ms: last, lease_ms: row?.lease_ms ?? null };
  }
}

/** The `lease_ms` member of a node's raw facts, as §6.1 allows it: a positive integer or null. */
export function leaseOfFacts(raw: Readonly<Record<string, unknown>>): number | null {
  const v = raw.lease_ms;
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : null;
}
