/**
 * The controller's state in SQLite (spec/mesh.md §14.1): targets, decisions, attempts and placements, next to the
 * controller's audit chain in the same file. Every operation is one `BEGIN IMMEDIATE` transaction holding the state
 * change and the chain event that records it (I7), so nothing is chained that did not commit and nothing commits
 * unchained. The interface speaks the domain (commitDecision, commitPlaced, commitSettle…), not SQL, so another
 * store can follow.
 *
 * Structural rules:
 * - a `DecisionId` exists only as the hash of a committed `workload.place {phase: "decision"}` event;
 * - the name reservation is a unique index: one placement per name, and one open (dispatching or unsettled)
 *   decision per name, whatever two callers race;
 * - an attempt is recorded `sending` before the request can leave (restart §14.2 step 4 depends on it).
 */
import type { Chain } from "../../chain/chain.js";
import type { EventDraft, SealedEvent } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Tier } from "../../core/governance/policy.js";
import { type Db, ensureSchema, type WriteTx, withWriteTx } from "../../store/sqlite.js";

declare const decisionIdBrand: unique symbol;
/** The hash of a committed decision event (§9.2 step 6); the only authority a mutating request may carry (I4). */
export type DecisionId = string & { readonly [decisionIdBrand]: true };

export const CONTROLLER_SCHEMA_VERSION = 2;

export type DecisionState = "dispatching" | "placed" | "unplaced" | "unsettled";
export type TierSource = "default" | "api" | "peers";

/** What the gate and the engine need to know about a placed workload, kept with its decision and placement. */
export interface WorkloadRecord {
  readonly kind: string;
  readonly network: "none" | "lan" | "egress";
  readonly secrets: boolean;
  readonly cpu_millis: number;
  readonly memory_bytes: number;
  readonly labels: readonly string[];
  readonly excludes: readonly string[];
  readonly package_id: string;
  readonly signer_keys: readonly string[];
  readonly file_hashes: readonly string[];
}

/** One placed instance as the placement engine weighs it (anti-affinity, spread, memory). */
export interface PlacementLoad {
  readonly node_id: string;
  readonly name: string;
  readonly labels: string[];
  readonly excludes: string[];
  readonly memory_bytes: number;
  readonly placed_at_ms: number;
}

/** §9.5 PlacementRecord, plus `pending` (§12 step 6). */
export interface PlacementRecord {
  readonly instance_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly decision_id: string;
  readonly variant: string;
  readonly route: "native" | "emulated";
  readonly package_id: string;
  readonly placed_ms: number;
  readonly adopted: boolean;
  readonly pending: string | null;
}

export interface UnsettledDecision {
  readonly decision_id: DecisionId;
  readonly name: string;
  readonly node_id: string;
  readonly variant: string;
  readonly package_id: string;
  readonly created_ms: number;
  readonly workload: WorkloadRecord;
}

export interface StoredTarget {
  readonly addr: string;
  readonly node_id: string | null;
  readonly key: string | null;
  readonly tier: Tier;
  readonly tier_source: TierSource;
  readonly learned_ms: number | null;
}

export interface AttemptRow {
  readonly decision_id: string;
  readonly n: number;
  readonly node_id: string;
  readonly variant: string;
  readonly state: "sending" | "done";
  readonly outcome: string | null;
  readonly code: string | null;
  readonly reason: string | null;
}

export interface DecisionRow {
  readonly id: string;
  readonly name: string;
  readonly state: DecisionState;
  readonly node_id: string | null;
  readonly variant: string | null;
  readonly package_id: string;
  readonly created_ms: number;
  readonly workload: WorkloadRecord;
}

/** How an attempt ends the dispatch, when it does (§9.4 step 5–6). */
export type AttemptEnding =
  | { readonly state: "unsettled"; readonly node_id: string; readonly variant: string }
  | { readonly state: "unplaced"; readonly exhausted: EventDraft }
  | null;

export class NameTaken extends Error {
  override name = "NameTaken";
}

