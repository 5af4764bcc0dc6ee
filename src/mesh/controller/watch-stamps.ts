/**
 * What the node lease's argument needs the controller to remember (issue 16, docs/concepts.md "The node lease", rules
 * 4–5): for each node, the `issued_at_ms` of the last request any process of this controller *stamped* for it —
 * persisted before the request leaves, answered or not — and the `lease_ms` its last accepted facts advertised.
 * Every `NodeClient` the controller's processes build records through `record` (its `onSend` hook), so a CLI call, the
 * agents layer and `berth serve` all raise the same stamp; the maximum is kept, so concurrent writers cannot lower it.
 *
 * A request that provably never left (the connection could not be opened, or the TLS handshake proved another key:
 * the node client's `unreachable` and `no_answer {sent: false}`) cannot have renewed anything, so its stamp is taken
 * back (issue 16): each stamp is a row of `mesh_watch_sends`, pending until its call ends, deleted when nothing was
 * sent, kept when the request may have reached the node (and then every lower row of that node is dominated and
 * dropped). The last-sent stamp is the maximum over the rows, pending ones included (a process killed mid-call leaves
 * its row: counted, the safe way), and over `mesh_watch_nodes.last_sent_ms`, which builds before v6 wrote (a floor).
 * Without this, a tick that keeps trying a dead node pushes the stamp forward for ever, and its lease is never
 * certainly over.
 *
 * Not chained: a stamp is an observation of our own sends, and a tick must not grow the chain. Its tables are the
 * controller schema's (store-schema.ts); each record is one short write transaction of its own on the store's
 * engine, awaited by `NodeClient` before the request leaves.
 */
import { randomUUID } from "node:crypto";
import { judgeSend } from "../../core/mesh/silent-node.js";
import type { StoreEngine } from "../../store/engine.js";
import { GroupCommit, inRidingFlow } from "../../store/group-commit.js";
import type { SendHeld } from "../client/node-client.js";

export interface NodeStamps {
  readonly node_id: string;
  readonly last_sent_ms: number | null;
  readonly lease_ms: number | null;
}

const NODE_ID = /^[0-9a-f]{32}$/;

/** Told when the call ends: whether the request may have reached the node. */
export type SettleSend = (mayHaveArrived: boolean) => Promise<void>;

interface Stamp {
  readonly id: string;
  readonly nodeId: string;
  readonly issuedAtMs: number;
}

/** A stamp asked for, and (filled in by its group's transaction) why its request must not leave. */
interface StampRequest extends Stamp {
  held: string | null;
}

/**
 * Issue 37 (F5): the leased nodes that have not answered since some time (the only ones a stamp may be refused for),
 * read inside the stamps' own transaction: one small read per group, not one per request.
 */
const SILENT_LEASED = `SELECT t.node_id AS node_id, t.unreachable_since_ms AS unreachable_since_ms, w.lease_ms AS lease_ms
  FROM mesh_targets t JOIN mesh_watch_nodes w ON w.node_id = t.node_id
  WHERE t.unreachable_since_ms IS NOT NULL AND w.lease_ms IS NOT NULL`;

export class SentStamps {
  /**
   * Issue 35: the stamps of calls made together (a pass's statuses, a tick's describes) commit in one durable
   * transaction, and their settlements in one more; each request still leaves only after its own row is durable.
   * A call inside an API flow commits its stamp alone, in the flow's context: that write may carry the flow's
   * `api.call` record (riding-engine.ts), which must commit before the request leaves.
   */
  private readonly stamps: GroupCommit<StampRequest>;
  private readonly settlements: GroupCommit<Stamp & { readonly mayHaveArrived: boolean }>;
  private readonly leases: GroupCommit<{ readonly nodeId: string; readonly leaseMs: number | null }>;

