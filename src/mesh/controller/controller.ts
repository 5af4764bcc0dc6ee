/**
 * The mesh controller as a library (spec/mesh.md §9–§12, §14): one object that the CLI, and later the HTTP API, call.
 * It owns the controller store (state and audit chain in one database: a SQLite file in the home, or PostgreSQL,
 * src/store), its targets and its policy files.
 *
 * Lifecycle: `open()` verifies the chain, restores state and resolves decisions a crash left `dispatching`
 * (§14.2 steps 1–4); `start()` describes every target with its stored key and settles unsettled decisions (step 5).
 * Every method after that is level-triggered: it re-reads the policy files and re-describes what it needs.
 * (About 710 lines, one concept: the controller's public face; each verb is a few lines wiring the store, targets,
 * gate and engine, and the decisions themselves live in src/core and the files beside this one.)
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { checkpointPolicyFromEnv } from "../../chain/checkpoint-policy.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { WitnessClaims } from "../../chain/witness-claim.js";
import { checkpointOrigin } from "../../core/chain/note.js";
import { type WitnessReport, type WitnessRow, witnessRow } from "../../core/mesh/witness-report.js";
import { nodeIdOf, type SigningKey } from "../../core/crypto/ed25519.js";
import type { Tier } from "../../core/identity/tier.js";
import { type NodeView, type ScoringWeights, scoringWeightsSchema } from "../../core/placement/index.js";
import { RESTART_POLICIES } from "../../core/node/restart-policy.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { type ObservedRow, observedInstanceOf } from "../../core/mesh/instance-observation.js";
import { isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import { ok, type Result } from "../../kit/result.js";
import { DEFAULT_LEASE_TTL_MS } from "../../store/lease.js";
import { StoreAuthority } from "../../store/leader-authority.js";
import { LeaderLease, type LeaderView } from "../../store/leader.js";
import { openStoreEngine } from "../../store/open.js";
import { type Ride, RidingEngine } from "../../store/riding-engine.js";
import type { EventDraft } from "../../core/chain/event.js";
import { NodeClient, type SendHeld } from "../client/node-client.js";
import type { Connector } from "../transport/frames.js";
import {
  type DispatchDeps,
  type DispatchHooks,
  type PlaceExtras,
  type PlaceReport,
  placeOrder,
  STOPPED,
  type Timeouts,
} from "./dispatch.js";
import { DEFAULT_GATE, type GateSettings } from "./gate.js";
import type { PlaceOrderInput } from "./order.js";
import { type ControllerPolicy, PolicyFiles } from "./policy.js";
import { type Prepared, preparePackage } from "./prepare.js";
import { type RehomeResult, rehomeNode } from "./rehome.js";
import { type SettleReport, settleUnsettled } from "./settle.js";
import { importAgentsDb } from "./store-agents.js";
import { ControllerStore, type PlacementRecord, type UnsettledDecision, type WedgedDecision } from "./store.js";
import { type AddResult, type TargetInfo, Targets } from "./targets.js";
import { deadAfterFromEnv } from "./dead-after.js";
import { instanceVerb, type Verb, type VerbOptions, type VerbResult } from "./verbs.js";
import { leaseOfFacts, SentStamps, type SettleSend } from "./watch-stamps.js";
import { MoveRecords } from "./move-records.js";
import { InFlightPlacements } from "./in-flight.js";
import type { MoverDeps } from "./mover.js";
import type { NodeAdminDeps } from "./node-admin.js";
import { packagePolicyOf } from "./package-policy.js";
import type { KeepAccess } from "./keep-access.js";
import {
  behindReason,
  editRevocations,
  publicationOf,
  type PushOutcome,
  pushRevocations,
  type RevokeAnswer,
} from "./revocation-push.js";
import { type PlacePreview, previewOrder } from "./preview.js";

export const CONTROLLER_DB = "controller.db";

export interface ControllerOptions {
  /** Holds peers.json, signers.json, permits.json, revocations.json and the package store. */
  readonly dataDir: string;
  /** Default `<dataDir>/controller.db`. */
  readonly dbPath?: string;
  /**
   * Where the state lives (issue 20): a `postgres://…` address, or a SQLite file (`sqlite:PATH` or a path). Default:
   * `dbPath` (SQLite in the home). The CLI passes `--database` / `$BERTH_DATABASE_URL` (src/cli/database.ts).
   */
  readonly database?: string;
  readonly key: SigningKey;
  readonly connector: Connector;
  readonly clock?: () => number;
  readonly timeouts?: Partial<Timeouts>;
  readonly weights?: Partial<ScoringWeights>;
  readonly gate?: Partial<GateSettings>;
  /** §8.2 `dead_after`; default `$BERTH_DEAD_AFTER_MS`, else DEFAULT_DEAD_AFTER_MS (120 s). */
  readonly deadAfterMs?: number;
  /** Crash-test seams (§18.3); never set in production. */
  readonly hooks?: DispatchHooks;
}