interface PlacementSql {
  instance_id: string;
  name: string;
  node_id: string;
  decision_id: string;
  variant: string;
  route: string;
  package_id: string;
  placed_ms: number;
  adopted: number;
  pending: string | null;
}

interface DecisionSql {
  id: string;
  name: string;
  state: string;
  node_id: string | null;
  variant: string | null;
  package_id: string;
  created_ms: number;
  workload: string;
}

function placementOf(r: PlacementSql): PlacementRecord {
  return {
    instance_id: r.instance_id,
    name: r.name,
    node_id: r.node_id,
    decision_id: r.decision_id,
    variant: r.variant,
    route: r.route === "emulated" ? "emulated" : "native",
    package_id: r.package_id,
    placed_ms: r.placed_ms,
    adopted: r.adopted === 1,
    pending: r.pending,
  };
}

function decisionOf(r: DecisionSql): DecisionRow {
  return {
    id: r.id,
    name: r.name,
    state: r.state as DecisionState,
    node_id: r.node_id,
    variant: r.variant,
    package_id: r.package_id,
    created_ms: r.created_ms,
    workload: JSON.parse(r.workload) as WorkloadRecord,
  };
}

export class ControllerStore {
  constructor(
    readonly db: Db,
    readonly chain: Chain,
    private readonly clock: () => number,
  ) {
    withWriteTx(db, (tx) =>
      ensureSchema(tx, "mesh_controller", CONTROLLER_SCHEMA_VERSION, (from) => {
        if (from === 0) {
          tx.db.exec(`
            CREATE TABLE mesh_targets (addr TEXT PRIMARY KEY, node_id TEXT UNIQUE, key TEXT, tier TEXT NOT NULL,
                                       tier_source TEXT NOT NULL, learned_ms INTEGER);
            CREATE TABLE mesh_decisions (id TEXT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL, node_id TEXT,
                                         variant TEXT, package_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
                                         workload TEXT NOT NULL);
            CREATE UNIQUE INDEX mesh_decisions_open_name ON mesh_decisions (name)
              WHERE state IN ('dispatching', 'unsettled');
            CREATE TABLE mesh_attempts (decision_id TEXT NOT NULL, n INTEGER NOT NULL, node_id TEXT NOT NULL,
                                        variant TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT, code TEXT, reason TEXT,
                                        PRIMARY KEY (decision_id, n));
            CREATE TABLE mesh_placements (instance_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, node_id TEXT NOT NULL,
                                          decision_id TEXT NOT NULL UNIQUE, variant TEXT NOT NULL, route TEXT NOT NULL,
                                          package_id TEXT NOT NULL, placed_ms INTEGER NOT NULL, adopted INTEGER NOT NULL,
                                          pending TEXT, workload TEXT NOT NULL);
          `);
        }
        // v2: the decisions by state (unsettled(), the start-up scan of `dispatching`) without a table scan.
        if (from < 2) tx.db.exec("CREATE INDEX mesh_decisions_state ON mesh_decisions (state, created_ms, id)");
      }),
    );
  }

  private tx<T>(fn: (tx: WriteTx) => T): T {
    return withWriteTx(this.db, fn);
  }

  /**
   * The last `policy.load` this chain holds for each policy file, as `sha256:ok`: what the files were when someone
   * last recorded them (this process, an earlier CLI call, or the server beside it).
   */
  lastPolicyLoads(): Map<string, string> {
    const rows = this.db
      .prepare("SELECT payload FROM audit_event WHERE chain_id = ? AND source = 'trust' AND kind = 'policy.load' ORDER BY seq")
      .all(this.chain.chainId) as Array<{ payload: string }>;
    const last = new Map<string, string>();
    for (const row of rows) {
      const p = JSON.parse(row.payload) as { file?: unknown; sha256?: unknown; ok?: unknown };
      if (typeof p.file === "string") last.set(p.file, `${p.sha256 ?? null}:${p.ok === true}`);
    }
    return last;
  }

