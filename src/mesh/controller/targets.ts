/**
 * (About 710 lines: trust on first use, key demotion, liveness and the one `call` share one target record and
 * must decide together which key an answer needs; split them only with that record.)
 *
 * The controller's targets (spec/mesh.md §3.3–§3.5, §4.7, §6.2, §8.2): which nodes it knows, under which key, at which
 * tier, how alive they are, and the one way to call them.
 *
 * Structural rules:
 * - trust on first use happens only when an address has no stored key: the key that signed the first valid
 *   describe answer is stored with the address (chained `peer.add`, how `tofu`). From then on every call requires
 *   that key; an answer signed by another key is no valid answer, the target is marked unreachable and
 *   `peer.key_refused` is chained once per distinct offered key. A new key is learned only when the operator lists
 *   it in the peers file (how `listed_key`). Listing a new key for an address demotes the old key at once
 *   (`peer.key_demoted`, tier `discovered`): until the new key answers, the old one is trusted with nothing
 *   (issue 12), and its instances can still be stopped and unloaded.
 * - tiers are the operator's: from the API or the peers file (re-read on every use); never from the node. A target
 *   that drops out of the peers file is demoted to `discovered`, and an unreadable peers file demotes every target
 *   until a valid one is loaded (fail closed). Targets are never forgotten, so a demoted target's instances can
 *   still be stopped and unloaded.
 * - liveness comes from direct contact only, and lives in the store (issue 16): every describe and call records
 *   its outcome there (`recordContact`: last valid answer, unreachable since), and every read judges the stored
 *   record with `judgeNodeLiveness` (src/core/mesh/node-liveness.ts), so a fresh CLI process, the API and the
 *   dashboard show what the last contact by any process showed.
 * - after a controller restart no target has a boot id until a describe answered by its stored key (§14.2 step 2):
 *   boot ids and facts live in memory only, so nothing is sent on the strength of another process's contact.
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Tier } from "../../core/identity/tier.js";
import { DEFAULT_DEAD_AFTER_MS, deadAtMs, judgeNodeLiveness } from "../../core/mesh/node-liveness.js";
import type { Liveness, NodeFacts, NodeView } from "../../core/placement/index.js";
import type { CallOptions, CallResult, NodeClient, TargetRef } from "../client/node-client.js";
import { err, ok, type Result } from "../../kit/result.js";
import { acceptFacts } from "./facts.js";
import { Bounded, FAN_OUT, fanOut } from "./fan-out.js";
import type { PeersLoad } from "./policy.js";
import type { ContactOutcome, ControllerStore, StoredContact, StoredTarget, TierSource } from "./store.js";

interface Live {
  stored: StoredTarget;
  bootId: string | null;
  facts: NodeFacts | null;
  factsSeq: number | null;
  factsExpireAtMs: number;
  factsRejected: string | null;
  lastSentMs: number | null;
  /** When a describe by this process last answered validly; null until then and again after any failed contact. */
  describedAtMs: number | null;
  /** When the describe that last answered validly was sent (issue 35: `refreshAll(since)` reuses it if at or after). */
  describeSentMs: number | null;
  refusedKeys: Set<string>;
  /**
   * Issue 38: what the node's last describe said it holds of this controller's checkpoints (a tree size, or null for
   * none yet), raised by every answered call that carried one; undefined when the node does not witness.
   */
  witness?: WitnessHeld | null;
  /**
   * Issue 35: the describe `refreshStale` has in flight for this target. Concurrent placements join it instead of
   * each describing every stale target again (64 placements in flight made 64 describes of each node per 10 s).
   */
  describing?: Promise<boolean> | undefined;
  /** When the describe in `describing` was started. */
  describingSinceMs?: number;
  /** Issue 35: this process's first failed contact since the target last answered (null while it answers). */
  silentSinceMs?: number | null;
  /** Issue 35: this process's last failed contact with the target. */
  failedAtMs?: number | null;
}