// Issue 35: in their own file, so the read-only lists (stored-reads.ts) load them without the controller.
export { ControllerError } from "./dead-after.js";

export class MeshController {
  readonly controllerId: string;
  readonly store: ControllerStore;
  /** Issue 16: the last stamped request and the advertised lease of each node (watch-stamps.ts). */
  readonly stamps: SentStamps;
  /** Issue 16: cordons, forgets, stored orders and moved records (move-records.ts). */
  readonly moves: MoveRecords;
  /** The `onSend` every NodeClient built with this controller's key must carry (the agents layer's included). */
  readonly onSend = (nodeId: string, issuedAtMs: number): Promise<SettleSend | SendHeld> =>
    this.stamps.record(nodeId, issuedAtMs);
  /** Issue 20: the store id and leader epoch every request to a node carries (src/store/leader-authority.ts). */
  readonly authority: StoreAuthority;
  /** Issue 38: the checkpoint and proofs this controller shows the nodes that witness it. */
  readonly witnessClaims: WitnessClaims;
  private readonly targetSet: Targets;
  private readonly policyFiles: PolicyFiles;
  private readonly deps: DispatchDeps;
  private settling: Promise<SettleReport> | null = null;
  /** Issue 20: set by `lead()` in a long-lived controller (`berth serve`); CLI processes never lead. */
  private leadership: LeaderLease | null = null;
  /** Renews the owner lease while the controller is open (a reader on another host judges it by its TTL). */
  private renewal: NodeJS.Timeout | null = null;

  private constructor(
    o: ControllerOptions,
    private readonly engine: RidingEngine,
    store: ControllerStore,
    authority: StoreAuthority,
  ) {
    const clock = o.clock ?? Date.now;
    this.controllerId = nodeIdOf(o.key.publicKey);
    this.store = store;
    const timeouts: Timeouts = { callMs: 20_000, placeMs: 280_000, describeMs: 5_000, ...o.timeouts };
    this.authority = authority;
    // A leader sends its own epoch (and nothing mutating once it may no longer act); anyone else the store's current.
    const authorityFor = (method: string) =>
      this.leadership ? this.leadership.authorityFor(method) : this.authority.current();
    // Issue 16: every request this process stamps is recorded before it leaves (the node lease's rule 4).
    this.stamps = new SentStamps(engine);
    const onSend = this.onSend;
    // Issue 38: every request but describe carries the newest checkpoint to a node that witnesses (chain/witness-claim.ts).
    this.witnessClaims = new WitnessClaims(engine, o.key, store.chain.chainId);
    const checkpoint = (held: number | null) => this.witnessClaims.claimFor(held);
    const client = new NodeClient({
      key: o.key,
      connector: o.connector,
      clock,
      authority: authorityFor,
      onSend,
      checkpoint,
    });
    const describer = new NodeClient({
      key: o.key,
      connector: o.connector,
      clock,
      timeoutMs: timeouts.describeMs,
      authority: authorityFor,
      onSend,
      checkpoint,
    });
    const onFacts = (nodeId: string, facts: JsonObject) => this.stamps.recordLease(nodeId, leaseOfFacts(facts));
    this.targetSet = new Targets(
      this.store,
      client,
      describer,
      clock,
      o.deadAfterMs ?? deadAfterFromEnv(process.env),
      onFacts,
    );
    this.policyFiles = new PolicyFiles(o.dataDir, () => this.store.lastPolicyLoads());
    this.moves = new MoveRecords(this.store, clock);
    this.deps = {
      store: this.store,
      targets: this.targetSet,
      policyFiles: this.policyFiles,
      dataDir: o.dataDir,
      controllerId: this.controllerId,
      clock,
      weights: weightsOf(o.weights),
      gate: { ...DEFAULT_GATE, ...o.gate },
      timeouts,
      hooks: o.hooks ?? {},
      readPolicy: (learn) => this.readPolicy(learn),
      moves: this.moves,
      inFlight: new InFlightPlacements(),
      revocationLag: async (nodes, policy, push) => {
        const lag = new Map<string, string>();
        for (const o of await this.pushRevocationsTo(nodes, policy, push))
          if (o.kind === "behind") lag.set(o.node, behindReason(o));
        return lag;
      },
    };
  }