  /** Appends events without state (gate verdicts, key refusals, policy loads). */
  appendAll(drafts: readonly EventDraft[]): SealedEvent[] {
    if (drafts.length === 0) return [];
    return this.tx((tx) => drafts.map((d) => this.chain.append(tx, d)));
  }

  // ---- targets ----------------------------------------------------------------------------------------------

  targets(): StoredTarget[] {
    return (this.db.prepare("SELECT * FROM mesh_targets ORDER BY addr").all() as Array<StoredTarget & { tier: string; tier_source: string }>).map(
      (r) => ({ ...r, tier: r.tier as Tier, tier_source: r.tier_source as TierSource }),
    );
  }

  /** `peer.add`: the key learned (TOFU) or confirmed (listed key) for an address. */
  learnTarget(t: StoredTarget, event: EventDraft): void {
    this.tx((tx) => {
      tx.db
        .prepare(
          "INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, learned_ms) VALUES (?,?,?,?,?,?) ON CONFLICT(addr) DO UPDATE SET node_id = excluded.node_id, key = excluded.key, tier = excluded.tier, tier_source = excluded.tier_source, learned_ms = excluded.learned_ms",
        )
        .run(t.addr, t.node_id, t.key, t.tier, t.tier_source, t.learned_ms);
      this.chain.append(tx, event);
    });
  }

  /** `peer.tier`. */
  setTier(addr: string, tier: Tier, source: TierSource, event: EventDraft): void {
    this.tx((tx) => {
      tx.db.prepare("UPDATE mesh_targets SET tier = ?, tier_source = ? WHERE addr = ?").run(tier, source, addr);
      this.chain.append(tx, event);
    });
  }

  // ---- decisions and attempts -------------------------------------------------------------------------------

  /**
   * §9.2 step 6: the name check, the decision event and (unless dry run or unplaceable) the `dispatching` row, in
   * one transaction. Throws NameTaken after chaining the refusal.
   */
  commitDecision(args: {
    name: string;
    packageId: string;
    workload: WorkloadRecord;
    event: EventDraft;
    dispatch: boolean;
    refusal: (error: string) => EventDraft;
  }): DecisionId {
    let taken: string | null = null;
    const id = this.tx((tx) => {
      if (args.dispatch) {
        const placed = tx.db.prepare("SELECT 1 FROM mesh_placements WHERE name = ?").get(args.name);
        const open = tx.db.prepare("SELECT 1 FROM mesh_decisions WHERE name = ? AND state IN ('dispatching','unsettled')").get(args.name);
        if (placed || open) {
          taken = `name ${args.name} is already placed`;
          this.chain.append(tx, args.refusal(taken));
          return null;
        }
      }
      const event = this.chain.append(tx, args.event);
      if (args.dispatch) {
        tx.db
          .prepare("INSERT INTO mesh_decisions (id, name, state, node_id, variant, package_id, created_ms, workload) VALUES (?,?,?,?,?,?,?,?)")
          .run(event.hash, args.name, "dispatching", null, null, args.packageId, this.clock(), JSON.stringify(args.workload));
      }
      return event.hash as DecisionId;
    });
    if (id === null) throw new NameTaken(taken ?? `name ${args.name} is already placed`);
    return id;
  }

  /** §9.4 step 2: an internal marker, not chained. */
  beginAttempt(decisionId: DecisionId, n: number, nodeId: string, variant: string): void {
    this.tx((tx) => {
      tx.db.prepare("INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state) VALUES (?,?,?,?, 'sending')").run(decisionId, n, nodeId, variant);
    });
  }