  constructor(private readonly engine: StoreEngine) {
    const inFlow = inRidingFlow(engine);
    this.stamps = new GroupCommit(
      engine,
      async (tx, items) => {
        const silent = new Map(
          (
            await tx.all<{ node_id: string; unreachable_since_ms: number | string; lease_ms: number | string }>(
              SILENT_LEASED,
            )
          ).map((r) => [
            r.node_id,
            { unreachable_since_ms: Number(r.unreachable_since_ms), lease_ms: Number(r.lease_ms) },
          ]),
        );
        for (const s of items) {
          const record = silent.get(s.nodeId);
          const verdict = record === undefined ? null : judgeSend(record, s.issuedAtMs);
          s.held = verdict?.kind === "hold" ? verdict.why : null;
          if (s.held !== null) continue;
          await tx.run("INSERT INTO mesh_watch_sends (id, node_id, issued_at_ms) VALUES (?, ?, ?)", [
            s.id,
            s.nodeId,
            s.issuedAtMs,
          ]);
        }
      },
      undefined,
      inFlow,
    );
    this.settlements = new GroupCommit(
      engine,
      async (tx, items) => {
        for (const s of items) {
          if (!s.mayHaveArrived) {
            await tx.run("DELETE FROM mesh_watch_sends WHERE id = ?", [s.id]);
            continue;
          }
          await tx.run("UPDATE mesh_watch_sends SET settled = 1 WHERE id = ?", [s.id]);
          await tx.run("DELETE FROM mesh_watch_sends WHERE node_id = ? AND issued_at_ms < ?", [s.nodeId, s.issuedAtMs]);
        }
      },
      // Not durable: a power loss that forgets this leaves the row pending, which counts it (the safe reading).
      { durable: false },
      inFlow,
    );
    this.leases = new GroupCommit(
      engine,
      async (tx, items) => {
        for (const l of items) {
          await tx.run(
            "INSERT INTO mesh_watch_nodes (node_id, lease_ms) VALUES (?, ?) ON CONFLICT (node_id) DO UPDATE SET lease_ms = excluded.lease_ms",
            [l.nodeId, l.leaseMs],
          );
        }
      },
      undefined,
      inFlow,
    );
  }

  /**
   * Before a request for `nodeId` leaves: its stamp is persisted (pending). The returned function settles it: kept
   * (dominating every lower stamp) once the request has been handed to the connection, which the node client says
   * at once, while the node works (issue 19); taken back when the call ends with the request provably never sent.
   * Always a durable commit: it is the sync that makes a placement's earlier unsynced commits durable before its
   * request leaves (store.ts beginAttempt; docs/spec/mesh.md §14.1 "Durability").
   *
   * Issue 37 (F5): refused, nothing written, when the node is held (core/mesh/silent-node.ts `judgeSend`, judged in
   * the stamp's own transaction at the request's issue stamp): a leased node unanswered for half its lease gets no
   * request that could renew it, so the last stamp stops moving and rule 5's wait can end. `{ held }` says why.
   */
  async record(nodeId: string, issuedAtMs: number): Promise<SettleSend | SendHeld> {
    if (!NODE_ID.test(nodeId)) return async () => undefined; // a first describe to "*": no node id yet, nothing of ours runs there
    const stamp: StampRequest = { id: randomUUID(), nodeId, issuedAtMs, held: null };
    await this.stamps.add(stamp);
    if (stamp.held !== null) return { held: stamp.held };
    return async (mayHaveArrived) => {
      try {
        await this.settlements.add({ ...stamp, mayHaveArrived });
      } catch {
        // a closed store: the row stays pending, which counts it (the safe reading)
      }
    };
  }

  /** The lease a node advertised in facts this controller accepted (null: it runs without one). */
  async recordLease(nodeId: string, leaseMs: number | null): Promise<void> {
    // Issue 35: the describes of a tick record their leases in one group (each still committed before it returns).
    await this.leases.add({ nodeId, leaseMs });
  }

  /** Issue 37: every node whose accepted facts advertise a lease, with it (the lease keeper's list). */
  async leased(): Promise<Array<{ readonly node_id: string; readonly lease_ms: number }>> {
    const rows = await this.engine.read((q) =>
      q.all<{ node_id: string; lease_ms: number | string }>(
        "SELECT node_id, lease_ms FROM mesh_watch_nodes WHERE lease_ms IS NOT NULL",
      ),
    );
    return rows.map((r) => ({ node_id: r.node_id, lease_ms: Number(r.lease_ms) }));
  }

  async of(nodeId: string): Promise<NodeStamps> {
    const [row, sent] = await this.engine.read(
      async (q) =>
        [
          await q.get<NodeStamps>("SELECT node_id, last_sent_ms, lease_ms FROM mesh_watch_nodes WHERE node_id = ?", [
            nodeId,
          ]),
          await q.get<{ m: number | string | null }>(
            "SELECT MAX(issued_at_ms) AS m FROM mesh_watch_sends WHERE node_id = ?",
            [nodeId],
          ),
        ] as const,
    );
    const floor = row?.last_sent_ms == null ? null : Number(row.last_sent_ms);
    const top = sent?.m == null ? null : Number(sent.m);
    const last = top === null ? floor : floor === null ? top : Math.max(top, floor);
    return { node_id: nodeId, last_sent_ms: last, lease_ms: row?.lease_ms == null ? null : Number(row.lease_ms) };
  }
}

/** The `lease_ms` member of a node's raw facts, as §6.1 allows it: a positive integer or null. */
export function leaseOfFacts(raw: Readonly<Record<string, unknown>>): number | null {
  const v = raw.lease_ms;
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : null;
}