  /**
   * Issue 33: pushes the controller's published revocation list to each node that has not acknowledged it (no request
   * to a node that has). A list that cannot be published (generation reused with other content) is pushed nowhere.
   */
  async pushRevocationsTo(nodes: readonly string[], policy?: ControllerPolicy, push = true): Promise<PushOutcome[]> {
    const pol = policy ?? (await this.readPolicy(false));
    if (pol.revocations === null) return [];
    const published = await publicationOf(this.store, pol.revocations, this.deps.clock);
    if (!published.ok) return [];
    return pushRevocations(
      { store: this.store, targets: this.targetSet, clock: this.deps.clock, callTimeoutMs: this.deps.timeouts.callMs },
      published.value,
      nodes,
      push,
    );
  }

  /**
   * `berth revoke` / `berth unrevoke` (issue 33): the controller's list edited (a new generation), each subject
   * chained, the generation published, then pushed to every known node at once; a node that does not answer gets it
   * at its next contact and is refused placements until then.
   */
  async revoke(edit: Parameters<typeof editRevocations>[3]): Promise<Result<RevokeAnswer>> {
    await this.readPolicy(false);
    const done = await editRevocations(this.deps.dataDir, this.store, this.deps.clock, edit);
    if (!done.ok) return done;
    const known = (await this.targetSet.list()).map((t) => t.node_id).filter((n): n is string => n !== null);
    for (const n of known) if (!this.targetSet.described(n)) await this.targetSet.refresh(n);
    const nodes = await pushRevocations(
      { store: this.store, targets: this.targetSet, clock: this.deps.clock, callTimeoutMs: this.deps.timeouts.callMs },
      done.value.pub,
      known,
    );
    return ok({ generation: done.value.pub.generation, changed: done.value.changed, nodes });
  }

  /** §14.2 steps 1–4. Throws if the chain fails its start-up check: a controller never runs on a broken record. */
  static async open(o: ControllerOptions): Promise<MeshController> {
    if (!existsSync(o.dataDir)) mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
    // Issue 19: every transaction on the store can carry a flow's ride (an API call's `api.call` request, rideEvent).
    const engine = new RidingEngine(
      await openStoreEngine({ database: o.database, sqlitePath: o.dbPath ?? join(o.dataDir, CONTROLLER_DB) }),
    );
    try {
      // Chain.open is the start-up check (spec/audit-chain.md §7): it verifies from the newest valid checkpoint and throws,
      // naming the seq, when the chain does not verify. Not the whole chain again: every CLI call opens the
      // controller, and a full verify grows with history (a minute at 10,000 placements, bench/controller/memory.ts).
      const clock = o.clock ?? Date.now;
      const chain = await EngineChain.open(engine, o.key, "controller", clock, checkpointPolicyFromEnv());
      const store = await ControllerStore.open(engine, chain, clock);
      // Issue 20: the agent registry is the store's; a home's older agents.db is taken in once (store-agents.ts).
      await importAgentsDb(store, o.dataDir, clock);
      const controller = new MeshController(o, engine, store, await StoreAuthority.open(engine, clock));
      await controller.targetSet.syncStored();
      await controller.resolveInterrupted();
      controller.renewal = setInterval(() => {
        // busy or closing: the next tick renews
        controller.store.renewLease().catch(() => undefined);
      }, DEFAULT_LEASE_TTL_MS / 3);
      controller.renewal.unref();
      return controller;
    } catch (error) {
      await engine.close();
      throw error;
    }
  }

