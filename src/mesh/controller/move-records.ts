/**
 * What moving agents needs the controller to remember (issue 16 "Node loss, without ever two copies"), in tables of
 * their own beside the controller store's (created here, idempotent, like watch-stamps.ts), so the store's schema
 * version is untouched until issue 20's asynchronous store takes them in:
 *
 * - `mesh_node_admin`: the operator's marks on a node, cordoned (no new placements) and forgotten (declared dead for
 *   good, with the reason);
 * - `mesh_orders`: per decision, the order as it can be rebuilt for a reschedule: inline env values (the operator
 *   wrote them into the order), `valueFrom` references instead of the values they named (re-read when the order is
 *   rebuilt), never a secret value. Only the store holds this, never the chain (the chain keeps env names only);
 * - `mesh_moved`: the placement records taken off their node (`rescheduled` off a dead leased node, `replaced` after a
 *   loss, `drained`, `forgotten`): the old copy the node may still hold, reconciled when its node answers, and the
 *   lineage's reschedule count. `successor` is the decision that placed the agent elsewhere, null until one did;
 * - `mesh_lineage`: per decision that re-placed a moved agent, how many moves its lineage has had (at most 5).
 *
 * Every state change is one transaction holding its chain event (I7), as in store.ts; the methods are `async` so
 * callers already `await` them when the store becomes asynchronous (issue 20).
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { MOVE_AUTHORITIES, type MoveAuthority } from "../../core/mesh/reschedule.js";
import { withWriteTx } from "../../store/sqlite.js";
import type { ControllerStore, PlacementRecord, WorkloadRecord } from "./store.js";

export { MOVE_AUTHORITIES, type MoveAuthority } from "../../core/mesh/reschedule.js";

export type EnvRef = { readonly file: string } | { readonly env: string };

/** The order as kept for a reschedule (see the module comment: no secret value, references instead). */
export interface StoredOrder {
  readonly package_id: string;
  readonly name: string;
  readonly config: { readonly mode: "service" | "once"; readonly args: readonly string[]; readonly env: Readonly<Record<string, string>> };
  readonly env_from: Readonly<Record<string, EnvRef>>;
  readonly pin: string | null;
  readonly prefer: readonly string[];
  readonly avoid: readonly string[];
  readonly allow_emulated: boolean;
  readonly strategy: string;
  readonly restart: string;
  readonly start: boolean;
  readonly agent: string | null;
  readonly intent: string | null;
}

export interface NodeAdmin {
  readonly node_id: string;
  readonly cordoned: boolean;
  readonly cordon_reason: string | null;
  readonly forgotten_ms: number | null;
  readonly forget_reason: string | null;
}

/** A placement record taken off its node; its old copy may still be there. */
export interface MovedRecord {
  readonly instance_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly decision_id: string;
  readonly package_id: string;
  readonly authority: MoveAuthority;
  readonly moved_ms: number;
  /** The lineage's moves including this one. */
  readonly moves: number;
  /** The decision that placed the agent elsewhere (or took its name), null while nothing has. */
  readonly successor: string | null;
}

interface MovedSql {
  instance_id: string;
  name: string;
  node_id: string;
  decision_id: string;
  package_id: string;
  authority: string;
  moved_ms: number;
  moves: number;
  successor: string | null;
}

const movedOf = (r: MovedSql): MovedRecord => ({ ...r, authority: (MOVE_AUTHORITIES as readonly string[]).includes(r.authority) ? (r.authority as MoveAuthority) : "forget" });

export type TransferResult = { readonly ok: true; readonly moved: MovedRecord } | { readonly ok: false; readonly reason: string };