/** Issue 38: the controller checkpoint a node said it holds (`describe` result member `witness`). */
export interface WitnessHeld {
  readonly origin: string;
  readonly size: number;
  /** base64, null when only the size is known (the node accepted a checkpoint this process sent) */
  readonly root: string | null;
}

/** Reads the describe result's `witness` member: undefined when absent (a node that does not witness). */
export function witnessOfDescribe(result: JsonObject): WitnessHeld | null | undefined {
  if (!("witness" in result)) return undefined;
  const w = result.witness;
  if (w === null || typeof w !== "object" || Array.isArray(w)) return null;
  const { origin, size, root } = w as Record<string, unknown>;
  if (typeof origin !== "string" || typeof size !== "number" || !Number.isSafeInteger(size) || typeof root !== "string")
    return null;
  return { origin, size, root };
}

/**
 * Issue 19 (spec/mesh.md §9.2 step 3): how long a placement reuses the facts of a target this process described,
 * rather than describing it again. The same 10 s `berth serve` describes every target at (§8.4).
 */
export const FACTS_REUSE_MS = 10_000;

/** The methods after which a node's facts are not reused (issue 33 item 4): they end or remove an instance. */
const FREES_CAPACITY: ReadonlySet<string> = new Set(["stop", "unload"]);

/** What the CLI and the API show for one target. */
export interface TargetInfo {
  readonly addr: string;
  readonly node_id: string | null;
  readonly key: string | null;
  readonly name: string | null;
  /** The tier in effect (the stored tier, or `discovered` while the peers file is unreadable). */
  readonly tier: Tier;
  readonly tier_source: TierSource;
  readonly liveness: Liveness;
  /** Since when no contact has had a valid answer (null while reachable): `dead` once `dead_after` has passed. */
  readonly unreachable_since_ms: number | null;
  readonly boot_id: string | null;
  readonly learned_ms: number | null;
  readonly last_ok_ms: number | null;
  readonly facts_expire_at_ms: number | null;
  readonly error: string | null;
}

/** The target as learned (or refreshed), or why it was not. */
export type AddResult = Result<TargetInfo>;

export class Targets {
  private readonly live = new Map<string, Live>();
  /** Issue 35: node id → its target, a cache checked on every read (liveByNode); a miss falls back to a scan. */
  private readonly byNodeId = new Map<string, Live>();
  /** Set while the peers file is unreadable: every target counts as `discovered`. */
  private demotedAll: string | null = null;
  /**
   * Issue 35: at most FAN_OUT describes of known targets in flight at once, whoever asks (a tick, a takeover, the
   * lease keeper's round, placements): at `berth serve`'s start these three asked for 1,000 nodes each together, and
   * thousands of TLS handshakes at once held the event loop for seconds (the API unanswered, describes timing out,
   * the leader lease lost). A describe's timeout counts from when it is sent, not from when it was asked for.
   */
  private readonly describes = new Bounded(FAN_OUT);

  constructor(
    private readonly store: ControllerStore,
    private readonly client: NodeClient,
    private readonly describer: NodeClient,
    private readonly clock: () => number,
    private readonly deadAfterMs = DEFAULT_DEAD_AFTER_MS,
    /** Issue 16: told the raw facts of every accepted describe (the lease a node advertises, watch-stamps.ts). */
    private readonly onFacts: (nodeId: string, facts: JsonObject) => Promise<void> = async () => undefined,
  ) {}

  /**
   * Re-reads the stored targets, for a long-lived controller (the HTTP server) beside CLI processes that add nodes or
   * change tiers in the same database: new rows join, changed rows replace the stored part; what was observed stays.
   * The first call loads every stored target.
   */
  async syncStored(): Promise<void> {
    // Issue 36 (`berth nodes remove`): a target another process removed leaves this one too. Only those held before the
    // read: a target this process learns while the read runs is stored before it is held, and must stay.
    const heldBefore = new Set(this.live.keys());
    const stored = await this.store.targets();
    const addrs = new Set(stored.map((t) => t.addr));
    for (const addr of heldBefore) if (!addrs.has(addr)) this.live.delete(addr);
    for (const t of stored) {
      const l = this.live.get(t.addr);
      if (l === undefined) this.live.set(t.addr, fresh(t));
      else if (
        l.stored.node_id !== t.node_id ||
        l.stored.key !== t.key ||
        l.stored.tier !== t.tier ||
        l.stored.tier_source !== t.tier_source
      )
        l.stored = t;
    }
  }