  /**
   * §14.2 step 4, for decisions whose owner is provably gone (issue 21): a live owner's decision (another CLI
   * process, the server) is never interrupted; it is left to finish. Run at open and before every settle.
   */
  private async resolveInterrupted(): Promise<number> {
    let resolved = 0;
    for (const { decision: d, verdict, sending } of await this.store.ownedDecisions()) {
      if (verdict.alive || d.owner_id === this.store.lease.owner_id) continue;
      const mayBeOut = sending !== null || d.state !== "dispatching";
      const done = await this.store.commitInterrupted(d.id, mayBeOut, (why, state) =>
        mayBeOut
          ? {
              source: "placement",
              kind: "workload.refuse",
              payload: {
                phase: "interrupted",
                decision_id: d.id,
                reason:
                  state === "settling"
                    ? "controller restarted while settling"
                    : "controller restarted while a request may have been in flight",
                owner: why,
                outcome: "indeterminate",
                next: STOPPED,
              },
            }
          : {
              source: "placement",
              kind: "workload.refuse",
              payload: {
                phase: "interrupted",
                decision_id: d.id,
                reason: "controller restarted before dispatch",
                owner: why,
                outcome: null,
                next: null,
              },
            },
      );
      if (done) resolved++;
    }
    return resolved;
  }

  /** §14.2 step 5: describe every target with its stored key, then settle. */
  async start(): Promise<SettleReport> {
    await this.readPolicy(true);
    await this.targetSet.refreshAll();
    return this.settleReport();
  }

  /** Reads the policy files, chains what changed, and applies the peers file to the targets. */
  private async readPolicy(learn: boolean): Promise<ControllerPolicy> {
    // Another process (the CLI beside the HTTP server) may have added a target or changed a tier since.
    await this.targetSet.syncStored();
    const { policy, events } = await this.policyFiles.read();
    await this.store.appendAll(events);
    await this.targetSet.syncPeers(policy.peers, learn);
    return policy;
  }

  // ---- the API the CLI and the HTTP server call -------------------------------------------------------------

  /**
   * Issue 19: `draft` appended at the start of the first write transaction `ride.run(fn)` makes on this store (or
   * by `ride.commit()`), in that transaction: the HTTP API's `api.call` request without a commit of its own.
   */
  rideEvent(draft: EventDraft): Ride {
    return this.engine.ride(async (tx) => {
      await this.store.chain.append(tx, draft);
    });
  }

  /**
   * §9. Unsettled decisions are settled first when there are any (§10.2 triggers on every valid describe of their
   * target, and a placement describes every target): a healed partition releases or adopts before a new decision.
   */
  async place(order: PlaceOrderInput, extras: PlaceExtras = {}): Promise<PlaceReport> {
    if ((await this.store.unsettled()).length > 0) await this.settleReport();
    return placeOrder(this.deps, order, extras);
  }

  /** Issue 36, `berth deploy --dry-run`: what `place(order)` would decide now, with nothing written or sent (preview.ts). */
  previewPlace(order: PlaceOrderInput): Promise<PlacePreview> {
    return previewOrder(this.deps, order);
  }

  placements(): Promise<PlacementRecord[]> {
    return this.store.placements();
  }

