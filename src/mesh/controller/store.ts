/**
 * The controller's state (spec/mesh.md §14.1): targets, decisions, attempts and placements, next to the controller's
 * audit chain in the same store, on either engine (src/store: SQLite embedded, or PostgreSQL). Every operation is
 * one `transaction(async tx => …)` holding the state change and the chain event that records it (I7), so nothing is
 * chained that did not commit and nothing commits unchained. The interface speaks the domain (commitDecision,
 * commitPlaced, commitSettle…), not SQL. Its records and refusals are in store-records.ts, its tables in
 * store-schema.ts.
 * (About 870 lines, one concept: every method is one transaction pairing a state change with the chain event that
 * records it; split by table, a reader could no longer see that each mutation is chained in its own transaction.)
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
 * Over 400 lines because it is the one place SQL about decisions lives: each method is one transaction whose rules
 * hold only because they are checked beside the SQL that writes them; the records, the schema and the targets'
 * SQL are split out.
 */
import { type EngineChain, eventPayloadOn, eventPayloadsOn } from "../../chain/engine-chain.js";
import { readCandidatesOn, storeCandidatesIn, storeSummaryIn } from "../../chain/summaries.js";
import type { EventDraft, SealedEvent } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Tier } from "../../core/identity/tier.js";
import { type CandidatesDocument, candidatesRefOf } from "../../core/placement/candidates-document.js";
import type { GateSummary } from "../../core/governance/summary.js";
import {
  type DecisionActor,
  type DecisionEvent,
  type DecisionState,
  isDecisionState,
  OWNED_STATES,
  transition,
} from "../../core/mesh/decision-state.js";
import type { OwnerLease } from "../../core/mesh/owner-liveness.js";
import type { HistoryReads } from "../../core/placement/history.js";
import type { ClusterInstance, PlacedTotal } from "../../core/placement/index.js";
import type { Query, StoreEngine, TransactionOptions, Tx } from "../../store/engine.js";
import { GroupCommit, inRidingFlow } from "../../store/group-commit.js";
import { judgeLease, readLease, releaseLease, renewLease, takeLease } from "../../store/lease.js";
import { err, ok, type Result } from "../../kit/result.js";
import { deletePlacement, insertPlacement, instanceOf, placementHistory, placementsOn } from "./store-placements.js";
import {
  type AttemptEnding,
  type AttemptRow,
  type ContactOutcome,
  type DecisionId,
  type DecisionRow,
  type DecisionSql,
  decisionOf,
  holderText,
  IllegalTransition,
  type NameHolder,
  NameTaken,
  type OwnedDecision,
  type PlacementRecord,
  type PlacementSql,
  placementOf,
  type StoredContact,
  type StoredTarget,
  type TierSource,
  type UnsettledDecision,
  type WedgedDecision,
  type WorkloadRecord,
} from "./store-records.js";
import { ensureControllerSchema, OPEN_SQL } from "./store-schema.js";
import * as targetSql from "./store-targets.js";
import * as observationSql from "./store-observations.js";
import type { ObservedInstance } from "../../core/mesh/instance-observation.js";

export * from "./store-records.js";

export class ControllerStore {
  /** Issue 35: the contacts of calls made together (a pass's statuses, a tick's describes) share one transaction. */
  private readonly contactGroup: GroupCommit<{ readonly addr: string; readonly outcome: ContactOutcome }>;

  private constructor(
    readonly engine: StoreEngine,
    readonly chain: EngineChain,
    /** This store's owner lease: every decision it makes or claims records it. */
    readonly lease: OwnerLease,
    private readonly clock: () => number,
  ) {
    this.contactGroup = new GroupCommit(
      engine,
      async (tx, items) => {
        for (const c of items) await targetSql.recordContact(tx, c.addr, c.outcome);
      },
      { durable: false },
      inRidingFlow(engine),
    );
  }

  /** Migrates the controller's tables to this version and takes this process's owner lease. */
  static async open(engine: StoreEngine, chain: EngineChain, clock: () => number): Promise<ControllerStore> {
    await engine.transaction((tx) => ensureControllerSchema(tx));
    const lease = await engine.transaction(async (tx) => {
      // Every CLI call takes a lease: released ones a day old that no open decision names are no longer needed (the
      // chain keeps each decision's owner in its decision event).
      await tx.run(
        `DELETE FROM berth_owners WHERE released_ms IS NOT NULL AND released_ms < ? AND owner_id NOT IN (SELECT owner_id FROM mesh_decisions WHERE owner_id IS NOT NULL AND state IN (${OPEN_SQL}))`,
        [clock() - 24 * 3600 * 1000],
      );
      return takeLease(tx, clock());
    });
    return new ControllerStore(engine, chain, lease, clock);
  }