  // ---- reads ------------------------------------------------------------------------------------------------

  async list(): Promise<TargetInfo[]> {
    const contacts = await this.store.contacts();
    return [...this.live.values()].map((l) => this.infoWith(l, contacts));
  }

  async byNode(nodeId: string): Promise<TargetInfo | null> {
    const l = this.liveByNode(nodeId);
    return l ? this.info(l) : null;
  }

  async resolve(ref: string): Promise<TargetInfo | null> {
    const l = this.live.get(ref) ?? this.liveByNode(ref);
    return l ? this.info(l) : null;
  }

  /** The judgement of one target's stored contacts now. */
  private judged(
    l: Live,
    contacts: Map<string, StoredContact>,
    now: number,
  ): { contact: StoredContact | undefined; liveness: Liveness } {
    const contact = contacts.get(l.stored.addr);
    return {
      contact,
      liveness: judgeNodeLiveness(contact ?? { last_ok_ms: null, unreachable_since_ms: null }, now, this.deadAfterMs),
    };
  }

  /** Issue 35: when a target silent since `unreachable_since_ms` is judged dead (null: it answers). */
  deadAt(info: Pick<TargetInfo, "unreachable_since_ms">): number | null {
    return deadAtMs(info, this.deadAfterMs);
  }

  /** Whether a describe with the stored key succeeded since the controller started (§12 step 2). */
  described(nodeId: string): boolean {
    const l = this.liveByNode(nodeId);
    return l !== undefined && l.bootId !== null;
  }

  /** The engine's view of every learned target (§8.2). */
  async views(): Promise<NodeView[]> {
    const now = this.clock();
    const contacts = await this.store.contacts();
    const out: NodeView[] = [];
    for (const l of this.live.values()) {
      if (l.stored.node_id === null) continue;
      out.push({
        node_id: l.stored.node_id as NodeView["node_id"],
        tier: this.tierOf(l),
        liveness: this.judged(l, contacts, now).liveness,
        facts: l.facts,
        facts_expire_at_ms: l.facts ? l.factsExpireAtMs : 0,
      });
    }
    return out;
  }

  tierOfNode(nodeId: string): Tier {
    const l = this.liveByNode(nodeId);
    return l ? this.tierOf(l) : "discovered";
  }

  private tierOf(l: Live): Tier {
    return this.demotedAll !== null ? "discovered" : l.stored.tier;
  }

  /** One target's info: its own contact row only (issue 35: reading every target's row for one was nodes² a pass). */
  private async info(l: Live): Promise<TargetInfo> {
    const contact = await this.store.contact(l.stored.addr);
    return this.infoWith(l, new Map(contact ? [[l.stored.addr, contact]] : []));
  }

  private infoWith(l: Live, contacts: Map<string, StoredContact>): TargetInfo {
    const { contact, liveness } = this.judged(l, contacts, this.clock());
    return {
      addr: l.stored.addr,
      node_id: l.stored.node_id,
      key: l.stored.key,
      name: l.facts?.name ?? contact?.name ?? null,
      tier: this.tierOf(l),
      tier_source: l.stored.tier_source,
      liveness,
      unreachable_since_ms: contact?.unreachable_since_ms ?? null,
      boot_id: l.bootId,
      learned_ms: l.stored.learned_ms,
      last_ok_ms: contact?.last_ok_ms ?? null,
      facts_expire_at_ms: l.facts ? l.factsExpireAtMs : null,
      error: contact?.last_error ?? l.factsRejected,
    };
  }

  private liveByNode(nodeId: string): Live | undefined {
    const cached = this.byNodeId.get(nodeId);
    if (cached !== undefined && cached.stored.node_id === nodeId && this.live.get(cached.stored.addr) === cached)
      return cached;
    this.byNodeId.delete(nodeId);
    for (const l of this.live.values()) {
      if (l.stored.node_id === nodeId) {
        this.byNodeId.set(nodeId, l);
        return l;
      }
    }
    return undefined;
  }