  unsettled(): Promise<UnsettledDecision[]> {
    return this.store.unsettled();
  }

  /** §10.2: returns the number of instances adopted. */
  async settleUnsettled(): Promise<number> {
    return (await this.settleReport()).adopted;
  }

  /** One settle at a time; a caller arriving during a settle waits for it and then runs its own. */
  async settleReport(): Promise<SettleReport> {
    while (this.settling) await this.settling.catch(() => undefined);
    // A process that died since this one opened (a CLI killed mid-deploy beside the server) left its decisions owned.
    await this.resolveInterrupted();
    const run = settleUnsettled(this.store, this.targetSet, this.deps.clock, this.deps.timeouts.callMs);
    this.settling = run;
    try {
      return await run;
    } finally {
      this.settling = null;
    }
  }

  async instance(verb: Verb, instanceId: string, opts: VerbOptions = {}): Promise<VerbResult> {
    const r = await instanceVerb(
      {
        store: this.store,
        targets: this.targetSet,
        controllerId: this.controllerId,
        gate: this.deps.gate,
        callTimeoutMs: this.deps.timeouts.callMs,
        readPolicy: (learn) => this.readPolicy(learn),
        settle: () => this.settleUnsettled(),
      },
      verb,
      instanceId,
      opts,
    );
    // Issue 35: a stop or start changes what the lists that ask no node should say; its node is asked once, now.
    if (r.kind === "ok" && (verb === "stop" || verb === "start")) await this.observeNode(r.node);
    return r;
  }

  /**
   * One status of the node, recorded as its instances' observations (recordObservations). Never throws: what it could
   * not learn (no answer, the store refused the write) the next observer records.
   */
  async observeNode(nodeId: string): Promise<void> {
    try {
      const r = await this.targetSet.call(
        nodeId,
        "status",
        { instance_id: null, include_departed: false },
        { timeoutMs: this.deps.timeouts.callMs },
      );
      if (r.kind === "ok")
        await this.recordObservations([{ nodeId, rows: statusRowsOf(r.result).filter(isInstanceRow) }]);
    } catch {
      // An observation is a courtesy to the lists, never a reason for the verb that asked to fail.
    }
  }

  /** Adds a target by address: trust on first use, or a describe that must be answered by `key`. */
  async addTarget(addr: string, tier: Tier | null = null, key: string | null = null): Promise<AddResult> {
    await this.readPolicy(false);
    return this.targetSet.add(addr, { key, tier, source: "api" });
  }

  /** `berth node rehome` (issue 20): moves the node's binding of this key to this store, chained on both sides. */
  async rehome(ref: string, reason: string, operator: JsonObject): Promise<RehomeResult> {
    await this.readPolicy(false);
    return rehomeNode(
      {
        store: this.store,
        targets: this.targetSet,
        storeId: this.authority.storeId,
        callTimeoutMs: this.deps.timeouts.callMs,
      },
      ref,
      reason,
      operator,
    );
  }

  /** `peer.tier` by the API. `ref` is an address or a node id. */
  setTier(ref: string, tier: Tier): Promise<boolean> {
    return this.targetSet.setTier(ref, tier, "api");
  }

  /**
   * Issue 37 (F5): every target this store knows, with its liveness judged from the store now: targets another
   * process added since are learned first (the store re-read), nothing is contacted and no file read.
   */
  async knownTargets(): Promise<TargetInfo[]> {
    await this.targetSet.syncStored();
    return this.targetSet.list();
  }

  /** Every known target, with the peers file re-read first (tiers only; nothing is contacted). */
  async targets(): Promise<TargetInfo[]> {
    await this.readPolicy(false);
    return this.targetSet.list();
  }

