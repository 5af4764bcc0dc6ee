/**
 * Why one file of over 400 lines: every method here is one transaction over the same five tables and the chain, and
 * the rules below hold only because they are checked in the same place as the SQL that writes them. Issue 20 makes
 * this interface asynchronous for a second engine (PostgreSQL); that change splits the file along its seams (schema
 * and migrations, decisions and attempts, placements, target liveness) behind the domain interface, once, for both.
 *
 * The controller's state in SQLite (spec/mesh.md §14.1): targets, decisions, attempts and placements, next to the
 * controller's audit chain in the same file. Every operation is one `BEGIN IMMEDIATE` transaction holding the state
 * change and the chain event that records it (I7), so nothing is chained that did not commit and nothing commits
 * unchained. The interface speaks the domain (commitDecision, commitPlaced, commitSettle…), not SQL, so another
 * store can follow.
 *
 * Structural rules:
 * - a `DecisionId` exists only as the hash of a committed `workload.place {phase: "decision"}` event;
 * - the name reservation is a unique index: one placement per name, and one open (dispatching, reconciling,
 *   unsettled or settling) decision per name, whatever two callers race;
 * - an attempt is recorded `sending` before the request can leave (restart §14.2 step 4 depends on it);
 * - every store is opened under an owner lease (src/store/lease.ts, README "Ownership"); every decision records the
 *   owner and epoch that made or claimed it, and every change of its state is one move of the pure machine of
 *   src/core/mesh/decision-state.ts, checked inside the transaction that writes it: an illegal one throws
 *   `IllegalTransition` (a typed refusal) instead of corrupting the state (issue 21, case 2).
 *
 * Over 400 lines because it is the one place SQL about decisions lives (the interface a PostgreSQL store will
 * implement, issue 20): splitting it would spread the transactions that must stay together.
 */
import type { Chain } from "../../chain/chain.js";
import type { EventDraft, SealedEvent } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Tier } from "../../core/governance/policy.js";
import { type DecisionActor, type DecisionEvent, type DecisionState, isDecisionState, OPEN_STATES, OWNED_STATES, transition } from "../../core/mesh/decision-state.js";
import type { OwnerLease, OwnerVerdict } from "../../core/mesh/owner-liveness.js";
import { ensureLeaseTables, judgeLease, readLease, releaseLease, renewLease, takeLease } from "../../store/lease.js";
import { type Db, ensureSchema, type WriteTx, withWriteTx } from "../../store/sqlite.js";

export type { DecisionState } from "../../core/mesh/decision-state.js";

declare const decisionIdBrand: unique symbol;
/** The hash of a committed decision event (§9.2 step 6); the only authority a mutating request may carry (I4). */
export type DecisionId = string & { readonly [decisionIdBrand]: true };

export const CONTROLLER_SCHEMA_VERSION = 4;

const OPEN_SQL = OPEN_STATES.map((s) => `'${s}'`).join(",");
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

/**
 * What the store keeps of a target's last contacts (issue 16): every process that talks to a node records the
 * outcome here, so every process judges the same truth (`judgeNodeLiveness`). Not chained: an observation is not a
 * decision, and a tick that changes nothing must add nothing to the chain.
 */
export interface StoredContact {
  readonly addr: string;
  readonly last_ok_ms: number | null;
  readonly unreachable_since_ms: number | null;
  readonly last_error: string | null;
  /** The name in the node's last accepted facts, so a fresh process can show it before describing. */
  readonly name: string | null;
  /** When the outcome recorded last was observed; an older outcome arriving later is dropped. */
  readonly contact_ms: number | null;
}

/** One contact's outcome: a valid answer (a signed refusal included) or none. */
export type ContactOutcome =
  | { readonly ok: true; readonly at_ms: number; readonly error: string | null; readonly name: string | null }
  | { readonly ok: false; readonly at_ms: number; readonly error: string };

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
  readonly owner_id: string | null;
  readonly epoch: number | null;
}

/** How an attempt ends the dispatch, when it does (§9.4 step 5–6). */
export type AttemptEnding =
  | { readonly state: "unsettled"; readonly node_id: string; readonly variant: string }
  | { readonly state: "unplaced"; readonly exhausted: EventDraft }
  | null;

/** Who holds a name a new decision wanted: a placement, or an open decision (with its owner when one is recorded). */
export type NameHolder =
  | { readonly kind: "placement"; readonly instance_id: string; readonly node_id: string; readonly decision_id: string }
  | {
      readonly kind: "decision";
      readonly decision_id: string;
      readonly state: DecisionState;
      readonly since_ms: number;
      readonly owner: { readonly pid: number; readonly host: string; readonly epoch: number; readonly alive: boolean } | null;
    };