  // ---- learning -----------------------------------------------------------------------------------------------

  /**
   * Adds a target by address (§3.3). Without a stored key for the address this is the trust-on-first-use describe
   * (or, with `key`, a describe that must be answered by that key); with a stored key it is a refresh, and a
   * different `key` is refused unless `listed` (the peers file is the only way to change a key).
   */
  async add(
    addr: string,
    opts: { key?: string | null; tier?: Tier | null; source?: TierSource; listed?: boolean } = {},
  ): Promise<AddResult> {
    const known = this.live.get(addr);
    const wantKey = opts.key ?? null;
    if (known?.stored.key && (wantKey === null || wantKey === known.stored.key)) {
      const refreshed = await this.refresh(addr);
      if (opts.tier && opts.tier !== known.stored.tier) await this.setTier(addr, opts.tier, opts.source ?? "api");
      const target = await this.info(known);
      return refreshed ? ok(target) : err(target.error ?? `target ${addr} did not answer`);
    }
    if (known?.stored.key && wantKey !== null && !opts.listed) {
      return err(
        `target ${addr} is known under key ${known.stored.key}; a new key is learned only from the peers file`,
      );
    }
    const d = await this.describer.describe(addr, wantKey, "*");
    if (d.kind !== "described") {
      const why = d.kind === "refused" ? `${d.code}: ${d.reason}` : d.reason;
      if (known) await this.markUnreachable(known, why);
      return err(`describe of ${addr} failed (${why}); the target was not learned`);
    }
    const other = this.liveByNode(d.nodeId);
    if (other && other.stored.addr !== addr) {
      return err(`node ${d.nodeId} is already known at ${other.stored.addr}; one address per node`);
    }
    const tier: Tier = opts.tier ?? known?.stored.tier ?? "discovered";
    const source: TierSource = opts.tier ? (opts.source ?? "api") : (known?.stored.tier_source ?? "default");
    const stored: StoredTarget = {
      addr,
      node_id: d.nodeId,
      key: d.key,
      tier,
      tier_source: source,
      learned_ms: this.clock(),
    };
    await this.store.learnTarget(stored, {
      source: "trust",
      kind: "peer.add",
      payload: { node: d.nodeId, addr, key: d.key, tier, how: wantKey === null ? "tofu" : "listed_key" },
    });
    const l = known ?? fresh(stored);
    l.stored = stored;
    l.refusedKeys.clear();
    this.live.set(addr, l);
    l.witness = witnessOfDescribe(d.result);
    await this.absorb(l, d.bootId, d.facts);
    return ok(await this.info(l));
  }

  /**
   * Issue 36, `berth nodes remove`: the target's row deleted with `event` (node-admin.ts checks it was forgotten
   * first), and this process stops holding it; a later `berth nodes add` of the address is a first contact again.
   */
  async remove(addr: string, event: EventDraft): Promise<void> {
    await this.store.removeTarget(addr, event);
    const l = this.live.get(addr);
    this.live.delete(addr);
    if (l?.stored.node_id) this.byNodeId.delete(l.stored.node_id);
  }

  /** Describes a known target with its stored key (§4.7, §6.2). Returns whether it answered validly. */
  async refresh(addrOrNode: string): Promise<boolean> {
    const l = this.live.get(addrOrNode) ?? this.liveByNode(addrOrNode);
    if (!l || l.stored.key === null || l.stored.node_id === null) return false;
    return this.describes.run(async () => {
      l.lastSentMs = this.clock();
      const first = await this.describeWithKey(l);
      if (first !== "held") return first;
      // Issue 37 (F5): a held node (core/mesh/silent-node.ts) is asked only with a probe that cannot renew its lease;
      // once the probe is answered the hold is over, and the describe goes at once (a node held again is probed next).
      return (await this.probe(l)) && (await this.describeWithKey(l)) === true;
    });
  }