  /**
   * `berth audit witnesses` (issue 38): every known target described now, and per node the newest checkpoint of this
   * controller's chain it holds, judged against this store's chain (core/mesh/witness-report.ts).
   */
  async witnesses(): Promise<WitnessReport> {
    await this.targetSet.refreshAll();
    const head = await this.witnessClaims.latest();
    const rows: WitnessRow[] = [];
    for (const t of this.targetSet.witnessed()) {
      const held = t.witness;
      const ours = held && held.size > 0 ? await this.witnessClaims.rootAt(held.size) : null;
      rows.push(witnessRow(t, head, ours, checkpointOrigin(this.store.chain.chainId)));
    }
    return {
      chain_id: this.store.chain.chainId,
      checkpoint: head ? { size: head.size, root: head.root.toString("base64"), note: head.note } : null,
      nodes: rows,
    };
  }

  /**
   * Describes every known target now (liveness, boot ids, facts). `reuseSinceMs` (issue 35): a target described since
   * then (or being described, by a describe sent since then) is not described again.
   */
  async refreshTargets(reuseSinceMs?: number): Promise<TargetInfo[]> {
    await this.readPolicy(true);
    await this.targetSet.refreshAll(reuseSinceMs);
    if ((await this.store.unsettled()).length > 0) await this.settleReport();
    return this.targetSet.list();
  }

  /** Issue 36, a plan before a deploy: every known target described now, with nothing settled (refreshTargets settles). */
  async describeTargets(): Promise<TargetInfo[]> {
    await this.readPolicy(true);
    await this.targetSet.refreshAll();
    return this.targetSet.list();
  }

  /**
   * `berth serve`'s lifecycle tick (issue 16): describes every known target with its stored key, so the stored
   * liveness, boot ids and facts stay fresh. It never places, unloads or settles anything; a describe that changes
   * nothing chains nothing (only a changed policy file, a newly listed peer or a refused key is chained).
   */
  async watchTargets(reuseSinceMs?: number): Promise<void> {
    const policy = await this.readPolicy(true);
    await this.targetSet.refreshAll(reuseSinceMs);
    // Issue 33: a node that was unreachable gets the latest revocation list at its first answer (its next contact).
    const answered = (await this.targetSet.list())
      .filter((t) => t.node_id !== null && this.targetSet.described(t.node_id))
      .map((t) => t.node_id as string);
    await this.pushRevocationsTo(answered, policy);
  }

  /**
   * Issue 37: the nodes this store knows as targets whose accepted facts advertise a lease, with that lease. A target
   * added by another process since is learned first (the store's targets are re-read).
   */
  async leasedNodes(): Promise<Array<{ readonly node_id: string; readonly lease_ms: number }>> {
    await this.targetSet.syncStored();
    const known = new Set(
      (await this.targetSet.list()).flatMap((t) => (t.node_id !== null && t.key !== null ? [t.node_id] : [])),
    );
    return (await this.stamps.leased()).filter((n) => known.has(n.node_id));
  }

  /**
   * Issue 37: renews this controller's lease on one node by describing it with its stored key: a read, which every
   * server of the store may send, leader or not, and which is stamped in the store before it leaves like every
   * request (the node lease's rule 4), so the leader's judgement of a lease counts it. Whether the node answered.
   */
  renewNodeLease(nodeId: string): Promise<boolean> {
    // Issue 35: a describe of the node already in flight was stamped before it left, which is all a renewal is.
    return this.targetSet.refreshShared(nodeId);
  }