  /** Renews this store's lease (called while the controller works; see MeshController). */
  async renewLease(): Promise<void> {
    await this.tx((tx) => renewLease(tx, this.lease.owner_id, this.clock()));
  }

  /**
   * Issue 37: how many other processes hold a live owner lease on this store (renewed within its TTL, not released)
   * and have held it for at least `heldMs`: long-lived ones, such as a standby `berth serve`, not a CLI call.
   */
  async longLivedPeers(heldMs: number): Promise<number> {
    const now = this.clock();
    const row = await this.engine.read((q) =>
      q.get<{ n: number | string }>(
        "SELECT COUNT(*) AS n FROM berth_owners WHERE released_ms IS NULL AND owner_id <> ? AND renewed_ms + ttl_ms > ? AND started_ms <= ?",
        [this.lease.owner_id, now, now - heldMs],
      ),
    );
    return Number(row?.n ?? 0);
  }

  /** Releases the lease: from now on this owner's open decisions are recoverable by any other process. */
  async releaseLease(): Promise<void> {
    await this.tx((tx) => releaseLease(tx, this.lease.owner_id, this.clock()));
  }

  /**
   * Moves a decision by one event of its machine, inside `tx`, or throws IllegalTransition. `actor` is derived:
   * this store's own owner for a decision it owns, another live process otherwise, unless the caller is recovery
   * or the operator. A claim makes this store the owner.
   */
  private async move(
    tx: Tx,
    decisionId: string,
    event: DecisionEvent,
    as: "self" | "recovery" | "operator" = "self",
    set: { node_id?: string; variant?: string } = {},
  ): Promise<DecisionState> {
    const row = await tx.get<{ state: string; owner_id: string | null }>(
      "SELECT state, owner_id FROM mesh_decisions WHERE id = ?",
      [decisionId],
    );
    if (!row || !isDecisionState(row.state))
      throw new IllegalTransition(decisionId, "absent", event, "no such decision");
    const actor: DecisionActor = as === "self" ? (row.owner_id === this.lease.owner_id ? "owner" : "other") : as;
    const verdict = transition(row.state, event, actor);
    if (!verdict.ok) throw new IllegalTransition(decisionId, row.state, event, verdict.error);
    const claims = event === "claim" ? 1 : 0;
    await tx.run(
      "UPDATE mesh_decisions SET state = ?, node_id = COALESCE(?, node_id), variant = COALESCE(?, variant), owner_id = CASE WHEN ? = 1 THEN ? ELSE owner_id END, epoch = CASE WHEN ? = 1 THEN ? ELSE epoch END WHERE id = ?",
      [
        verdict.value,
        set.node_id ?? null,
        set.variant ?? null,
        claims,
        this.lease.owner_id,
        claims,
        this.lease.epoch,
        decisionId,
      ],
    );
    return verdict.value;
  }

  /** Issue 16 (`berth node forget`, move-records.ts): an unsettled decision of a forgotten node becomes unplaced. */
  async forgetDecision(tx: Tx, decisionId: string): Promise<void> {
    await this.move(tx, decisionId, "forget", "operator");
  }