  /** One describe with the stored key, its outcome recorded; `held` when it was not sent (its node is held). */
  private async describeWithKey(l: Live): Promise<boolean | "held"> {
    if (l.stored.key === null || l.stored.node_id === null) return false;
    const sentMs = this.clock();
    const d = await this.describer.describe(l.stored.addr, l.stored.key, l.stored.node_id);
    if (d.kind === "described") {
      l.witness = witnessOfDescribe(d.result);
      await this.absorb(l, d.bootId, d.facts);
      l.describeSentMs = sentMs;
      return true;
    }
    if (d.kind === "unreachable" && d.held === true) return "held";
    await this.noteFailure(l, d);
    return false;
  }

  /**
   * Issue 37 (F5): probes a held node (NodeClient.probe: a describe expired before it leaves, which renews nothing).
   * Any signed answer bound to the probe is direct contact: recorded as such, it ends the hold. No answer is a failed
   * contact like any other. Whether the node answered.
   */
  private async probe(l: Live): Promise<boolean> {
    if (l.stored.key === null || l.stored.node_id === null) return false;
    const r = await this.describer.probe({
      addr: l.stored.addr,
      nodeId: l.stored.node_id,
      key: l.stored.key,
      bootId: null,
    });
    if (r.kind === "ok" || r.kind === "refused") {
      await this.record(l, ok({ at_ms: this.clock(), refusal: null, name: null }));
      return true;
    }
    await this.noteFailure(l, r);
    return false;
  }

  /**
   * Every learned target, concurrently. Issue 35: a target whose describe was sent at or after `sinceMs` (default:
   * now) is not described again: one answered is reused, one in flight is joined. So the describes `berth serve`
   * starts with (the takeover's) serve its first tick too, and every target is described once at start, not twice.
   */
  async refreshAll(sinceMs: number = this.clock()): Promise<void> {
    await fanOut(
      [...this.live.values()].filter((l) => l.stored.key !== null),
      FAN_OUT,
      (l) => this.describeOnce(l, sinceMs),
    );
  }

  /**
   * Issue 37/35: a describe of `addrOrNode` now, or the one already in flight (sent, and so stamped, already): what
   * a lease renewal needs. Whether it answered validly.
   */
  refreshShared(addrOrNode: string): Promise<boolean> {
    const l = this.live.get(addrOrNode) ?? this.liveByNode(addrOrNode);
    return l ? this.describeOnce(l, Number.NEGATIVE_INFINITY) : Promise.resolve(false);
  }

  /**
   * §9.2 step 3 (issue 19): every learned target whose facts this process cannot reuse, concurrently: never described
   * by it, described more than FACTS_REUSE_MS ago, without accepted facts, facts expiring within 60 s (§6.2), or
   * suspect (any contact failed since its last describe). The others' facts carry a validity and a sequence the
   * engine still judges (`facts_expired`), and their liveness is read from the store as for every target.
   */
  async refreshStale(): Promise<void> {
    const now = this.clock();
    const unusable = (l: Live) =>
      l.describedAtMs === null || l.facts === null || l.factsExpireAtMs - now <= 60_000 || l.bootId === null;
    const keyed = [...this.live.values()].filter((l) => l.stored.key !== null);
    // Issue 35: facts only older than the reuse window (still valid by their own expiry, the node answered its last
    // contact, nothing freed on it since) are described again behind the placement, not in front of it: at 1,000 nodes
    // a placement waited for 1,000 describes whenever it came more than 10 s after the last. They are still judged by
    // the engine (facts_expired), liveness is still the store's, and the next placement sees the fresh ones.
    // A target this process has found silent for dead_after, and again within the reuse window, is described behind
    // too: the engine takes no dead node, a dead one rarely answers now, and one that hangs held every placement (and
    // every move off it, at 16 at a time) for the whole describe timeout. The tick's describes see it come back.
    const deadNow = (l: Live) =>
      l.silentSinceMs != null &&
      now - l.silentSinceMs >= this.deadAfterMs &&
      l.failedAtMs != null &&
      now - l.failedAtMs < FACTS_REUSE_MS;
    this.refreshBehind(
      keyed.filter((l) => (unusable(l) ? deadNow(l) : now - (l.describedAtMs ?? 0) >= FACTS_REUSE_MS)),
    );
    // A placement that needs a target described and finds a describe of it already out (another placement's, or one
    // behind) waits for its answer instead of describing it again (issue 35: 64 placements in flight made 64 each).
    await fanOut(
      keyed.filter((l) => unusable(l) && !deadNow(l)),
      FAN_OUT,
      (l) => this.describeOnce(l),
    );
  }