  /**
   * Issue 16: what the keep loop's ports read and call (keep-ports.ts): the loop's only way in, so it acts
   * through the same verbs, chain and targets as every other caller.
   */
  keepAccess(): KeepAccess {
    // Issue 35: only the terms the loop judges by are kept (`restart`, `pin`; keep-ports.ts placementView), the policy
    // as the one shared constant string: whole orders, about 500 bytes each, were 23 MiB of the server at 50,000 agents.
    const orderOf = (payload: JsonObject | null): JsonObject | null => {
      const order = payload?.order;
      if (typeof order !== "object" || order === null || Array.isArray(order)) return null;
      const { restart, pin } = order as JsonObject;
      return {
        restart: RESTART_POLICIES.find((p) => p === restart) ?? (typeof restart === "string" ? restart : null),
        pin: typeof pin === "string" ? pin : null,
      };
    };
    // Issue 35: a chained decision never changes, nor does a package in the content-addressed package store: each is
    // read and parsed once by this loop, not once per agent per pass. The caches hold what the last pass needed.
    let orders = new Map<string, JsonObject | null>();
    const policies = new Map<string, { migratable: boolean; sticky: boolean }>();
    return {
      clock: this.deps.clock,
      placements: () => this.store.placements(),
      chainedOrder: async (decisionId) =>
        orders.get(decisionId) ?? orderOf(await this.store.decisionPayload(decisionId)),
      chainedOrders: async (decisionIds) => {
        const missing = decisionIds.filter((id) => !orders.has(id));
        const read =
          missing.length > 0 ? await this.store.decisionPayloads(missing) : new Map<string, JsonObject | null>();
        const next = new Map<string, JsonObject | null>();
        for (const id of decisionIds)
          next.set(id, orders.has(id) ? (orders.get(id) ?? null) : orderOf(read.get(id) ?? null));
        orders = next;
        return next;
      },
      liveness: async (nodeId) => {
        const info = await this.targetSet.byNode(nodeId);
        return info === null
          ? { liveness: "unknown", dead_at_ms: null }
          : { liveness: info.liveness, dead_at_ms: this.targetSet.deadAt(info) };
      },
      stamps: (nodeId) => this.stamps.of(nodeId),
      // The call timeout every other status of the controller takes (Timeouts.callMs, §4.9's 20 s by default).
      status: (nodeId) =>
        this.targetSet.call(
          nodeId,
          "status",
          { instance_id: null, include_departed: false },
          { timeoutMs: this.deps.timeouts.callMs },
        ),
      instance: (verb, instanceId, opts) => this.instance(verb, instanceId, opts),
      append: async (draft) => {
        await this.store.appendAll([draft]);
      },
      moves: this.moves,
      mover: this.moverDeps(),
      store: this.store,
      packagePolicy: (packageId) => {
        const known = policies.get(packageId);
        if (known) return known;
        // An unreadable manifest is read again next time (it may yet be copied in); a read one is kept.
        const read = packagePolicyOf(this.deps.dataDir, packageId);
        if (read) policies.set(packageId, read);
        return read;
      },
    };
  }

  /** Issue 16: what moving an agent needs (mover.ts): the same place() and targets as every other caller. */
  moverDeps(): MoverDeps {
    return {
      moves: this.moves,
      targets: this.targetSet,
      place: (order, extras) => this.place(order, extras),
      processEnv: process.env,
      callTimeoutMs: this.deps.timeouts.callMs,
    };
  }

  /** Issue 16: what `berth node cordon|uncordon|forget|drain` need (node-admin.ts); the peers file is re-read first. */
  async nodeAdmin(): Promise<NodeAdminDeps> {
    const policy = await this.readPolicy(false);
    const listed = new Set(policy.peers.ok ? (policy.peers.value ?? []).map((e) => e.addr) : []);
    return {
      store: this.store,
      targets: this.targetSet,
      moves: this.moves,
      mover: this.moverDeps(),
      instance: (verb, id, opts) => this.instance(verb, id, opts),
      clock: this.deps.clock,
      peersFileLists: (addr) => listed.has(addr),
    };
  }

  /**
   * Issue 35: records what verified status answers said of the instances placed on their nodes (a listed row, or
   * absent), seen now, so the lists that ask no node show it with its age. Nodes that gave no verified answer are left
   * out: their instances keep what was seen of them last.
   */
  async recordObservations(
    answered: ReadonlyArray<{
      readonly nodeId: string;
      readonly rows: ReadonlyArray<ObservedRow & { readonly instance_id: string }>;
    }>,
  ): Promise<void> {
    if (answered.length === 0) return;
    const now = this.deps.clock();
    const byNode = new Map(answered.map((a) => [a.nodeId, new Map(a.rows.map((r) => [r.instance_id, r]))]));
    const placed = (await this.store.placements()).filter((p) => byNode.has(p.node_id));
    await this.store.recordObservations(
      placed.map((p) =>
        observedInstanceOf(p.instance_id, p.node_id, byNode.get(p.node_id)?.get(p.instance_id) ?? null, now),
      ),
    );
  }

