/**
 * What the node lease's argument needs the controller to remember (issue 16, docs/concepts.md "The node lease", rules
 * 4–5): for each node, the `issued_at_ms` of the last request any process of this controller *stamped* for it —
 * persisted before the request leaves, answered or not — and the `lease_ms` its last accepted facts advertised.
 * Every `NodeClient` the controller's processes build records through `record` (its `onSend` hook), so a CLI call, the
 * agents layer and `berth serve` all raise the same stamp; the maximum is kept, so concurrent writers cannot lower it.
 *
 * Not chained: a stamp is an observation of our own sends, and a tick must not grow the chain. Its table,
 * `mesh_watch_nodes`, is the controller schema's (version 5, store-schema.ts); each record is one short write
 * transaction of its own on the store's engine, awaited by `NodeClient` before the request leaves.
 */
import type { StoreEngine } from "../../store/engine.js";

export interface NodeStamps {
  readonly node_id: string;
  readonly last_sent_ms: number | null;
  readonly lease_ms: number | null;
}

const NODE_ID = /^[0-9a-f]{32}$/;

export class SentStamps {
  constructor(private readonly engine: StoreEngine) {}

  /** Before a request for `nodeId` leaves: raise its stamp to `issuedAtMs` (never lower it). */
  async record(nodeId: string, issuedAtMs: number): Promise<void> {
    if (!NODE_ID.test(nodeId)) return; // a first describe to "*": no node id yet, nothing of ours runs there
    await this.engine.transaction((tx) =>
      tx.run(
        `INSERT INTO mesh_watch_nodes (node_id, last_sent_ms) VALUES (?, ?)
         ON CONFLICT (node_id) DO UPDATE SET last_sent_ms = CASE
           WHEN COALESCE(mesh_watch_nodes.last_sent_ms, 0) > excluded.last_sent_ms THEN mesh_watch_nodes.last_sent_ms
           ELSE excluded.last_sent_ms END`,
        [nodeId, issuedAtMs],
      ),
    );
  }

  /** The lease a node advertised in facts this controller accepted (null: it runs without one). */
  async recordLease(nodeId: string, leaseMs: number | null): Promise<void> {
    await this.engine.transaction((tx) =>
      tx.run("INSERT INTO mesh_watch_nodes (node_id, lease_ms) VALUES (?, ?) ON CONFLICT (node_id) DO UPDATE SET lease_ms = excluded.lease_ms", [nodeId, leaseMs]),
    );
  }

  async of(nodeId: string): Promise<NodeStamps> {
    const row = await this.engine.read((q) => q.get<NodeStamps>("SELECT node_id, last_sent_ms, lease_ms FROM mesh_watch_nodes WHERE node_id = ?", [nodeId]));
    return row ? { node_id: row.node_id, last_sent_ms: row.last_sent_ms === null ? null : Number(row.last_sent_ms), lease_ms: row.lease_ms === null ? null : Number(row.lease_ms) } : { node_id: nodeId, last_sent_ms: null, lease_ms: null };
  }
}

/** The `lease_ms` member of a node's raw facts, as §6.1 allows it: a positive integer or null. */
export function leaseOfFacts(raw: Readonly<Record<string, unknown>>): number | null {
  const v = raw.lease_ms;
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : null;
}