  /** The describes started behind placements (refreshStale), one round at a time; resolves when none is running. */
  private behind: Promise<void> | null = null;

  private refreshBehind(aged: readonly Live[]): void {
    if (aged.length === 0 || this.behind !== null) return;
    this.behind = fanOut(aged, FAN_OUT, (l) => this.describeOnce(l).catch(() => false))
      .catch(() => undefined)
      .finally(() => {
        this.behind = null;
      });
  }

  /** Waits for the describes running behind placements (before the store is closed, and for tests that count them). */
  async settled(): Promise<void> {
    await this.behind;
  }

  /**
   * One describe of `l` at a time: a caller arriving while one is out waits for its answer, if it was started at or
   * after `sinceMs` (a takeover must not take a describe started before it led as its own); else it describes anew.
   */
  private describeOnce(l: Live, sinceMs = Number.NEGATIVE_INFINITY): Promise<boolean> {
    // Answered validly by a describe sent since then (and nothing since made it suspect or freed capacity on it).
    if (
      sinceMs !== Number.NEGATIVE_INFINITY &&
      l.describedAtMs !== null &&
      l.describeSentMs !== null &&
      l.describeSentMs >= sinceMs &&
      l.bootId !== null
    )
      return Promise.resolve(true);
    if (l.describing !== undefined && (l.describingSinceMs ?? Number.NEGATIVE_INFINITY) >= sinceMs) return l.describing;
    const describing = this.refresh(l.stored.addr).finally(() => {
      if (l.describing === describing) l.describing = undefined;
    });
    l.describing = describing;
    l.describingSinceMs = this.clock();
    return describing;
  }

  private async absorb(l: Live, bootId: string, facts: JsonObject): Promise<void> {
    const now = this.clock();
    l.bootId = bootId;
    l.describedAtMs = now;
    const verdict = acceptFacts(facts, l.factsSeq, now);
    if (verdict.kind === "accepted") {
      l.facts = verdict.facts;
      l.factsSeq = verdict.seq;
      l.factsExpireAtMs = verdict.expireAtMs;
      l.factsRejected = null;
      if (l.stored.node_id !== null) await this.onFacts(l.stored.node_id, facts);
    } else if (verdict.kind === "rejected") {
      l.facts = null;
      l.factsRejected = `facts rejected: ${verdict.reason}`;
    }
    await this.record(
      l,
      ok({ at_ms: now, refusal: null, name: verdict.kind === "accepted" ? verdict.facts.name : null }),
    );
  }

  /** Every contact's outcome goes to the store: the one place liveness is judged from. */
  private async record(l: Live, o: ContactOutcome): Promise<void> {
    if (o.ok) l.silentSinceMs = null;
    else {
      l.failedAtMs = o.error.at_ms;
      l.silentSinceMs ??= o.error.at_ms;
    }
    await this.store.recordContact(l.stored.addr, o);
  }

  private async markUnreachable(l: Live, why: string): Promise<void> {
    l.describedAtMs = null;
    await this.record(l, err({ at_ms: this.clock(), reason: why }));
  }