export class MoveRecords {
  constructor(
    private readonly store: ControllerStore,
    private readonly clock: () => number,
  ) {
    store.db.exec(`
      CREATE TABLE IF NOT EXISTS mesh_node_admin (node_id TEXT PRIMARY KEY, cordoned INTEGER NOT NULL DEFAULT 0, cordon_reason TEXT,
                                                  forgotten_ms INTEGER, forget_reason TEXT);
      CREATE TABLE IF NOT EXISTS mesh_orders (decision_id TEXT PRIMARY KEY, order_json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS mesh_moved (instance_id TEXT PRIMARY KEY, name TEXT NOT NULL, node_id TEXT NOT NULL,
                                             decision_id TEXT NOT NULL, package_id TEXT NOT NULL, authority TEXT NOT NULL,
                                             moved_ms INTEGER NOT NULL, moves INTEGER NOT NULL, successor TEXT, workload TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS mesh_lineage (decision_id TEXT PRIMARY KEY, moves INTEGER NOT NULL, from_instance TEXT NOT NULL);
    `);
  }

  // ---- node marks ---------------------------------------------------------------------------------------------

  async admin(nodeId: string): Promise<NodeAdmin> {
    const row = this.store.db.prepare("SELECT * FROM mesh_node_admin WHERE node_id = ?").get(nodeId) as
      | { node_id: string; cordoned: number; cordon_reason: string | null; forgotten_ms: number | null; forget_reason: string | null }
      | undefined;
    return row ? { ...row, cordoned: row.cordoned === 1 } : { node_id: nodeId, cordoned: false, cordon_reason: null, forgotten_ms: null, forget_reason: null };
  }

  /** Node ids the engine must not place on (core/placement `cordoned`). */
  async cordoned(): Promise<string[]> {
    return (this.store.db.prepare("SELECT node_id FROM mesh_node_admin WHERE cordoned = 1 ORDER BY node_id").all() as Array<{ node_id: string }>).map((r) => r.node_id);
  }

  /** Sets or clears the cordon, chained with who and why; false when it already was so (nothing chained). */
  async setCordon(nodeId: string, cordoned: boolean, reason: string | null, event: EventDraft): Promise<boolean> {
    return withWriteTx(this.store.db, (tx) => {
      const row = tx.db.prepare("SELECT cordoned FROM mesh_node_admin WHERE node_id = ?").get(nodeId) as { cordoned: number } | undefined;
      if ((row?.cordoned === 1) === cordoned) return false;
      tx.db
        .prepare("INSERT INTO mesh_node_admin (node_id, cordoned, cordon_reason) VALUES (?,?,?) ON CONFLICT(node_id) DO UPDATE SET cordoned = excluded.cordoned, cordon_reason = excluded.cordon_reason")
        .run(nodeId, cordoned ? 1 : 0, reason);
      this.store.chain.append(tx, event);
      return true;
    });
  }

  /**
   * `berth node forget`: in one transaction, the node marked forgotten and cordoned, every placement on it moved to
   * `mesh_moved` (authority `forget`), every unsettled decision for it released (`unplaced`), and their events.
   * Returns what was released.
   */
  async forget(
    nodeId: string,
    reason: string,
    events: { forgotten: (released: { instances: string[]; decisions: string[] }) => EventDraft; decision: (decisionId: string, name: string) => EventDraft },
  ): Promise<{ instances: MovedRecord[]; decisions: string[] }> {
    return withWriteTx(this.store.db, (tx) => {
      const now = this.clock();
      tx.db
        .prepare(
          "INSERT INTO mesh_node_admin (node_id, cordoned, cordon_reason, forgotten_ms, forget_reason) VALUES (?,1,?,?,?) ON CONFLICT(node_id) DO UPDATE SET cordoned = 1, cordon_reason = excluded.cordon_reason, forgotten_ms = excluded.forgotten_ms, forget_reason = excluded.forget_reason",
        )
        .run(nodeId, `forgotten: ${reason}`, now, reason);
      const placed = tx.db.prepare("SELECT instance_id FROM mesh_placements WHERE node_id = ? ORDER BY placed_ms, instance_id").all(nodeId) as Array<{ instance_id: string }>;
      const moved: MovedRecord[] = [];
      for (const { instance_id } of placed) {
        const m = this.transferIn(tx.db, instance_id, "forget", now);
        if (m) moved.push(m);
      }
      const unsettled = tx.db.prepare("SELECT id, name FROM mesh_decisions WHERE node_id = ? AND state = 'unsettled' ORDER BY created_ms, id").all(nodeId) as Array<{ id: string; name: string }>;
      for (const d of unsettled) {
        this.store.forgetDecision(tx, d.id);
        this.store.chain.append(tx, events.decision(d.id, d.name));
      }
      this.store.chain.append(tx, events.forgotten({ instances: moved.map((m) => m.instance_id), decisions: unsettled.map((d) => d.id) }));
      return { instances: moved, decisions: unsettled.map((d) => d.id) };
    });
  }

