/**
 * What moving agents needs the controller to remember (issue 16 "Node loss, without ever two copies"), in the
 * controller schema's v6 tables (store-schema.ts), on either engine:
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
 * Every state change is one transaction holding its chain event (I7), as in store.ts.
 *
 * (About 420 lines, one concept: the v6 tables of moving agents, each method one transaction with its event.)
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { MOVE_AUTHORITIES, type MoveAuthority } from "../../core/mesh/reschedule.js";
import { err, ok, type Result } from "../../kit/result.js";
import type { ValueFromRef } from "../../kit/value-from.js";
import type { Query, Tx } from "../../store/engine.js";
import type { ControllerStore, PlacementRecord, WorkloadRecord } from "./store.js";
import { deletePlacement } from "./store-placements.js";

export type { MoveAuthority } from "../../core/mesh/reschedule.js";

/** A `valueFrom` reference as the deploy read it (kit/value-from.ts); a reschedule reads it again. */
export type EnvRef = ValueFromRef;

/** The order as kept for a reschedule (see the module comment: no secret value, references instead). */
export interface StoredOrder {
  readonly package_id: string;
  readonly name: string;
  readonly config: {
    readonly mode: "service" | "once";
    readonly args: readonly string[];
    readonly env: Readonly<Record<string, string>>;
  };
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
  /**
   * Issue 37 (campaign seeds 11246, 11525): the spec the deploy of `agent` came from, so a placement whose deploy
   * ended before the registry took its record can have that record back (store-agents.ts `recoverAgentRecords`).
   * Absent for a raw `berth place` and for orders kept before this build.
   */
  readonly agent_spec?: AgentSpecSource;
}

/** Where a deploy's spec came from and its text, as the registry keeps it (core/agents/registry.ts `AgentRecord`). */
export interface AgentSpecSource {
  readonly spec_path: string;
  readonly spec_text: string;
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

const movedOf = (r: MovedSql): MovedRecord => ({
  ...r,
  moved_ms: Number(r.moved_ms),
  moves: Number(r.moves),
  authority: (MOVE_AUTHORITIES as readonly string[]).includes(r.authority) ? (r.authority as MoveAuthority) : "forget",
});

/** Every node the operator marked, on any query (the read-only view of a home reads it too: stored-reads.ts). */
export async function adminsOn(q: Query): Promise<NodeAdmin[]> {
  const rows = await q.all<{
    node_id: string;
    cordoned: number;
    cordon_reason: string | null;
    forgotten_ms: number | string | null;
    forget_reason: string | null;
  }>("SELECT * FROM mesh_node_admin ORDER BY node_id");
  return rows.map((row) => ({
    ...row,
    cordoned: Number(row.cordoned) === 1,
    forgotten_ms: row.forgotten_ms === null ? null : Number(row.forgotten_ms),
  }));
}

/** Every moved record, on any query. */
export async function movedOn(q: Query): Promise<MovedRecord[]> {
  return (
    await q.all<MovedSql>(
      "SELECT instance_id, name, node_id, decision_id, package_id, authority, moved_ms, moves, successor FROM mesh_moved ORDER BY moved_ms, instance_id",
    )
  ).map(movedOf);
}

/** The record of the copy taken off its node, or why it was not taken. */
export type TransferResult = Result<MovedRecord>;

export class MoveRecords {
  constructor(
    private readonly store: ControllerStore,
    private readonly clock: () => number,
  ) {}

  private tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.store.engine.transaction(fn);
  }