  private async noteFailure(l: Live, r: Exclude<CallResult, { kind: "ok" }>): Promise<void> {
    l.describedAtMs = null; // suspect: the next placement describes it again (refreshStale)
    if (r.kind === "refused") {
      // A valid signed refusal is direct contact: the node is there, it just said no.
      await this.record(l, ok({ at_ms: this.clock(), refusal: `${r.code}: ${r.reason}`, name: null }));
      return;
    }
    await this.markUnreachable(l, r.reason);
    const offered = r.kind === "no_answer" ? r.offered_key : undefined;
    if (offered && l.stored.key !== null && !l.refusedKeys.has(offered)) {
      l.refusedKeys.add(offered);
      // Once per distinct offered key, across controller restarts too: the chain already says so.
      const seen = (await this.store.events({ kind: "peer.key_refused" })).some(
        (e) => e.node === l.stored.node_id && e.offered_key === offered,
      );
      if (seen) return;
      await this.store.appendAll([
        {
          source: "trust",
          kind: "peer.key_refused",
          payload: { node: l.stored.node_id, addr: l.stored.addr, expected_key: l.stored.key, offered_key: offered },
        },
      ]);
    }
  }

  // ---- tiers ------------------------------------------------------------------------------------------------

  /** `peer.tier`, by the API or the peers file. Returns false for an unknown target. */
  async setTier(addrOrNode: string, tier: Tier, source: TierSource): Promise<boolean> {
    const l = this.live.get(addrOrNode) ?? this.liveByNode(addrOrNode);
    if (!l) return false;
    const from = l.stored.tier;
    if (from === tier && l.stored.tier_source === source) return true;
    await this.store.setTier(l.stored.addr, tier, source, {
      source: "trust",
      kind: "peer.tier",
      payload: { node: l.stored.node_id, from, to: tier, by: source === "peers" ? "peers_file" : source },
    });
    l.stored = { ...l.stored, tier, tier_source: source };
    return true;
  }

  /** The peers file lists another key for this address: the stored key keeps no tier above `discovered`. */
  private async demoteReplacedKey(l: Live, listedKey: string): Promise<void> {
    if (l.stored.tier === "discovered" && l.stored.tier_source === "default") return;
    const from = l.stored.tier;
    await this.store.setTier(l.stored.addr, "discovered", "default", {
      source: "trust",
      kind: "peer.key_demoted",
      payload: {
        node: l.stored.node_id,
        addr: l.stored.addr,
        old_key: l.stored.key,
        listed_key: listedKey,
        from,
        to: "discovered",
      },
    });
    l.stored = { ...l.stored, tier: "discovered", tier_source: "default" };
  }

  /**
   * Applies the peers file (§3.5), read just before: tiers for listed entries, demotion of targets the file no
   * longer lists, fail-closed demotion of everyone for an unreadable file, and learning of listed addresses (or
   * listed new keys) not known yet.
   */
  async syncPeers(peers: PeersLoad, learn = true): Promise<void> {
    if (!peers.ok) {
      if (this.demotedAll === null) {
        this.demotedAll = peers.error;
        await this.store.appendAll([
          { source: "trust", kind: "peer.demote_all", payload: { reason: peers.error, demoted: this.live.size } },
        ]);
      }
      return;
    }
    this.demotedAll = null;
    if (peers.value === null) return;
    const listed = new Map(peers.value.map((e) => [e.addr, e]));
    const pending: Array<Promise<unknown>> = [];
    for (const entry of peers.value) {
      const l = this.live.get(entry.addr);
      if (l && l.stored.key !== null && entry.key !== undefined && entry.key !== l.stored.key)
        await this.demoteReplacedKey(l, entry.key);
      if (!l || l.stored.key === null || (entry.key !== undefined && entry.key !== l.stored.key)) {
        if (learn)
          pending.push(
            this.add(entry.addr, { key: entry.key ?? null, tier: entry.tier, source: "peers", listed: true }),
          );
      } else {
        await this.setTier(entry.addr, entry.tier, "peers");
      }
    }
    for (const l of this.live.values()) {
      if (l.stored.tier_source === "peers" && !listed.has(l.stored.addr))
        await this.setTier(l.stored.addr, "discovered", "default");
    }
    await Promise.all(pending);
  }

  // ---- calls ------------------------------------------------------------------------------------------------