  // ---- stored orders ------------------------------------------------------------------------------------------

  async saveOrder(decisionId: string, order: StoredOrder): Promise<void> {
    this.store.db.prepare("INSERT INTO mesh_orders (decision_id, order_json) VALUES (?, ?) ON CONFLICT(decision_id) DO NOTHING").run(decisionId, JSON.stringify(order));
  }

  async order(decisionId: string): Promise<StoredOrder | null> {
    const row = this.store.db.prepare("SELECT order_json FROM mesh_orders WHERE decision_id = ?").get(decisionId) as { order_json: string } | undefined;
    return row ? (JSON.parse(row.order_json) as StoredOrder) : null;
  }

  // ---- moving ----------------------------------------------------------------------------------------------------

  /** How many moves the lineage of the placement made by `decisionId` has had (0: it was never moved). */
  async movesOf(decisionId: string): Promise<number> {
    return (this.store.db.prepare("SELECT moves FROM mesh_lineage WHERE decision_id = ?").get(decisionId) as { moves: number } | undefined)?.moves ?? 0;
  }

  /**
   * Takes a placement off its node (its name becomes free for the re-placement), with `event` in the same
   * transaction. Refused when the record changed since the caller judged it: gone, on another node, or pending.
   */
  async transferOut(placement: Pick<PlacementRecord, "instance_id" | "node_id" | "decision_id">, authority: MoveAuthority, event: EventDraft): Promise<TransferResult> {
    return withWriteTx(this.store.db, (tx) => {
      const row = tx.db.prepare("SELECT node_id, decision_id, pending FROM mesh_placements WHERE instance_id = ?").get(placement.instance_id) as
        | { node_id: string; decision_id: string; pending: string | null }
        | undefined;
      if (!row) return { ok: false as const, reason: "the placement record is gone (released or moved by another process)" };
      if (row.node_id !== placement.node_id || row.decision_id !== placement.decision_id) return { ok: false as const, reason: "the placement record changed since it was judged" };
      if (row.pending !== null) return { ok: false as const, reason: `a ${row.pending} of it is pending (an answer was lost)` };
      const moved = this.transferIn(tx.db, placement.instance_id, authority, this.clock());
      if (!moved) return { ok: false as const, reason: "the placement record is gone" };
      this.store.chain.append(tx, event);
      return { ok: true as const, moved };
    });
  }

  private transferIn(db: ControllerStore["db"], instanceId: string, authority: MoveAuthority, now: number): MovedRecord | null {
    const p = db.prepare("SELECT instance_id, name, node_id, decision_id, package_id, workload FROM mesh_placements WHERE instance_id = ?").get(instanceId) as
      | { instance_id: string; name: string; node_id: string; decision_id: string; package_id: string; workload: string }
      | undefined;
    if (!p) return null;
    const before = (db.prepare("SELECT moves FROM mesh_lineage WHERE decision_id = ?").get(p.decision_id) as { moves: number } | undefined)?.moves ?? 0;
    const moves = before + 1;
    db.prepare(
      "INSERT INTO mesh_moved (instance_id, name, node_id, decision_id, package_id, authority, moved_ms, moves, successor, workload) VALUES (?,?,?,?,?,?,?,?,NULL,?) ON CONFLICT(instance_id) DO UPDATE SET authority = excluded.authority, moved_ms = excluded.moved_ms, successor = NULL",
    ).run(p.instance_id, p.name, p.node_id, p.decision_id, p.package_id, authority, now, moves, p.workload);
    db.prepare("DELETE FROM mesh_placements WHERE instance_id = ?").run(instanceId);
    return { instance_id: p.instance_id, name: p.name, node_id: p.node_id, decision_id: p.decision_id, package_id: p.package_id, authority, moved_ms: now, moves, successor: null };
  }