  private read<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    return this.store.engine.read(fn);
  }

  // ---- node marks ---------------------------------------------------------------------------------------------

  async admin(nodeId: string): Promise<NodeAdmin> {
    const row = await this.read((q) =>
      q.get<{
        node_id: string;
        cordoned: number;
        cordon_reason: string | null;
        forgotten_ms: number | string | null;
        forget_reason: string | null;
      }>("SELECT * FROM mesh_node_admin WHERE node_id = ?", [nodeId]),
    );
    return row
      ? {
          ...row,
          cordoned: Number(row.cordoned) === 1,
          forgotten_ms: row.forgotten_ms === null ? null : Number(row.forgotten_ms),
        }
      : { node_id: nodeId, cordoned: false, cordon_reason: null, forgotten_ms: null, forget_reason: null };
  }

  /** Every node the operator marked (cordoned, forgotten, or once either), for the lists people read. */
  async admins(): Promise<NodeAdmin[]> {
    return this.read((q) => adminsOn(q));
  }

  /** Node ids the engine must not place on (core/placement `cordoned`). */
  async cordoned(): Promise<string[]> {
    return (
      await this.read((q) =>
        q.all<{ node_id: string }>("SELECT node_id FROM mesh_node_admin WHERE cordoned = 1 ORDER BY node_id"),
      )
    ).map((r) => r.node_id);
  }

  /** Sets or clears the cordon, chained with who and why; false when it already was so (nothing chained). */
  async setCordon(nodeId: string, cordoned: boolean, reason: string | null, event: EventDraft): Promise<boolean> {
    return this.tx(async (tx) => {
      const row = await tx.get<{ cordoned: number }>("SELECT cordoned FROM mesh_node_admin WHERE node_id = ?", [
        nodeId,
      ]);
      if ((Number(row?.cordoned ?? 0) === 1) === cordoned) return false;
      await tx.run(
        "INSERT INTO mesh_node_admin (node_id, cordoned, cordon_reason) VALUES (?,?,?) ON CONFLICT (node_id) DO UPDATE SET cordoned = excluded.cordoned, cordon_reason = excluded.cordon_reason",
        [nodeId, cordoned ? 1 : 0, reason],
      );
      await this.store.chain.append(tx, event);
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
    events: {
      forgotten: (released: { instances: string[]; decisions: string[] }) => EventDraft;
      decision: (decisionId: string, name: string) => EventDraft;
    },
  ): Promise<{ instances: MovedRecord[]; decisions: string[] }> {
    return this.tx(async (tx) => {
      const now = this.clock();
      await tx.run(
        "INSERT INTO mesh_node_admin (node_id, cordoned, cordon_reason, forgotten_ms, forget_reason) VALUES (?,1,?,?,?) ON CONFLICT (node_id) DO UPDATE SET cordoned = 1, cordon_reason = excluded.cordon_reason, forgotten_ms = excluded.forgotten_ms, forget_reason = excluded.forget_reason",
        [nodeId, `forgotten: ${reason}`, now, reason],
      );
      const placed = await tx.all<{ instance_id: string }>(
        "SELECT instance_id FROM mesh_placements WHERE node_id = ? ORDER BY placed_ms, instance_id",
        [nodeId],
      );
      const moved: MovedRecord[] = [];
      for (const { instance_id } of placed) {
        const m = await this.transferIn(tx, instance_id, "forget", now);
        if (m) moved.push(m);
      }
      const unsettled = await tx.all<{ id: string; name: string }>(
        "SELECT id, name FROM mesh_decisions WHERE node_id = ? AND state = 'unsettled' ORDER BY created_ms, id",
        [nodeId],
      );
      for (const d of unsettled) {
        await this.store.forgetDecision(tx, d.id);
        await this.store.chain.append(tx, events.decision(d.id, d.name));
      }
      await this.store.chain.append(
        tx,
        events.forgotten({ instances: moved.map((m) => m.instance_id), decisions: unsettled.map((d) => d.id) }),
      );
      return { instances: moved, decisions: unsettled.map((d) => d.id) };
    });
  }

  // ---- stored orders ------------------------------------------------------------------------------------------

  /** In the transaction of its dispatching decision (store.ts commitDecision `withDispatching`). */
  async saveOrderIn(tx: Tx, decisionId: string, order: StoredOrder): Promise<void> {
    await tx.run(
      "INSERT INTO mesh_orders (decision_id, order_json) VALUES (?, ?) ON CONFLICT (decision_id) DO NOTHING",
      [decisionId, JSON.stringify(order)],
    );
  }

  async order(decisionId: string): Promise<StoredOrder | null> {
    const row = await this.read((q) =>
      q.get<{ order_json: string }>("SELECT order_json FROM mesh_orders WHERE decision_id = ?", [decisionId]),
    );
    return row ? (JSON.parse(row.order_json) as StoredOrder) : null;
  }

  // ---- moving ----------------------------------------------------------------------------------------------------

  /** Issue 35: `movesOf` for every lineage at once (a decision absent from the map was never moved). */
  async allMoves(): Promise<Map<string, number>> {
    const rows = await this.read((q) =>
      q.all<{ decision_id: string; moves: number }>("SELECT decision_id, moves FROM mesh_lineage"),
    );
    return new Map(rows.map((r) => [r.decision_id, Number(r.moves)]));
  }

  /** How many moves the lineage of the placement made by `decisionId` has had (0: it was never moved). */
  async movesOf(decisionId: string): Promise<number> {
    return Number(
      (
        await this.read((q) =>
          q.get<{ moves: number }>("SELECT moves FROM mesh_lineage WHERE decision_id = ?", [decisionId]),
        )
      )?.moves ?? 0,
    );
  }

  /**
   * Takes a placement off its node (its name becomes free for the re-placement), with `event` in the same
   * transaction. Refused when the record changed since the caller judged it: gone, on another node, or pending.
   */
  async transferOut(
    placement: Pick<PlacementRecord, "instance_id" | "node_id" | "decision_id">,
    authority: MoveAuthority,
    event: EventDraft,
  ): Promise<TransferResult> {
    return this.tx(async (tx) => {
      const row = await tx.get<{ node_id: string; decision_id: string; pending: string | null }>(
        "SELECT node_id, decision_id, pending FROM mesh_placements WHERE instance_id = ?",
        [placement.instance_id],
      );
      if (!row) return err("the placement record is gone (released or moved by another process)");
      if (row.node_id !== placement.node_id || row.decision_id !== placement.decision_id)
        return err("the placement record changed since it was judged");
      if (row.pending !== null) return err(`a ${row.pending} of it is pending (an answer was lost)`);
      const moved = await this.transferIn(tx, placement.instance_id, authority, this.clock());
      if (!moved) return err("the placement record is gone");
      await this.store.chain.append(tx, event);
      return ok(moved);
    });
  }

  private async transferIn(
    tx: Tx,
    instanceId: string,
    authority: MoveAuthority,
    now: number,
  ): Promise<MovedRecord | null> {
    const p = await tx.get<{
      instance_id: string;
      name: string;
      node_id: string;
      decision_id: string;
      package_id: string;
      workload: string;
    }>(
      "SELECT instance_id, name, node_id, decision_id, package_id, workload FROM mesh_placements WHERE instance_id = ?",
      [instanceId],
    );
    if (!p) return null;
    const before = Number(
      (await tx.get<{ moves: number }>("SELECT moves FROM mesh_lineage WHERE decision_id = ?", [p.decision_id]))
        ?.moves ?? 0,
    );
    const moves = before + 1;
    await tx.run(
      "INSERT INTO mesh_moved (instance_id, name, node_id, decision_id, package_id, authority, moved_ms, moves, successor, workload) VALUES (?,?,?,?,?,?,?,?,NULL,?) ON CONFLICT (instance_id) DO UPDATE SET authority = excluded.authority, moved_ms = excluded.moved_ms, successor = NULL",
      [p.instance_id, p.name, p.node_id, p.decision_id, p.package_id, authority, now, moves, p.workload],
    );
    await deletePlacement(tx, instanceId);
    return {
      instance_id: p.instance_id,
      name: p.name,
      node_id: p.node_id,
      decision_id: p.decision_id,
      package_id: p.package_id,
      authority,
      moved_ms: now,
      moves,
      successor: null,
    };
  }

  /** The agent was placed elsewhere (or its name was taken meanwhile) by `decisionId`; the lineage count follows it. */
  async recordSuccessor(
    instanceId: string,
    decisionId: string,
    placed: boolean,
    event: EventDraft | null,
  ): Promise<void> {
    await this.tx(async (tx) => {
      const m = await tx.get<{ moves: number }>("SELECT moves FROM mesh_moved WHERE instance_id = ?", [instanceId]);
      if (!m) return;
      await tx.run("UPDATE mesh_moved SET successor = ? WHERE instance_id = ?", [decisionId, instanceId]);
      if (placed)
        await tx.run(
          "INSERT INTO mesh_lineage (decision_id, moves, from_instance) VALUES (?,?,?) ON CONFLICT (decision_id) DO NOTHING",
          [decisionId, Number(m.moves), instanceId],
        );
      if (event) await this.store.chain.append(tx, event);
    });
  }

  async moved(): Promise<MovedRecord[]> {
    return this.read((q) => movedOn(q));
  }

  async movedRecord(instanceId: string): Promise<{ record: MovedRecord; workload: WorkloadRecord } | null> {
    const row = await this.read((q) =>
      q.get<MovedSql & { workload: string }>("SELECT * FROM mesh_moved WHERE instance_id = ?", [instanceId]),
    );
    return row ? { record: movedOf(row), workload: JSON.parse(row.workload) as WorkloadRecord } : null;
  }

  /** The old copy is gone from its node (unloaded, or the node answered it holds nothing): the record ends. */
  async dropMoved(instanceId: string, event: EventDraft | null): Promise<void> {
    await this.tx(async (tx) => {
      await tx.run("DELETE FROM mesh_moved WHERE instance_id = ?", [instanceId]);
      if (event) await this.store.chain.append(tx, event);
    });
  }

  /** Who holds `name` now, if anyone: a placement or an open decision (the reschedule's successor check). */
  async nameHolder(name: string): Promise<{ decision_id: string; placed: boolean } | null> {
    return this.read(async (q) => {
      const placed = await q.get<{ decision_id: string }>("SELECT decision_id FROM mesh_placements WHERE name = ?", [
        name,
      ]);
      if (placed) return { decision_id: placed.decision_id, placed: true };
      const open = await q.get<{ id: string }>(
        "SELECT id FROM mesh_decisions WHERE name = ? AND state IN ('dispatching','reconciling','unsettled','settling')",
        [name],
      );
      return open ? { decision_id: open.id, placed: false } : null;
    });
  }

  /** A request event whose hash authorises the call it precedes (I4). */
  async requestEvent(draft: EventDraft): Promise<string> {
    const [sealed] = await this.store.appendAll([draft]);
    if (!sealed) throw new Error("the request event was not chained");
    return sealed.hash;
  }

  /** Appends events without state (the loop's lifecycle acts, refusals). */
  async append(drafts: readonly EventDraft[]): Promise<void> {
    await this.store.appendAll(drafts);
  }
}

/** The payload part every move event shares (spec/mesh.md §15 `workload.migrate`). */
export function migratePayload(
  m: MovedRecord,
  to: { node: string; instance: string } | null,
  decisionId: string | null,
  reason: string,
): JsonObject {
  return {
    workload: m.name,
    from_node: m.node_id,
    from_instance: m.instance_id,
    to_node: to?.node ?? null,
    to_instance: to?.instance ?? null,
    decision_id: decisionId,
    reason,
  };
}