  /** Issue 38: what each known target said it holds of this controller's checkpoints (undefined: it does not witness). */
  witnessed(): Array<{
    node_id: string | null;
    addr: string;
    described: boolean;
    witness: WitnessHeld | null | undefined;
  }> {
    return [...this.live.values()].map((l) => ({
      node_id: l.stored.node_id,
      addr: l.stored.addr,
      described: l.bootId !== null,
      witness: l.witness,
    }));
  }

  /** The reference a call needs, or why there is none (nothing is sent then). */
  ref(nodeId: string): TargetRef | string {
    const l = this.liveByNode(nodeId);
    if (!l || l.stored.key === null) return `node ${nodeId} is not a known target`;
    if (l.bootId === null) return `node ${nodeId} has not been described since the controller started`;
    const ref = { addr: l.stored.addr, nodeId, key: l.stored.key, bootId: l.bootId };
    return l.witness === undefined ? ref : { ...ref, witnessed: l.witness?.size ?? null };
  }

  /**
   * One signed call with the stored key. A target not described since the controller started is described first
   * (failure: `unreachable`, nothing sent). A `stale_boot` refusal proves the node did nothing: re-describe and, if
   * the boot changed, resend once with a new nonce and the same decision id (§4.7).
   */
  async call<M extends string>(
    nodeId: string,
    method: M,
    body: JsonObject,
    opts: CallOptions = {},
  ): Promise<CallResult<M>> {
    let ref = this.ref(nodeId);
    if (typeof ref === "string" && this.liveByNode(nodeId)?.stored.key) {
      await this.refresh(nodeId);
      ref = this.ref(nodeId);
    }
    if (typeof ref === "string") return { kind: "unreachable", reason: ref };
    let r = await this.send(ref, method, body, opts);
    // Issue 38: the proof started at another size than the node holds (another process sent it a newer checkpoint):
    // nothing was done; describe again (the answer names the size) and resend once.
    if (r.kind === "refused" && r.code === "witness_proof" && (await this.refresh(nodeId))) {
      const again = this.ref(nodeId);
      if (typeof again !== "string") r = await this.send(again, method, body, opts);
    }
    if (r.kind === "refused" && r.code === "stale_boot") {
      const before = ref.bootId;
      if (await this.refresh(nodeId)) {
        const again = this.ref(nodeId);
        if (typeof again !== "string" && again.bootId !== before) r = await this.send(again, method, body, opts);
      }
    }
    return r;
  }

  private async send<M extends string>(
    ref: TargetRef,
    method: M,
    body: JsonObject,
    opts: CallOptions,
  ): Promise<CallResult<M>> {
    const l = this.liveByNode(ref.nodeId);
    if (l) l.lastSentMs = this.clock();
    const r = await this.client.call(ref, method, body, opts);
    // Issue 33 item 4: a stop or unload (a verb, a purge, a drain's or the loop's teardown, a lost answer's
    // reconcile) frees what the node's facts counted as used; whatever its outcome, the next placement describes the
    // node again instead of reusing facts from before it (FACTS_REUSE_MS), so it weighs the capacity just freed.
    if (l && FREES_CAPACITY.has(method)) l.describedAtMs = null;
    // Issue 37 (F5): a request held before it left (its node unanswered for half its lease) is no contact: nothing to record.
    if (l && !(r.kind === "unreachable" && r.held === true)) {
      if (r.kind === "ok") {
        if (
          r.checkpointSize !== undefined &&
          l.witness !== undefined &&
          (l.witness === null || r.checkpointSize > l.witness.size)
        ) {
          l.witness = { origin: l.witness?.origin ?? "", size: r.checkpointSize, root: null };
        }
        await this.record(l, ok({ at_ms: this.clock(), refusal: null, name: null }));
      } else {
        await this.noteFailure(l, r);
      }
    }
    return r;
  }
}

function fresh(stored: StoredTarget): Live {
  return {
    stored,
    bootId: null,
    facts: null,
    factsSeq: null,
    factsExpireAtMs: 0,
    factsRejected: null,
    lastSentMs: null,
    describedAtMs: null,
    describeSentMs: null,
    refusedKeys: new Set(),
  };
}