  /** The agent was placed elsewhere (or its name was taken meanwhile) by `decisionId`; the lineage count follows it. */
  async recordSuccessor(instanceId: string, decisionId: string, placed: boolean, event: EventDraft | null): Promise<void> {
    withWriteTx(this.store.db, (tx) => {
      const m = tx.db.prepare("SELECT moves FROM mesh_moved WHERE instance_id = ?").get(instanceId) as { moves: number } | undefined;
      if (!m) return;
      tx.db.prepare("UPDATE mesh_moved SET successor = ? WHERE instance_id = ?").run(decisionId, instanceId);
      if (placed) tx.db.prepare("INSERT INTO mesh_lineage (decision_id, moves, from_instance) VALUES (?,?,?) ON CONFLICT(decision_id) DO NOTHING").run(decisionId, m.moves, instanceId);
      if (event) this.store.chain.append(tx, event);
    });
  }

  async moved(): Promise<MovedRecord[]> {
    return (this.store.db.prepare("SELECT instance_id, name, node_id, decision_id, package_id, authority, moved_ms, moves, successor FROM mesh_moved ORDER BY moved_ms, instance_id").all() as MovedSql[]).map(movedOf);
  }

  async movedRecord(instanceId: string): Promise<{ record: MovedRecord; workload: WorkloadRecord } | null> {
    const row = this.store.db.prepare("SELECT * FROM mesh_moved WHERE instance_id = ?").get(instanceId) as (MovedSql & { workload: string }) | undefined;
    return row ? { record: movedOf(row), workload: JSON.parse(row.workload) as WorkloadRecord } : null;
  }

  /** The old copy is gone from its node (unloaded, or the node answered it holds nothing): the record ends. */
  async dropMoved(instanceId: string, event: EventDraft | null): Promise<void> {
    withWriteTx(this.store.db, (tx) => {
      tx.db.prepare("DELETE FROM mesh_moved WHERE instance_id = ?").run(instanceId);
      if (event) this.store.chain.append(tx, event);
    });
  }

  /** Who holds `name` now, if anyone: a placement or an open decision (the reschedule's successor check). */
  async nameHolder(name: string): Promise<{ decision_id: string; placed: boolean } | null> {
    const placed = this.store.db.prepare("SELECT decision_id FROM mesh_placements WHERE name = ?").get(name) as { decision_id: string } | undefined;
    if (placed) return { decision_id: placed.decision_id, placed: true };
    const open = this.store.db.prepare("SELECT id FROM mesh_decisions WHERE name = ? AND state IN ('dispatching','reconciling','unsettled','settling')").get(name) as { id: string } | undefined;
    return open ? { decision_id: open.id, placed: false } : null;
  }

  /** A request event whose hash authorises the call it precedes (I4). */
  async requestEvent(draft: EventDraft): Promise<string> {
    const [sealed] = this.store.appendAll([draft]);
    if (!sealed) throw new Error("the request event was not chained");
    return sealed.hash;
  }

  /** Appends events without state (the loop's lifecycle acts, refusals). */
  async append(drafts: readonly EventDraft[]): Promise<void> {
    this.store.appendAll(drafts);
  }
}

/** The payload part every move event shares (spec/mesh.md §15 `workload.migrate`). */
export function migratePayload(m: MovedRecord, to: { node: string; instance: string } | null, decisionId: string | null, reason: string): JsonObject {
  return { workload: m.name, from_node: m.node_id, from_instance: m.instance_id, to_node: to?.node ?? null, to_instance: to?.instance ?? null, decision_id: decisionId, reason };
}