export class NameTaken extends Error {
  override name = "NameTaken";
  constructor(
    message: string,
    readonly holder: NameHolder | null = null,
  ) {
    super(message);
  }
}

/** The store refused a change of a decision's state that its machine does not allow (decision-state.ts). */
export class IllegalTransition extends Error {
  override name = "IllegalTransition";
  constructor(
    readonly decisionId: string,
    readonly from: DecisionState | "absent",
    readonly event: DecisionEvent,
    reason: string,
  ) {
    super(`decision ${decisionId}: ${reason}`);
  }
}

/** A decision `unsettled` while a placement already records it: the wedge of issue 21 case 2 (`berth doctor`). */
export interface WedgedDecision {
  readonly decision_id: string;
  readonly name: string;
  readonly instance_id: string;
  readonly node_id: string;
}

/** A decision in an owned state, with its owner as judged from here. */
export interface OwnedDecision {
  readonly decision: DecisionRow;
  readonly owner: OwnerLease | null;
  readonly verdict: OwnerVerdict;
  readonly sending: AttemptRow | null;
}

export function holderText(name: string, holder: NameHolder): string {
  if (holder.kind === "placement") {
    return `name ${name} is already placed: instance ${holder.instance_id} on node ${holder.node_id} (decision ${holder.decision_id})`;
  }
  const since = new Date(holder.since_ms).toISOString();
  if (holder.state === "unsettled") {
    return `name ${name} is held by unsettled decision ${holder.decision_id} since ${since}: its node may hold the instance (see \`berth unsettled --settle\`)`;
  }
  const by = holder.owner ? `pid ${holder.owner.pid} on ${holder.owner.host} (epoch ${holder.owner.epoch})` : "an owner that was not recorded";
  return `name ${name} is held by a decision in flight by ${by} since ${since} (decision ${holder.decision_id}, ${holder.state}); wait for it to finish`;
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
  owner_id: string | null;
  epoch: number | null;
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
    state: isDecisionState(r.state) ? r.state : "unplaced",
    node_id: r.node_id,
    variant: r.variant,
    package_id: r.package_id,
    created_ms: r.created_ms,
    workload: JSON.parse(r.workload) as WorkloadRecord,
    owner_id: r.owner_id,
    epoch: r.epoch,
  };
}