  /** Waits for the describes a placement started behind itself (Targets.refreshStale). */
  describesBehind(): Promise<void> {
    return this.targetSet.settled();
  }

  /** The engine's view of every learned target: tier, liveness and the facts last accepted (the API's node list). */
  nodeViews(): Promise<NodeView[]> {
    return this.targetSet.views();
  }

  /** Verifies a package directory against this controller's signers and revocations and copies it into its store. */
  async registerPackage(dir: string): Promise<Prepared> {
    const policy = await this.readPolicy(false);
    return preparePackage(dir, this.deps.dataDir, policy);
  }

  /** Decisions a store from before issue 21 left wedged (unsettled while placed): `berth doctor --repair` mends them. */
  wedged(): Promise<WedgedDecision[]> {
    return this.store.wedged();
  }

  /** `berth doctor --repair`: each wedged decision is marked placed (its placement is the truth), chained with who. */
  async repairWedged(operator: JsonObject): Promise<WedgedDecision[]> {
    const found = await this.store.wedged();
    for (const w of found) await this.store.commitRepair(w, operator);
    return found;
  }

  /**
   * Issue 20: competes for the store's leadership (src/store/leader.ts) and keeps it while it can renew. Only the
   * leader sends mutating requests to nodes; `isLeader()` is the hook the keep tick and the API's writes ask.
   */
  lead(o: {
    readonly address: string | null;
    readonly ttlMs?: number;
    readonly onChange?: (epoch: number | null, why: string) => void;
  }): LeaderLease {
    if (this.leadership) return this.leadership;
    this.leadership = new LeaderLease({
      engine: this.engine,
      storeId: this.authority.storeId,
      ownerId: this.store.lease.owner_id,
      address: o.address,
      ...(o.ttlMs === undefined ? {} : { ttlMs: o.ttlMs }),
      ...(o.onChange ? { onChange: o.onChange } : {}),
    });
    this.leadership.start();
    return this.leadership;
  }

  /** The leadership's timing (TTL, renewal interval), or null for a process that does not compete. */
  leaderTiming(): LeaderLease["timing"] | null {
    return this.leadership?.timing ?? null;
  }

  /** Whether this process leads the store now (false for a process that does not compete, e.g. a CLI call). */
  isLeader(): boolean {
    return this.leadership?.isLeader() ?? false;
  }

  /** What this process knows of the leadership (null when it does not compete). */
  leaderView(): LeaderView | null {
    return this.leadership?.view() ?? null;
  }

  /** The leadership with the leader row read fresh (LeaderLease.currentView), for a follower's answer to a write. */
  async currentLeaderView(): Promise<LeaderView | null> {
    return (await this.leadership?.currentView()) ?? null;
  }

  async close(): Promise<void> {
    // Released first: a follower takes over at once instead of after the TTL.
    await this.leadership?.stop();
    this.leadership = null;
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
    // Issue 35: describes started behind a placement record their contacts in this store: they end first.
    await this.targetSet.settled();
    if (this.engine.closed) return;
    // A clean close gives up the lease: decisions this process left open are recoverable at once by any other.
    // When it fails the lease stays; its pid will be judged gone once this process exits.
    await this.store.releaseLease().catch(() => undefined);
    await this.engine.close();
  }
}

/** The scoring weights, parsed once when the controller is made (issue 19: never again per decision). */
function weightsOf(given: Partial<ScoringWeights> | undefined): ScoringWeights {
  const parsed = scoringWeightsSchema.safeParse(given ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(
    `the controller's scoring weights are malformed (weights.${issue?.path.join(".")}: ${issue?.message}); fix the weights it was given`,
  );
}