  /** A non-placed attempt with its `workload.refuse {phase: "dispatch"}` event, and how it ends the dispatch. */
  commitAttempt(
    decisionId: DecisionId,
    n: number,
    result: { nodeId: string; variant: string; outcome: string; code: string | null; reason: string | null },
    event: EventDraft,
    ending: AttemptEnding,
  ): void {
    this.tx((tx) => {
      tx.db
        .prepare(
          "INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state, outcome, code, reason) VALUES (?,?,?,?, 'done', ?,?,?) ON CONFLICT(decision_id, n) DO UPDATE SET state = 'done', outcome = excluded.outcome, code = excluded.code, reason = excluded.reason",
        )
        .run(decisionId, n, result.nodeId, result.variant, result.outcome, result.code, result.reason);
      this.chain.append(tx, event);
      if (ending?.state === "unsettled") {
        tx.db.prepare("UPDATE mesh_decisions SET state = 'unsettled', node_id = ?, variant = ? WHERE id = ?").run(ending.node_id, ending.variant, decisionId);
      } else if (ending?.state === "unplaced") {
        this.chain.append(tx, ending.exhausted);
        tx.db.prepare("UPDATE mesh_decisions SET state = 'unplaced' WHERE id = ?").run(decisionId);
      }
    });
  }

  /** `placed`: attempt done, placement inserted, decision placed, `workload.place {phase: "placed"}`. */
  commitPlaced(decisionId: DecisionId, n: number, placement: PlacementRecord, workload: WorkloadRecord, event: EventDraft): void {
    this.tx((tx) => {
      tx.db.prepare("UPDATE mesh_attempts SET state = 'done', outcome = 'placed' WHERE decision_id = ? AND n = ?").run(decisionId, n);
      this.insertPlacement(tx, placement, workload);
      tx.db.prepare("UPDATE mesh_decisions SET state = 'placed', node_id = ?, variant = ? WHERE id = ?").run(placement.node_id, placement.variant, decisionId);
      this.chain.append(tx, event);
    });
  }

  private insertPlacement(tx: WriteTx, p: PlacementRecord, workload: WorkloadRecord): void {
    tx.db
      .prepare(
        "INSERT INTO mesh_placements (instance_id, name, node_id, decision_id, variant, route, package_id, placed_ms, adopted, pending, workload) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
      )
      .run(p.instance_id, p.name, p.node_id, p.decision_id, p.variant, p.route, p.package_id, p.placed_ms, p.adopted ? 1 : 0, p.pending, JSON.stringify(workload));
  }

  /** §10.2: adoption (if any) and the settled event, decision placed or unplaced, in one transaction. */
  commitSettle(decision: UnsettledDecision, adopted: { placement: PlacementRecord; event: EventDraft } | null, settled: EventDraft): void {
    this.tx((tx) => {
      const still = tx.db.prepare("SELECT state FROM mesh_decisions WHERE id = ?").get(decision.decision_id) as { state: string } | undefined;
      if (still?.state !== "unsettled") return;
      if (adopted) {
        this.insertPlacement(tx, adopted.placement, decision.workload);
        this.chain.append(tx, adopted.event);
      }
      this.chain.append(tx, settled);
      tx.db.prepare("UPDATE mesh_decisions SET state = ? WHERE id = ?").run(adopted ? "placed" : "unplaced", decision.decision_id);
    });
  }

  /** §14.2 step 4, for one decision left `dispatching` by a crash. */
  commitInterrupted(decisionId: string, state: "unplaced" | "unsettled", nodeId: string | null, variant: string | null, event: EventDraft): void {
    this.tx((tx) => {
      this.chain.append(tx, event);
      tx.db.prepare("UPDATE mesh_attempts SET state = 'done', outcome = 'indeterminate' WHERE decision_id = ? AND state = 'sending'").run(decisionId);
      tx.db.prepare("UPDATE mesh_decisions SET state = ?, node_id = COALESCE(?, node_id), variant = COALESCE(?, variant) WHERE id = ?").run(state, nodeId, variant, decisionId);
    });
  }

  // ---- instance verbs ---------------------------------------------------------------------------------------

  /** §12 step 4: the request event; its hash authorises the verb. */
  commitVerbRequest(event: EventDraft): DecisionId {
    return this.tx((tx) => this.chain.append(tx, event).hash as DecisionId);
  }