export class ControllerStore {
  /** This store's owner lease: every decision it makes or claims records it. */
  readonly lease: OwnerLease;

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
        // v3 (issue 21): owner leases, the owner and epoch of each decision, and the name reserved by every open state.
        if (from < 3) {
          ensureLeaseTables(tx);
          tx.db.exec(`
            ALTER TABLE mesh_decisions ADD COLUMN owner_id TEXT;
            ALTER TABLE mesh_decisions ADD COLUMN epoch INTEGER;
            DROP INDEX mesh_decisions_open_name;
            CREATE UNIQUE INDEX mesh_decisions_open_name ON mesh_decisions (name) WHERE state IN (${OPEN_SQL});
          `);
        }
        // v4 (issue 16): each target's last contacts, so liveness is the store's, not one process's memory.
        if (from < 4) {
          tx.db.exec(`
            ALTER TABLE mesh_targets ADD COLUMN last_ok_ms INTEGER;
            ALTER TABLE mesh_targets ADD COLUMN unreachable_since_ms INTEGER;
            ALTER TABLE mesh_targets ADD COLUMN last_error TEXT;
            ALTER TABLE mesh_targets ADD COLUMN name TEXT;
            ALTER TABLE mesh_targets ADD COLUMN contact_ms INTEGER;
          `);
        }
      }),
    );
    this.lease = withWriteTx(db, (tx) => {
      // Every CLI call takes a lease: released ones a day old that no open decision names are no longer needed (the
      // chain keeps each decision's owner in its decision event).
      tx.db
        .prepare(`DELETE FROM berth_owners WHERE released_ms IS NOT NULL AND released_ms < ? AND owner_id NOT IN (SELECT owner_id FROM mesh_decisions WHERE owner_id IS NOT NULL AND state IN (${OPEN_SQL}))`)
        .run(clock() - 24 * 3600 * 1000);
      return takeLease(tx, clock());
    });
  }

  /** Renews this store's lease (called while the controller works; see MeshController). */
  renewLease(): void {
    renewLease(this.db, this.lease.owner_id, this.clock());
  }

  /** Releases the lease: from now on this owner's open decisions are recoverable by any other process. */
  releaseLease(): void {
    releaseLease(this.db, this.lease.owner_id, this.clock());
  }

  /**
   * Moves a decision by one event of its machine, inside `tx`, or throws IllegalTransition. `actor` is derived:
   * this store's own owner for a decision it owns, another live process otherwise, unless the caller is recovery
   * or the operator. A claim makes this store the owner.
   */
  private move(tx: WriteTx, decisionId: string, event: DecisionEvent, as: "self" | "recovery" | "operator" = "self", set: { node_id?: string; variant?: string } = {}): DecisionState {
    const row = tx.db.prepare("SELECT state, owner_id FROM mesh_decisions WHERE id = ?").get(decisionId) as { state: string; owner_id: string | null } | undefined;
    if (!row || !isDecisionState(row.state)) throw new IllegalTransition(decisionId, "absent", event, "no such decision");
    const actor: DecisionActor = as === "self" ? (row.owner_id === this.lease.owner_id ? "owner" : "other") : as;
    const verdict = transition(row.state, event, actor);
    if (!verdict.ok) throw new IllegalTransition(decisionId, row.state, event, verdict.reason);
    const claims = event === "claim";
    tx.db
      .prepare(
        "UPDATE mesh_decisions SET state = ?, node_id = COALESCE(?, node_id), variant = COALESCE(?, variant), owner_id = CASE WHEN ? THEN ? ELSE owner_id END, epoch = CASE WHEN ? THEN ? ELSE epoch END WHERE id = ?",
      )
      .run(verdict.to, set.node_id ?? null, set.variant ?? null, claims ? 1 : 0, this.lease.owner_id, claims ? 1 : 0, this.lease.epoch, decisionId);
    return verdict.to;
  }

  /** Issue 16 (`berth node forget`, move-records.ts): an unsettled decision of a forgotten node becomes unplaced. */
  forgetDecision(tx: WriteTx, decisionId: string): void {
    this.move(tx, decisionId, "forget", "operator");
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
    return (this.db.prepare("SELECT addr, node_id, key, tier, tier_source, learned_ms FROM mesh_targets ORDER BY addr").all() as Array<StoredTarget & { tier: string; tier_source: string }>).map(
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

  /** Every target's recorded contacts, by address. */
  contacts(): Map<string, StoredContact> {
    const rows = this.db.prepare("SELECT addr, last_ok_ms, unreachable_since_ms, last_error, name, contact_ms FROM mesh_targets").all() as unknown as StoredContact[];
    return new Map(rows.map((r) => [r.addr, r]));
  }

  /**
   * Records one contact's outcome, unless another process already recorded a later one. A valid answer clears
   * `unreachable since`; a failure sets it only if it is not set (the node has been unreachable since the first).
   */
  recordContact(addr: string, o: ContactOutcome): void {
    this.tx((tx) => {
      if (o.ok) {
        tx.db
          .prepare("UPDATE mesh_targets SET last_ok_ms = ?, unreachable_since_ms = NULL, last_error = ?, name = COALESCE(?, name), contact_ms = ? WHERE addr = ? AND COALESCE(contact_ms, 0) <= ?")
          .run(o.at_ms, o.error, o.name, o.at_ms, addr, o.at_ms);
      } else {
        tx.db
          .prepare("UPDATE mesh_targets SET unreachable_since_ms = COALESCE(unreachable_since_ms, ?), last_error = ?, contact_ms = ? WHERE addr = ? AND COALESCE(contact_ms, 0) <= ?")
          .run(o.at_ms, o.error, o.at_ms, addr, o.at_ms);
      }
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
   * §9.2 step 6: the name check, the decision event and (unless dry run or unplaceable) the `dispatching` row owned
   * by this store's lease, in one transaction. Throws NameTaken, naming the holder, after chaining the refusal.
   */
  commitDecision(args: {
    name: string;
    packageId: string;
    workload: WorkloadRecord;
    event: EventDraft;
    dispatch: boolean;
    refusal: (error: string) => EventDraft;
  }): DecisionId {
    let taken: NameTaken | null = null;
    const id = this.tx((tx) => {
      if (args.dispatch) {
        const holder = this.holderOf(tx, args.name);
        if (holder) {
          taken = new NameTaken(holderText(args.name, holder), holder);
          this.chain.append(tx, args.refusal(taken.message));
          return null;
        }
      }
      const event = this.chain.append(tx, args.event);
      if (args.dispatch) {
        tx.db
          .prepare(
            "INSERT INTO mesh_decisions (id, name, state, node_id, variant, package_id, created_ms, workload, owner_id, epoch) VALUES (?,?,?,?,?,?,?,?,?,?)",
          )
          .run(event.hash, args.name, "dispatching", null, null, args.packageId, this.clock(), JSON.stringify(args.workload), this.lease.owner_id, this.lease.epoch);
      }
      return event.hash as DecisionId;
    });
    if (id === null) throw taken ?? new NameTaken(`name ${args.name} is already placed`);
    return id;
  }

  /** Who holds `name` now: its placement, or its open decision with the owner as judged from here. */
  private holderOf(tx: WriteTx, name: string): NameHolder | null {
    const placed = tx.db.prepare("SELECT instance_id, node_id, decision_id FROM mesh_placements WHERE name = ?").get(name) as
      | { instance_id: string; node_id: string; decision_id: string }
      | undefined;
    if (placed) return { kind: "placement", ...placed };
    const open = tx.db.prepare(`SELECT id, state, created_ms, owner_id FROM mesh_decisions WHERE name = ? AND state IN (${OPEN_SQL})`).get(name) as
      | { id: string; state: string; created_ms: number; owner_id: string | null }
      | undefined;
    if (!open) return null;
    const lease = readLease(tx.db, open.owner_id);
    return {
      kind: "decision",
      decision_id: open.id,
      state: isDecisionState(open.state) ? open.state : "unsettled",
      since_ms: open.created_ms,
      owner: lease ? { pid: lease.pid, host: lease.host, epoch: lease.epoch, alive: judgeLease(lease, this.clock()).alive } : null,
    };
  }

  /** The owner fields the decision event records (issue 21: each decision names who made it). */
  ownerRecord(): JsonObject {
    return { owner_id: this.lease.owner_id, epoch: this.lease.epoch, pid: this.lease.pid, host: this.lease.host };
  }

  /** §9.4 step 2: an internal marker, not chained; only the decision's owner, while it dispatches, may send. */
  beginAttempt(decisionId: DecisionId, n: number, nodeId: string, variant: string): void {
    this.tx((tx) => {
      this.move(tx, decisionId, "next_candidate");
      tx.db.prepare("INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state) VALUES (?,?,?,?, 'sending')").run(decisionId, n, nodeId, variant);
    });
  }

  /** §10.1: an answer was lost; the owner reconciles it with that node, and nobody may settle the decision meanwhile. */
  beginReconcile(decisionId: DecisionId): void {
    this.tx((tx) => {
      this.move(tx, decisionId, "answer_lost");
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
      const state = (tx.db.prepare("SELECT state FROM mesh_decisions WHERE id = ?").get(decisionId) as { state: string } | undefined)?.state;
      const reconciling = state === "reconciling";
      // The machine decides whether the ending is legal from where the decision is (an unsettled ending only
      // follows a reconcile that failed; a settled decision never becomes unsettled again).
      if (ending?.state === "unsettled") this.move(tx, decisionId, "not_reconciled", "self", { node_id: ending.node_id, variant: ending.variant });
      else if (ending?.state === "unplaced") this.move(tx, decisionId, "exhausted");
      else this.move(tx, decisionId, reconciling ? "reconciled" : "next_candidate");
      tx.db
        .prepare(
          "INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state, outcome, code, reason) VALUES (?,?,?,?, 'done', ?,?,?) ON CONFLICT(decision_id, n) DO UPDATE SET state = 'done', outcome = excluded.outcome, code = excluded.code, reason = excluded.reason",
        )
        .run(decisionId, n, result.nodeId, result.variant, result.outcome, result.code, result.reason);
      this.chain.append(tx, event);
      if (ending?.state === "unplaced") this.chain.append(tx, ending.exhausted);
    });
  }

  /** `placed`: attempt done, placement inserted, decision placed, `workload.place {phase: "placed"}`. */
  commitPlaced(decisionId: DecisionId, n: number, placement: PlacementRecord, workload: WorkloadRecord, event: EventDraft): void {
    this.tx((tx) => {
      this.move(tx, decisionId, "placed", "self", { node_id: placement.node_id, variant: placement.variant });
      tx.db.prepare("UPDATE mesh_attempts SET state = 'done', outcome = 'placed' WHERE decision_id = ? AND n = ?").run(decisionId, n);
      this.insertPlacement(tx, placement, workload);
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

  /**
   * §10.2: takes an unsettled decision to settle it (unsettled → settling, owned by this store), or says why not:
   * another process took it first, it is no longer unsettled, or it is wedged (a placement already records it).
   */
  claimForSettle(decisionId: string): { ok: true } | { ok: false; reason: string; wedged: boolean } {
    return this.tx((tx) => {
      const placed = tx.db.prepare("SELECT instance_id FROM mesh_placements WHERE decision_id = ?").get(decisionId) as { instance_id: string } | undefined;
      if (placed) {
        return { ok: false as const, wedged: true, reason: `wedged: placement ${placed.instance_id} already records this decision; run \`berth doctor --repair\`` };
      }
      try {
        this.move(tx, decisionId, "claim");
        return { ok: true as const };
      } catch (error) {
        if (!(error instanceof IllegalTransition)) throw error;
        return { ok: false as const, wedged: false, reason: `no longer unsettled (${error.from}): another process took it` };
      }
    });
  }

  /** §10.2: a claimed decision the node could not answer for goes back to unsettled, for a later settle. */
  releaseSettle(decisionId: string): void {
    this.tx((tx) => {
      this.move(tx, decisionId, "release");
    });
  }

  /** §10.2: adoption (if any) and the settled event, decision placed or unplaced, in one transaction (claimed first). */
  commitSettle(decision: UnsettledDecision, adopted: { placement: PlacementRecord; event: EventDraft } | null, settled: EventDraft): void {
    this.tx((tx) => {
      this.move(tx, decision.decision_id, adopted ? "adopt" : "settle_empty");
      if (adopted) {
        this.insertPlacement(tx, adopted.placement, decision.workload);
        this.chain.append(tx, adopted.event);
      }
      this.chain.append(tx, settled);
    });
  }

  /** Decisions in an owned state (dispatching, reconciling, settling), each with its owner judged from here. */
  ownedDecisions(): OwnedDecision[] {
    const rows = (this.db.prepare("SELECT * FROM mesh_decisions WHERE state IN ('dispatching','reconciling','settling') ORDER BY created_ms, id").all() as DecisionSql[]).map(
      decisionOf,
    );
    return rows.map((decision) => {
      const owner = readLease(this.db, decision.owner_id);
      const sending = this.attempts(decision.id).find((a) => a.state === "sending") ?? null;
      return { decision, owner, verdict: judgeLease(owner, this.clock()), sending };
    });
  }

  /**
   * §14.2 step 4, for one decision whose owner is provably gone: the owner is re-read and re-judged inside the
   * transaction, so a decision whose owner renewed or is still running is never interrupted (issue 21 case 6).
   * Returns false when it was left alone.
   */
  commitInterrupted(decisionId: string, requestMayBeOut: boolean, event: (why: string, state: DecisionState) => EventDraft): boolean {
    return this.tx((tx) => {
      const row = tx.db.prepare("SELECT * FROM mesh_decisions WHERE id = ?").get(decisionId) as DecisionSql | undefined;
      if (!row || !isDecisionState(row.state) || !OWNED_STATES.has(row.state)) return false;
      const verdict = judgeLease(readLease(tx.db, row.owner_id), this.clock());
      if (verdict.alive) return false;
      const sending = tx.db.prepare("SELECT node_id, variant FROM mesh_attempts WHERE decision_id = ? AND state = 'sending' ORDER BY n DESC").get(decisionId) as
        | { node_id: string; variant: string }
        | undefined;
      const eventName = row.state === "dispatching" ? (requestMayBeOut ? "owner_gone_in_flight" : "owner_gone_idle") : "owner_gone_in_flight";
      this.move(tx, decisionId, eventName, "recovery", sending ? { node_id: sending.node_id, variant: sending.variant } : {});
      tx.db.prepare("UPDATE mesh_attempts SET state = 'done', outcome = 'indeterminate' WHERE decision_id = ? AND state = 'sending'").run(decisionId);
      this.chain.append(tx, event(verdict.why, row.state));
      return true;
    });
  }

  /** Decisions `unsettled` while a placement records them (issue 21 case 2): listed by `berth doctor` and at open. */
  wedged(): WedgedDecision[] {
    return this.db
      .prepare(
        "SELECT d.id AS decision_id, d.name AS name, p.instance_id AS instance_id, p.node_id AS node_id FROM mesh_decisions d JOIN mesh_placements p ON p.decision_id = d.id WHERE d.state = 'unsettled' ORDER BY d.created_ms, d.id",
      )
      .all() as WedgedDecision[];
  }

  /** `berth doctor --repair`: a wedged decision becomes `placed` (its placement is the truth), chained with who asked. */
  commitRepair(w: WedgedDecision, operator: JsonObject): void {
    this.tx((tx) => {
      this.move(tx, w.decision_id, "repair", "operator");
      this.chain.append(tx, {
        source: "placement",
        kind: "controller.repair",
        payload: { problem: "wedged_decision", decision_id: w.decision_id, name: w.name, instance_id: w.instance_id, node: w.node_id, from: "unsettled", to: "placed", operator },
      });
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