  private tx<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.engine.transaction(fn, options);
  }

  private read<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    return this.engine.read(fn);
  }

  /**
   * The last `policy.load` this chain holds for each policy file, as `sha256:ok`: what the files were when someone
   * last recorded them (this process, an earlier CLI call, or the server beside it).
   */
  async lastPolicyLoads(): Promise<Map<string, string>> {
    const payloads = await this.read((q) => eventPayloadsOn(q, this.chain.chainId, "trust", "policy.load"));
    const last = new Map<string, string>();
    for (const payload of payloads) {
      const p = JSON.parse(payload) as { file?: unknown; sha256?: unknown; ok?: unknown };
      if (typeof p.file === "string") last.set(p.file, `${p.sha256 ?? null}:${p.ok === true}`);
    }
    return last;
  }

  /** Appends events without state (gate verdicts, key refusals, policy loads). */
  async appendAll(drafts: readonly EventDraft[], options?: TransactionOptions): Promise<SealedEvent[]> {
    if (drafts.length === 0) return [];
    return this.tx(async (tx) => {
      const events: SealedEvent[] = [];
      for (const d of drafts) events.push(await this.chain.append(tx, d));
      return events;
    }, options);
  }

  /** Appends events that name a gate summary (an engine refusal, §7.7), with the summary, in one transaction. */
  async appendWithSummary(summary: GateSummary, drafts: readonly EventDraft[]): Promise<SealedEvent[]> {
    return this.tx(async (tx) => {
      await storeSummaryIn(tx, this.chain.chainId, summary);
      const events: SealedEvent[] = [];
      for (const d of drafts) events.push(await this.chain.append(tx, d));
      return events;
    });
  }

  // ---- targets (SQL in store-targets.ts) -------------------------------------------------------------------

  async targets(): Promise<StoredTarget[]> {
    return this.read((q) => targetSql.targets(q));
  }

  /** `peer.add`: the key learned (TOFU) or confirmed (listed key) for an address. */
  async learnTarget(t: StoredTarget, event: EventDraft): Promise<void> {
    await this.tx(async (tx) => {
      await targetSql.upsertTarget(tx, t);
      await this.chain.append(tx, event);
    });
  }

  /** Issue 36, `berth nodes remove`: the address's row gone (key, tier, contacts), with its event. */
  async removeTarget(addr: string, event: EventDraft): Promise<void> {
    await this.tx(async (tx) => {
      await targetSql.deleteTarget(tx, addr);
      await this.chain.append(tx, event);
    });
  }

  /** Every target's recorded contacts, by address. */
  async contacts(): Promise<Map<string, StoredContact>> {
    return this.read((q) => targetSql.contacts(q));
  }

  /**
   * Records one contact's outcome, unless another process already recorded a later one. A valid answer clears
   * `unreachable since`; a failure sets it only if it is not set (the node has been unreachable since the first).
   * Not durable: an observation nothing outside the store waits on; a power loss only forgets the latest ones.
   */
  async recordContact(addr: string, o: ContactOutcome): Promise<void> {
    await this.contactGroup.add({ addr, outcome: o });
  }

  /**
   * Issue 35: what verified status answers said of placed instances, in one transaction per batch (a pass's nodes, a
   * refresh), each kept unless a later one is stored. Not durable, like the contacts: a power loss only forgets the
   * latest, and the lists then show an older one with its age.
   */
  async recordObservations(observations: readonly ObservedInstance[]): Promise<void> {
    if (observations.length === 0) return;
    await this.tx((tx) => observationSql.recordObservations(tx, observations), { durable: false });
  }

  /** Every instance's last recorded observation, by instance id. */
  async observations(): Promise<Map<string, ObservedInstance>> {
    return this.read((q) => observationSql.observationsOn(q));
  }

  /** One target's recorded contacts (null: no such address). */
  async contact(addr: string): Promise<StoredContact | null> {
    return this.read((q) => targetSql.contact(q, addr));
  }

  /** `peer.tier`. */
  async setTier(addr: string, tier: Tier, source: TierSource, event: EventDraft): Promise<void> {
    await this.tx(async (tx) => {
      await tx.run("UPDATE mesh_targets SET tier = ?, tier_source = ? WHERE addr = ?", [tier, source, addr]);
      await this.chain.append(tx, event);
    });
  }

  // ---- decisions and attempts -------------------------------------------------------------------------------

  /**
   * §9.2 step 6: the name check, the decision event and (unless dry run or unplaceable) the `dispatching` row owned
   * by this store's lease, in one transaction. Throws NameTaken, naming the holder, after chaining the refusal.
   * Durable only when it answers the caller (a dry run, nothing placeable, a name taken; inside an API call its
   * outcome's commit is that sync): a dispatching decision is followed by its request's durable stamp before the
   * request leaves (issue 19). `summary` (the gate's verdicts over the view, §7.7, issue 35) is stored in the same
   * transaction, whichever of the decision and the refusal names it.
   */
  async commitDecision(args: {
    summary?: GateSummary;
    /** The decision's candidate reports, stored beside the chain in the decision's transaction (issue 35). */
    candidates?: CandidatesDocument;
    name: string;
    packageId: string;
    workload: WorkloadRecord;
    event: EventDraft;
    dispatch: boolean;
    refusal: (error: string) => EventDraft;
    /** More rows of a dispatching decision, written in its transaction once its id is known (the stored order). */
    withDispatching?: (tx: Tx, id: DecisionId) => Promise<void>;
  }): Promise<DecisionId> {
    // What a placement of this decision will record is checked before anything is sent (store-placements.ts).
    if (args.dispatch) instanceOf({ node_id: "", name: args.name, placed_ms: 0 }, args.workload);
    let taken: NameTaken | null = null;
    const id = await this.tx(
      async (tx) => {
        if (args.summary) await storeSummaryIn(tx, this.chain.chainId, args.summary);
        if (args.dispatch) {
          const holder = await this.holderOf(tx, args.name);
          if (holder) {
            taken = new NameTaken(holderText(args.name, holder), holder);
            await this.chain.append(tx, args.refusal(taken.message));
            tx.requireDurable();
            return null;
          }
        }
        if (args.candidates) await storeCandidatesIn(tx, this.chain.chainId, args.candidates);
        const event = await this.chain.append(tx, args.event);
        if (args.dispatch) {
          await tx.run(
            "INSERT INTO mesh_decisions (id, name, state, node_id, variant, package_id, created_ms, workload, owner_id, epoch, event_chain_id, event_seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [
              event.hash,
              args.name,
              "dispatching",
              null,
              null,
              args.packageId,
              this.clock(),
              JSON.stringify(args.workload),
              this.lease.owner_id,
              this.lease.epoch,
              event.chain_id,
              event.seq,
            ],
          );
          await args.withDispatching?.(tx, event.hash as DecisionId);
        }
        return event.hash as DecisionId;
      },
      { durable: args.dispatch ? false : "answer" },
    );
    if (id === null) throw taken ?? new NameTaken(`name ${args.name} is already placed`);
    return id;
  }

  /** Who holds `name` now: its placement, or its open decision with the owner as judged from here. */
  private async holderOf(tx: Tx, name: string): Promise<NameHolder | null> {
    const placed = await tx.get<{ instance_id: string; node_id: string; decision_id: string }>(
      "SELECT instance_id, node_id, decision_id FROM mesh_placements WHERE name = ?",
      [name],
    );
    if (placed) return { kind: "placement", ...placed };
    const open = await tx.get<{ id: string; state: string; created_ms: number; owner_id: string | null }>(
      `SELECT id, state, created_ms, owner_id FROM mesh_decisions WHERE name = ? AND state IN (${OPEN_SQL})`,
      [name],
    );
    if (!open) return null;
    const lease = await readLease(tx, open.owner_id);
    return {
      kind: "decision",
      decision_id: open.id,
      state: isDecisionState(open.state) ? open.state : "unsettled",
      since_ms: Number(open.created_ms),
      owner: lease
        ? { pid: lease.pid, host: lease.host, epoch: lease.epoch, alive: judgeLease(lease, this.clock()).alive }
        : null,
    };
  }

  /** The owner fields the decision event records (issue 21: each decision names who made it). */
  ownerRecord(): JsonObject {
    return { owner_id: this.lease.owner_id, epoch: this.lease.epoch, pid: this.lease.pid, host: this.lease.host };
  }

  /**
   * §9.4 step 2: an internal marker, not chained; only the decision's owner, while it dispatches, may send. Not
   * durable on its own: the request's stamp (watch-stamps.ts) is committed durably after it and before the request
   * leaves, and that sync makes this commit durable with it (docs/spec/mesh.md §14.1 "Durability").
   */
  async beginAttempt(decisionId: DecisionId, n: number, nodeId: string, variant: string): Promise<void> {
    await this.tx(
      async (tx) => {
        await this.move(tx, decisionId, "next_candidate");
        await tx.run(
          "INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state) VALUES (?,?,?,?, 'sending')",
          [decisionId, n, nodeId, variant],
        );
      },
      { durable: false },
    );
  }

  /** §10.1: an answer was lost; the owner reconciles it with that node, and nobody may settle the decision meanwhile. */
  async beginReconcile(decisionId: DecisionId): Promise<void> {
    await this.tx(async (tx) => {
      await this.move(tx, decisionId, "answer_lost");
    });
  }

  /** A non-placed attempt with its `workload.refuse {phase: "dispatch"}` event, and how it ends the dispatch. */
  async commitAttempt(
    decisionId: DecisionId,
    n: number,
    result: { nodeId: string; variant: string; outcome: string; code: string | null; reason: string | null },
    event: EventDraft,
    ending: AttemptEnding,
  ): Promise<void> {
    await this.tx(
      async (tx) => {
        const state = (await tx.get<{ state: string }>("SELECT state FROM mesh_decisions WHERE id = ?", [decisionId]))
          ?.state;
        const reconciling = state === "reconciling";
        // The machine decides whether the ending is legal from where the decision is (an unsettled ending only
        // follows a reconcile that failed; a settled decision never becomes unsettled again).
        if (ending?.state === "unsettled")
          await this.move(tx, decisionId, "not_reconciled", "self", {
            node_id: ending.node_id,
            variant: ending.variant,
          });
        else if (ending?.state === "unplaced") await this.move(tx, decisionId, "exhausted");
        else await this.move(tx, decisionId, reconciling ? "reconciled" : "next_candidate");
        await tx.run(
          "INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state, outcome, code, reason) VALUES (?,?,?,?, 'done', ?,?,?) ON CONFLICT (decision_id, n) DO UPDATE SET state = 'done', outcome = excluded.outcome, code = excluded.code, reason = excluded.reason",
          [decisionId, n, result.nodeId, result.variant, result.outcome, result.code, result.reason],
        );
        await this.chain.append(tx, event);
        if (ending?.state === "unplaced") await this.chain.append(tx, ending.exhausted);
      },
      { durable: "answer" },
    );
  }

  /** `placed`: attempt done, placement inserted, decision placed, `workload.place {phase: "placed"}`. */
  async commitPlaced(
    decisionId: DecisionId,
    n: number,
    placement: PlacementRecord,
    workload: WorkloadRecord,
    event: EventDraft,
  ): Promise<void> {
    await this.tx(
      async (tx) => {
        await this.move(tx, decisionId, "placed", "self", { node_id: placement.node_id, variant: placement.variant });
        await tx.run("UPDATE mesh_attempts SET state = 'done', outcome = 'placed' WHERE decision_id = ? AND n = ?", [
          decisionId,
          n,
        ]);
        await insertPlacement(tx, placement, workload);
        // Issue 33: a placement of the name (a deploy, a place, a start from the registry) is what ends a stop.
        await tx.run("DELETE FROM mesh_stopped WHERE name = ?", [placement.name]);
        await this.chain.append(tx, event);
      },
      { durable: "answer" },
    );
  }

  /**
   * Issue 37 finding A: the store failed while this owner dispatched (PostgreSQL restarted inside the commit of a
   * node's answer, or before an attempt was recorded), so the dispatch cannot go on and its outcome is unknown here.
   * The owner hands the decision to the lost-answer path instead of leaving it `dispatching` for as long as it lives:
   * - a request that may be out (an attempt still `sending`, or `mayBeOut` on the node that was called) makes the
   *   decision `unsettled` on that node, exactly as a lost answer that could not be reconciled: settle asks the node
   *   and adopts what it holds or releases the name; no other candidate is ever tried, so never two copies;
   * - nothing sent: the decision ends `unplaced` (`exhausted`), its name released.
   * Re-read inside the transaction: a commit whose acknowledgement was lost may have landed (placed), or someone may
   * have moved it since; then nothing is written. Resolves to the state the decision is left in.
   */
  async handOverInterrupted(
    decisionId: DecisionId,
    mayBeOut: { n: number; node_id: string; variant: string } | null,
    reason: string,
  ): Promise<DecisionState | "absent"> {
    return this.tx(async (tx) => {
      const row = await tx.get<{ state: string; owner_id: string | null }>(
        "SELECT state, owner_id FROM mesh_decisions WHERE id = ?",
        [decisionId],
      );
      if (!row || !isDecisionState(row.state)) return "absent" as const;
      if ((row.state !== "dispatching" && row.state !== "reconciling") || row.owner_id !== this.lease.owner_id)
        return row.state;
      const sending = await tx.get<{ n: number; node_id: string; variant: string }>(
        "SELECT n, node_id, variant FROM mesh_attempts WHERE decision_id = ? AND state = 'sending' ORDER BY n DESC",
        [decisionId],
      );
      const out =
        mayBeOut ?? (sending ? { n: Number(sending.n), node_id: sending.node_id, variant: sending.variant } : null);
      if (out === null) {
        await this.move(tx, decisionId, "exhausted");
        await this.chain.append(tx, {
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "exhausted", decision_id: decisionId, attempts: 0, reason },
        });
        return "unplaced" as const;
      }
      if (row.state === "dispatching") await this.move(tx, decisionId, "answer_lost");
      await this.move(tx, decisionId, "not_reconciled", "self", { node_id: out.node_id, variant: out.variant });
      await tx.run(
        "INSERT INTO mesh_attempts (decision_id, n, node_id, variant, state, outcome, code, reason) VALUES (?,?,?,?, 'done', 'indeterminate', NULL, ?) ON CONFLICT (decision_id, n) DO UPDATE SET state = 'done', outcome = 'indeterminate', reason = excluded.reason",
        [decisionId, out.n, out.node_id, out.variant, reason],
      );
      await tx.run(
        "UPDATE mesh_attempts SET state = 'done', outcome = 'indeterminate' WHERE decision_id = ? AND state = 'sending'",
        [decisionId],
      );
      await this.chain.append(tx, {
        source: "placement",
        kind: "workload.refuse",
        payload: {
          phase: "dispatch",
          decision_id: decisionId,
          node: out.node_id,
          variant: out.variant,
          outcome: "indeterminate",
          code: null,
          reason,
          reconcile: null,
          unloaded: null,
          next: "stopped: the target may hold the instance",
        },
      });
      return "unsettled" as const;
    });
  }

  /**
   * §10.2: takes an unsettled decision to settle it (unsettled → settling, owned by this store), or says why not:
   * another process took it first, it is no longer unsettled, or it is wedged (a placement already records it).
   */
  async claimForSettle(
    decisionId: string,
  ): Promise<Result<void, { readonly reason: string; readonly wedged: boolean }>> {
    return this.tx(async (tx) => {
      const placed = await tx.get<{ instance_id: string }>(
        "SELECT instance_id FROM mesh_placements WHERE decision_id = ?",
        [decisionId],
      );
      if (placed) {
        return err({
          wedged: true,
          reason: `wedged: placement ${placed.instance_id} already records this decision; run \`berth doctor --repair\``,
        });
      }
      try {
        await this.move(tx, decisionId, "claim");
        return ok();
      } catch (error) {
        if (!(error instanceof IllegalTransition)) throw error;
        return err({ wedged: false, reason: `no longer unsettled (${error.from}): another process took it` });
      }
    });
  }

  /** §10.2: a claimed decision the node could not answer for goes back to unsettled, for a later settle. */
  async releaseSettle(decisionId: string): Promise<void> {
    await this.tx(async (tx) => {
      await this.move(tx, decisionId, "release");
    });
  }

  /** §10.2: adoption (if any) and the settled event, decision placed or unplaced, in one transaction (claimed first). */
  async commitSettle(
    decision: UnsettledDecision,
    adopted: { placement: PlacementRecord; event: EventDraft } | null,
    settled: EventDraft,
  ): Promise<void> {
    await this.tx(async (tx) => {
      await this.move(tx, decision.decision_id, adopted ? "adopt" : "settle_empty");
      if (adopted) {
        await insertPlacement(tx, adopted.placement, decision.workload);
        // Issue 33: the adopted instance is a deploy's (a name holds one placement or open decision at a time, so the
        // decision came after any stop of the name): like commitPlaced, it ends the stop.
        await tx.run("DELETE FROM mesh_stopped WHERE name = ?", [adopted.placement.name]);
        await this.chain.append(tx, adopted.event);
      }
      await this.chain.append(tx, settled);
    });
  }

  /** Decisions in an owned state (dispatching, reconciling, settling), each with its owner judged from here. */
  async ownedDecisions(): Promise<OwnedDecision[]> {
    return this.read(async (q) => {
      const rows = await q.all<DecisionSql>(
        "SELECT * FROM mesh_decisions WHERE state IN ('dispatching','reconciling','settling') ORDER BY created_ms, id",
      );
      const out: OwnedDecision[] = [];
      for (const decision of rows.map(decisionOf)) {
        const owner = await readLease(q, decision.owner_id);
        const sending = (await attemptsOn(q, decision.id)).find((a) => a.state === "sending") ?? null;
        out.push({ decision, owner, verdict: judgeLease(owner, this.clock()), sending });
      }
      return out;
    });
  }

  /**
   * §14.2 step 4, for one decision whose owner is provably gone: the owner is re-read and re-judged inside the
   * transaction, so a decision whose owner renewed or is still running is never interrupted (issue 21 case 6).
   * Returns false when it was left alone.
   */
  async commitInterrupted(
    decisionId: string,
    requestMayBeOut: boolean,
    event: (why: string, state: DecisionState) => EventDraft,
  ): Promise<boolean> {
    return this.tx(async (tx) => {
      const row = await tx.get<DecisionSql>("SELECT * FROM mesh_decisions WHERE id = ?", [decisionId]);
      if (!row || !isDecisionState(row.state) || !OWNED_STATES.has(row.state)) return false;
      const verdict = judgeLease(await readLease(tx, row.owner_id), this.clock());
      if (verdict.alive) return false;
      const sending = await tx.get<{ node_id: string; variant: string }>(
        "SELECT node_id, variant FROM mesh_attempts WHERE decision_id = ? AND state = 'sending' ORDER BY n DESC",
        [decisionId],
      );
      const eventName =
        row.state === "dispatching"
          ? requestMayBeOut
            ? "owner_gone_in_flight"
            : "owner_gone_idle"
          : "owner_gone_in_flight";
      await this.move(
        tx,
        decisionId,
        eventName,
        "recovery",
        sending ? { node_id: sending.node_id, variant: sending.variant } : {},
      );
      await tx.run(
        "UPDATE mesh_attempts SET state = 'done', outcome = 'indeterminate' WHERE decision_id = ? AND state = 'sending'",
        [decisionId],
      );
      await this.chain.append(tx, event(verdict.why, row.state));
      return true;
    });
  }

  /** Decisions `unsettled` while a placement records them (issue 21 case 2): listed by `berth doctor` and at open. */
  async wedged(): Promise<WedgedDecision[]> {
    return this.read((q) =>
      q.all<WedgedDecision>(
        "SELECT d.id AS decision_id, d.name AS name, p.instance_id AS instance_id, p.node_id AS node_id FROM mesh_decisions d JOIN mesh_placements p ON p.decision_id = d.id WHERE d.state = 'unsettled' ORDER BY d.created_ms, d.id",
      ),
    );
  }

  /** `berth doctor --repair`: a wedged decision becomes `placed` (its placement is the truth), chained with who asked. */
  async commitRepair(w: WedgedDecision, operator: JsonObject): Promise<void> {
    await this.tx(async (tx) => {
      await this.move(tx, w.decision_id, "repair", "operator");
      await this.chain.append(tx, {
        source: "placement",
        kind: "controller.repair",
        payload: {
          problem: "wedged_decision",
          decision_id: w.decision_id,
          name: w.name,
          instance_id: w.instance_id,
          node: w.node_id,
          from: "unsettled",
          to: "placed",
          operator,
        },
      });
    });
  }

  // ---- instance verbs ---------------------------------------------------------------------------------------

  /** §12 step 4: the request event; its hash authorises the verb. */
  /**
   * With `stop` (issue 33: a person's stop of a managed placement), the name is recorded as stopped in the same
   * transaction as the chained request, before anything is sent: from then on the keep loop never starts, moves
   * or places it again, whatever becomes of its node, until a deploy places the name or a start clears it.
   */
  async commitVerbRequest(
    event: EventDraft,
    stop?: { readonly name: string; readonly instance_id: string },
  ): Promise<DecisionId> {
    return this.tx(async (tx) => {
      const hash = (await this.chain.append(tx, event)).hash as DecisionId;
      if (stop !== undefined) {
        await tx.run(
          "INSERT INTO mesh_stopped (name, instance_id, stopped_ms, request_id) VALUES (?,?,?,?) ON CONFLICT (name) DO UPDATE SET instance_id = excluded.instance_id, stopped_ms = excluded.stopped_ms, request_id = excluded.request_id",
          [stop.name, stop.instance_id, this.clock(), hash],
        );
      }
      return hash;
    });
  }

  /**
   * §12 step 6: the outcome event, with the placement removed (unload) or marked pending (indeterminate). `unstop`
   * (issue 33) clears the name's stop in the same transaction: a start the node carried out, or a stop it refused.
   */
  async commitVerbOutcome(
    instanceId: string,
    change: "remove" | { pending: string | null } | null,
    event: EventDraft,
    unstop?: string,
  ): Promise<void> {
    await this.tx(async (tx) => {
      await this.chain.append(tx, event);
      if (change === "remove") await deletePlacement(tx, instanceId);
      else if (change !== null)
        await tx.run("UPDATE mesh_placements SET pending = ? WHERE instance_id = ?", [change.pending, instanceId]);
      if (unstop !== undefined) await tx.run("DELETE FROM mesh_stopped WHERE name = ?", [unstop]);
    });
  }

  /** Issue 33: the names a person stopped and nothing has started since (see `commitVerbRequest`). */
  async stoppedNames(): Promise<ReadonlySet<string>> {
    return new Set(
      (await this.read((q) => q.all<{ name: string }>("SELECT name FROM mesh_stopped"))).map((r) => r.name),
    );
  }

  // ---- reads ------------------------------------------------------------------------------------------------

  async placements(): Promise<PlacementRecord[]> {
    return this.read((q) => placementsOn(q));
  }

  async placement(instanceId: string): Promise<{ record: PlacementRecord; workload: WorkloadRecord } | null> {
    const row = await this.read((q) =>
      q.get<PlacementSql & { workload: string }>("SELECT * FROM mesh_placements WHERE instance_id = ?", [instanceId]),
    );
    return row ? { record: placementOf(row), workload: JSON.parse(row.workload) as WorkloadRecord } : null;
  }

  /**
   * What one decision reads of the placement history (src/core/placement/history.ts): every node's totals and the
   * instances `reads` selects, typed as they were validated when written (store-placements.ts), in one read.
   */
  async placementHistory(reads: HistoryReads): Promise<{ placed: PlacedTotal[]; instances: ClusterInstance[] }> {
    return this.read((q) => placementHistory(q, reads));
  }

  async placedWorkloads(): Promise<Array<{ record: PlacementRecord; workload: WorkloadRecord }>> {
    return (await this.read((q) => q.all<PlacementSql & { workload: string }>("SELECT * FROM mesh_placements"))).map(
      (r) => ({
        record: placementOf(r),
        workload: JSON.parse(r.workload) as WorkloadRecord,
      }),
    );
  }

  async unsettled(): Promise<UnsettledDecision[]> {
    return (
      await this.read((q) =>
        q.all<DecisionSql>("SELECT * FROM mesh_decisions WHERE state = 'unsettled' ORDER BY created_ms, id"),
      )
    ).map((r) => ({
      decision_id: r.id as DecisionId,
      name: r.name,
      node_id: r.node_id ?? "",
      variant: r.variant ?? "",
      package_id: r.package_id,
      created_ms: Number(r.created_ms),
      workload: JSON.parse(r.workload) as WorkloadRecord,
    }));
  }

  /**
   * Decision `id`'s event on this store's own chain: one primary-key read at the seq its row recorded (schema v9), or
   * a scan of the chain for a decision with no row (a dry run).
   */
  async decisionEvent(id: string): Promise<SealedEvent | undefined> {
    const at = await this.eventOfDecision(id);
    return this.chain.byHash(id, at?.chain_id === this.chain.chainId ? at.seq : null);
  }

  /**
   * A chained decision as the engine made it: the event's `decision` with its `candidates` put back from the
   * document beside the chain its ref names (issue 35), or as recorded inline by events before that. The document is
   * written in the decision's own transaction, so the controller's store has it; one it lacks (a store that only
   * imported the events) leaves `candidates` empty. One that fails its hash is an error: an explain must never be
   * built from a report altered after it was chained (`berth audit verify` names it too).
   */
  async chainedDecision(event: SealedEvent): Promise<Result<JsonObject>> {
    const inline = event.payload.decision as JsonObject;
    const ref = candidatesRefOf(event.payload);
    if (ref === null) return ok(inline);
    const read = await this.read((q) => readCandidatesOn(q, event.chain_id, ref.summary));
    if (read.kind === "invalid") return err(read.reason);
    return ok({ ...inline, candidates: read.kind === "found" ? (read.candidates as unknown as JsonObject[]) : [] });
  }

  /**
   * The payload of decision `id`'s `workload.place` event on whichever stored chain holds it (an older one after a
   * reseal too): read at its recorded place, or found by a scan when its row records none.
   */
  async decisionPayload(id: string): Promise<JsonObject | null> {
    const at = await this.eventOfDecision(id);
    const payload = await this.read((q) => eventPayloadOn(q, id, "workload.place", at));
    return payload !== undefined ? (JSON.parse(payload) as JsonObject) : null;
  }

  /**
   * Issue 35: the decision payloads of many decisions in a few reads (chunks of 500), for the keep pass; a
   * decision whose row records no event place is read one by one as `decisionPayload` reads it.
   */
  async decisionPayloads(ids: readonly string[]): Promise<Map<string, JsonObject | null>> {
    const out = new Map<string, JsonObject | null>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rows = await this.read((q) =>
        q.all<{ id: string; payload: string }>(
          `SELECT d.id AS id, e.payload AS payload FROM mesh_decisions d JOIN audit_event e ON e.chain_id = d.event_chain_id AND e.seq = d.event_seq AND e.hash = d.id AND e.kind = 'workload.place' WHERE d.id IN (${chunk.map(() => "?").join(",")})`,
          chunk,
        ),
      );
      for (const r of rows) out.set(r.id, JSON.parse(r.payload) as JsonObject);
    }
    for (const id of ids) if (!out.has(id)) out.set(id, await this.decisionPayload(id));
    return out;
  }

  private async eventOfDecision(id: string): Promise<{ chain_id: string; seq: number } | null> {
    const row = await this.read((q) =>
      q.get<{ chain_id: string | null; seq: number | null }>(
        "SELECT event_chain_id AS chain_id, event_seq AS seq FROM mesh_decisions WHERE id = ?",
        [id],
      ),
    );
    return row?.chain_id && row.seq !== null ? { chain_id: row.chain_id, seq: Number(row.seq) } : null;
  }

  async decision(id: string): Promise<DecisionRow | null> {
    const row = await this.read((q) => q.get<DecisionSql>("SELECT * FROM mesh_decisions WHERE id = ?", [id]));
    return row ? decisionOf(row) : null;
  }

  async decisionsIn(state: DecisionState): Promise<DecisionRow[]> {
    return (
      await this.read((q) =>
        q.all<DecisionSql>("SELECT * FROM mesh_decisions WHERE state = ? ORDER BY created_ms, id", [state]),
      )
    ).map(decisionOf);
  }

  async attempts(decisionId: string): Promise<AttemptRow[]> {
    return this.read((q) => attemptsOn(q, decisionId));
  }

  /** The store's own tables counted without loading rows (the server's metrics; thousands of decisions). */
  async countBy(what: keyof typeof COUNTS): Promise<Map<string, number>> {
    const rows = await this.read((q) => q.all<{ k: string; n: number | string }>(COUNTS[what]));
    return new Map(rows.map((r) => [r.k, Number(r.n)]));
  }

  async events(q: { kind?: string; phase?: string } = {}): Promise<JsonObject[]> {
    return (await this.chain.find({ ...q })).map((e) => e.payload);
  }
}

const COUNTS = {
  decisions_by_state: "SELECT state AS k, COUNT(*) AS n FROM mesh_decisions GROUP BY state",
  attempts_by_outcome:
    "SELECT outcome AS k, COUNT(*) AS n FROM mesh_attempts WHERE outcome IS NOT NULL GROUP BY outcome",
  placements_by_route: "SELECT route AS k, COUNT(*) AS n FROM mesh_placements GROUP BY route",
} as const;

function attemptsOn(q: Query, decisionId: string): Promise<AttemptRow[]> {
  return q.all<AttemptRow>("SELECT * FROM mesh_attempts WHERE decision_id = ? ORDER BY n", [decisionId]);
}