  /** §12 step 6: the outcome event, with the placement removed (unload) or marked pending (indeterminate). */
  commitVerbOutcome(instanceId: string, change: "remove" | { pending: string | null } | null, event: EventDraft): void {
    this.tx((tx) => {
      this.chain.append(tx, event);
      if (change === "remove") tx.db.prepare("DELETE FROM mesh_placements WHERE instance_id = ?").run(instanceId);
      else if (change !== null) tx.db.prepare("UPDATE mesh_placements SET pending = ? WHERE instance_id = ?").run(change.pending, instanceId);
    });
  }

  // ---- reads ------------------------------------------------------------------------------------------------

  placements(): PlacementRecord[] {
    return (this.db.prepare("SELECT * FROM mesh_placements ORDER BY placed_ms, instance_id").all() as PlacementSql[]).map(placementOf);
  }

  placement(instanceId: string): { record: PlacementRecord; workload: WorkloadRecord } | null {
    const row = this.db.prepare("SELECT * FROM mesh_placements WHERE instance_id = ?").get(instanceId) as (PlacementSql & { workload: string }) | undefined;
    return row ? { record: placementOf(row), workload: JSON.parse(row.workload) as WorkloadRecord } : null;
  }

  /** Instances already placed, for the engine's cluster state (§8.2). */
  /**
   * What the placement engine needs of every placed instance (its node, name, labels, excludes, memory), read with
   * SQLite's JSON functions instead of parsing every stored workload: every `place()` reads this, so its cost grows
   * with the number of placements.
   */
  placementLoads(): PlacementLoad[] {
    const rows = this.db
      .prepare(
        `SELECT node_id, name, placed_ms, json_extract(workload, '$.labels') AS labels, json_extract(workload, '$.excludes') AS excludes,
                json_extract(workload, '$.memory_bytes') AS memory_bytes FROM mesh_placements`,
      )
      .all() as Array<{ node_id: string; name: string; placed_ms: number; labels: string; excludes: string; memory_bytes: number }>;
    return rows.map((r) => ({
      node_id: r.node_id,
      name: r.name,
      placed_at_ms: r.placed_ms,
      labels: JSON.parse(r.labels) as string[],
      excludes: JSON.parse(r.excludes) as string[],
      memory_bytes: r.memory_bytes,
    }));
  }

  placedWorkloads(): Array<{ record: PlacementRecord; workload: WorkloadRecord }> {
    return (this.db.prepare("SELECT * FROM mesh_placements").all() as Array<PlacementSql & { workload: string }>).map((r) => ({
      record: placementOf(r),
      workload: JSON.parse(r.workload) as WorkloadRecord,
    }));
  }

  unsettled(): UnsettledDecision[] {
    return (this.db.prepare("SELECT * FROM mesh_decisions WHERE state = 'unsettled' ORDER BY created_ms, id").all() as DecisionSql[]).map((r) => ({
      decision_id: r.id as DecisionId,
      name: r.name,
      node_id: r.node_id ?? "",
      variant: r.variant ?? "",
      package_id: r.package_id,
      created_ms: r.created_ms,
      workload: JSON.parse(r.workload) as WorkloadRecord,
    }));
  }

  decision(id: string): DecisionRow | null {
    const row = this.db.prepare("SELECT * FROM mesh_decisions WHERE id = ?").get(id) as DecisionSql | undefined;
    return row ? decisionOf(row) : null;
  }

  decisionsIn(state: DecisionState): DecisionRow[] {
    return (this.db.prepare("SELECT * FROM mesh_decisions WHERE state = ? ORDER BY created_ms, id").all(state) as DecisionSql[]).map(decisionOf);
  }

  attempts(decisionId: string): AttemptRow[] {
    return this.db.prepare("SELECT * FROM mesh_attempts WHERE decision_id = ? ORDER BY n").all(decisionId) as AttemptRow[];
  }

  events(q: { kind?: string; phase?: string } = {}): JsonObject[] {
    return [...this.chain.find({ ...q })].map((e) => e.payload);
  }
}
