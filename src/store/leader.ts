/**
 * Holding the leadership of a controller store (issue 20; the rules are src/core/mesh/leader-lease.ts, the design
 * src/store/README.md and docs/ha.md). Each `berth serve` runs one `LeaderLease`: every TTL/5 (a follower also at
 * the moment the leader's row lapses, issue 37) it takes or renews the
 * one `berth_leader` row in a write transaction on the store's engine, judged on the database's clock; the winner takes the next epoch
 * from the counter the owner leases use (`berth_lease_epoch`), and renews its owner lease in the same transaction
 * with the leader TTL, so crash recovery on another host judges a dead leader's decisions gone as soon as its
 * leadership is.
 *
 * What it gives the controller: `isLeader()` (the keep tick, the API's writes) and `authorityFor(method)`:
 * a leader's own epoch, never a re-read one (so it is fenced once a successor reached a node); a process that may
 * no longer act sends no mutating request at all (`NotLeader`).
 */
import { hostname } from "node:os";
import { z } from "zod";
import { performance } from "node:perf_hooks";
import {
  DEFAULT_LEADER_TTL_MS,
  judgeLeader,
  type LeaderRow,
  type LeaderTiming,
  leaderTiming,
  liveLeader,
  mayAct,
  nextFollowerStepMs,
} from "../core/mesh/leader-lease.js";
import { type Authority, MUTATING_METHODS } from "../core/protocol/messages.js";
import type { Query, StoreEngine } from "./engine.js";
import { readLeaderEpoch } from "./leader-authority.js";
import { LATE, within } from "./within.js";

/** Milliseconds now on the database's clock (PostgreSQL), or this process's (SQLite: every contender is on this machine). */
async function databaseNow(tx: Query): Promise<number> {
  if (tx.kind === "sqlite") return Date.now();
  const row = await tx.get<{ now_ms: number | string }>(
    "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms",
  );
  return Number(row?.now_ms);
}

const LEADER_COLUMNS = "owner_id, epoch, renewed_ms, ttl_ms, address, host, pid, released_ms";

/** BIGINT columns come back as numbers from both engines; this keeps the row honest anyway. */
function leaderRowOf(row: LeaderRow | undefined): LeaderRow | null {
  if (row === undefined) return null;
  return {
    ...row,
    epoch: Number(row.epoch),
    renewed_ms: Number(row.renewed_ms),
    ttl_ms: Number(row.ttl_ms),
    pid: Number(row.pid),
    released_ms: row.released_ms === null ? null : Number(row.released_ms),
  };
}

const LeaderTtlEnv = z.coerce
  .number()
  .int()
  .min(500, "must be at least 500 (ms)")
  .max(600_000, "must be at most 600000 (ms)");

/** The leader TTL for every `berth serve` on this store: `$BERTH_LEADER_TTL_MS`, else 2.5 s. Refused naming the variable. */
export function leaderTtlFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env.BERTH_LEADER_TTL_MS;
  if (raw === undefined || raw === "") return DEFAULT_LEADER_TTL_MS;
  const parsed = LeaderTtlEnv.safeParse(raw);
  if (!parsed.success)
    throw new Error(`BERTH_LEADER_TTL_MS: ${parsed.error.issues[0]?.message ?? "must be an integer (ms)"}`);
  return parsed.data;
}

export class NotLeader extends Error {
  override name = "NotLeader";
}

export interface LeaderLeaseOptions {
  readonly engine: StoreEngine;
  readonly storeId: string;
  /** This process's owner lease (src/store/lease.ts): the leader row names it. */
  readonly ownerId: string;
  readonly ttlMs?: number;
  /** The API address followers point writes at. */
  readonly address: string | null;
  /**
   * The clock the lease row is judged on. Default: the database's (PostgreSQL's `clock_timestamp()`, read inside the
   * transaction, so every contender on every machine judges one row by one clock); on SQLite (one machine) the
   * process clock. Tests set it.
   */
  readonly dbClock?: () => number;
  /** Monotonic milliseconds (runs on while the process is stopped). */
  readonly mono?: () => number;
  /** Called when this process becomes leader (epoch) or stops being one (null). */
  readonly onChange?: (epoch: number | null, why: string) => void;
}

/** What a process knows of the leadership after its last step. */
export interface LeaderView {
  readonly leading: boolean;
  readonly epoch: number | null;
  readonly leader: LeaderRow | null;
  /**
   * Issue 37: whether `leader` was read from the store just now (or this process leads): a follower forwards a write
   * only to a leader the store names now, never to one it remembers from before it lost the store.
   */
  readonly fresh: boolean;
}

export class LeaderLease {
  readonly timing: LeaderTiming;
  private readonly dbClock: (q: Query) => Promise<number>;
  /** Whether the last step reached the store: a follower cut from it answers from what it last saw, at once. */
  private reached = false;
  private stepStartMono = Number.NEGATIVE_INFINITY;
  private readonly mono: () => number;
  private heldEpoch: number | null = null;
  /** When the next step is due after the one that just ended (a follower: at the leader row's lapse, if sooner). */
  private nextStepMs: number;
  private stopped = false;
  private renewStartMono = Number.NEGATIVE_INFINITY;
  private lastSeen: LeaderRow | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The step in flight: a slow store never runs two at once, and `stop()` waits for it. */
  private stepping: Promise<void> | null = null;
  /** The first step, until it settles: before it nobody knows who leads, so an answer waits for it. */
  private first: Promise<void> | null = null;

  constructor(private readonly o: LeaderLeaseOptions) {
    this.timing = leaderTiming(o.ttlMs);
    const fixed = o.dbClock;
    this.dbClock = fixed ? async () => fixed() : databaseNow;
    this.mono = o.mono ?? (() => performance.now());
    this.nextStepMs = this.timing.renewEveryMs;
  }

  /** Takes or renews now, then every TTL/5 from the start of the previous step (one step at a time). */
  start(): void {
    const tick = () => {
      this.timer = null;
      if (this.stopped || this.stepping) return;
      const began = this.mono();
      this.stepStartMono = began;
      this.stepping = this.step().finally(() => {
        this.stepping = null;
        if (this.stopped) return;
        this.timer = setTimeout(tick, Math.max(0, this.nextStepMs - (this.mono() - began)));
        this.timer.unref();
      });
    };
    tick();
    const first = this.stepping as Promise<void> | null;
    this.first =
      first?.finally(() => {
        this.first = null;
      }) ?? null;
  }

  /**
   * Settles once the first take-or-renew has (a server returns from start-up after it, so a lone server's first
   * write is never answered "no leader" merely because its election had not run yet). Never rejects.
   */
  async started(): Promise<void> {
    await this.first;
  }

  isLeader(): boolean {
    if (this.heldEpoch === null) return false;
    if (mayAct(this.renewStartMono, this.mono(), this.timing)) return true;
    // Past its act-for window without a renewal: it steps down at once, before anything else can act on its behalf.
    this.lose("its lease could not be renewed within the TTL");
    return false;
  }

  view(): LeaderView {
    const leading = this.isLeader();
    return { leading, epoch: leading ? this.heldEpoch : null, leader: this.lastSeen, fresh: leading };
  }

  /**
   * What a follower tells a caller about the leadership (the API's `not_leader` answer), with the leader row read
   * fresh: one read, so it names the leader of now, not the one its last step saw up to TTL/5 ago (a dead leader,
   * right after a takeover). A leader answers from memory. A follower whose last step did not reach the store or is
   * held past its interval answers from its last step at once, and one whose read takes longer than `waitMs` (a
   * database cut or stalled just now) after that wait: the answer never waits on a database that may not answer.
   */
  async currentView(waitMs: number = this.timing.renewEveryMs): Promise<LeaderView> {
    // Asked before the first step has settled (a write racing start-up): that step's answer, within the wait.
    if (this.first !== null)
      await within(
        this.first.catch(() => undefined),
        waitMs,
      );
    // A step held longer than its interval is a store that does not answer now, whatever the last one said.
    const stalled = this.stepping !== null && this.mono() - this.stepStartMono > this.timing.renewEveryMs;
    if (this.isLeader() || !this.reached || stalled) return this.othersOnly(this.view());
    try {
      const read = this.o.engine.read(async (q) => ({
        now: await this.dbClock(q),
        row: leaderRowOf(await q.get<LeaderRow>(`SELECT ${LEADER_COLUMNS} FROM berth_leader WHERE id = 1`)),
      }));
      read.catch(() => undefined); // a late failure after the timeout is nobody's answer
      const fresh = await within(read, waitMs);
      // Leading by now (a step took the row meanwhile): the memory is newer than the read.
      if (fresh === LATE || this.isLeader()) return this.othersOnly(this.view());
      return this.othersOnly({ leading: false, epoch: null, leader: liveLeader(fresh.row, fresh.now), fresh: true });
    } catch {
      return this.othersOnly(this.view());
    }
  }

  /**
   * Issue 37: a process that may not act never names itself as the leader to a caller, though the row (or its memory
   * of it) still does: its window ran out and it leads again only by a new take, so for now nobody leads, and a
   * caller is told to wait out the failover rather than sent back to this process (a follower would forward to it).
   */
  private othersOnly(view: LeaderView): LeaderView {
    return !view.leading && view.leader?.owner_id === this.o.ownerId ? { ...view, leader: null } : view;
  }

  /**
   * The authority a request carries. The leader: its own epoch. Anyone else: nothing mutating is sent (NotLeader);
   * a read names the store's current epoch (it is never refused, and may bind an unbound node).
   */
  async authorityFor(method: string): Promise<Authority> {
    if (this.isLeader() && this.heldEpoch !== null) return { store_id: this.o.storeId, epoch: this.heldEpoch };
    if (MUTATING_METHODS.has(method)) {
      const l = this.lastSeen;
      throw new NotLeader(
        l && l.owner_id !== this.o.ownerId
          ? `this process is not the leader; the leader is ${l.address ?? `pid ${l.pid} on ${l.host}`} (epoch ${l.epoch})`
          : "this process is not the leader",
      );
    }
    return { store_id: this.o.storeId, epoch: await this.o.engine.read(readLeaderEpoch) };
  }

  /** One take-or-renew. Never throws: a store that cannot be reached is a renewal that failed. */
  async step(): Promise<void> {
    const startMono = this.mono();
    let verdict: ReturnType<typeof judgeLeader>;
    let taken: number | null = null;
    this.nextStepMs = this.timing.renewEveryMs;
    try {
      const held = this.heldEpoch;
      const out = await this.o.engine.transaction(async (tx) => {
        const now = await this.dbClock(tx);
        const row = leaderRowOf(await tx.get<LeaderRow>(`SELECT ${LEADER_COLUMNS} FROM berth_leader WHERE id = 1`));
        const v = judgeLeader(row, this.o.ownerId, held, now);
        let epoch: number | null = null;
        if (v.kind === "renew") {
          await tx.run("UPDATE berth_leader SET renewed_ms = ?, ttl_ms = ?, address = ? WHERE id = 1", [
            now,
            this.timing.ttlMs,
            this.o.address,
          ]);
        } else if (v.kind === "take") {
          const next = await tx.get<{ epoch: number }>(
            "UPDATE berth_lease_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
          );
          if (next === undefined) throw new Error("the lease epoch counter is missing (berth_lease_epoch)");
          epoch = Number(next.epoch);
          await tx.run(
            "INSERT INTO berth_leader (id, owner_id, epoch, renewed_ms, ttl_ms, address, host, pid, taken_ms, released_ms) VALUES (1,?,?,?,?,?,?,?,?,NULL) ON CONFLICT (id) DO UPDATE SET owner_id = excluded.owner_id, epoch = excluded.epoch, renewed_ms = excluded.renewed_ms, ttl_ms = excluded.ttl_ms, address = excluded.address, host = excluded.host, pid = excluded.pid, taken_ms = excluded.taken_ms, released_ms = NULL",
            [this.o.ownerId, epoch, now, this.timing.ttlMs, this.o.address, hostname(), process.pid, now],
          );
        }
        if (v.kind !== "follow") {
          // The owner lease lives exactly as long as the leadership: recovery elsewhere judges both by one TTL.
          await tx.run(
            "UPDATE berth_owners SET renewed_ms = ?, ttl_ms = ? WHERE owner_id = ? AND released_ms IS NULL",
            [now, this.timing.ttlMs, this.o.ownerId],
          );
        }
        const seen = leaderRowOf(await tx.get<LeaderRow>(`SELECT ${LEADER_COLUMNS} FROM berth_leader WHERE id = 1`));
        return { v, epoch, seen, now };
      });
      verdict = out.v;
      taken = out.epoch;
      this.lastSeen = out.seen;
      this.reached = true;
      // Issue 37: a follower looks again the moment the leader's row lapses, not up to an interval later.
      if (verdict.kind === "follow") this.nextStepMs = nextFollowerStepMs(verdict.leader, out.now, this.timing);
    } catch {
      // The renewal failed (a busy or unreachable store): the act-for window keeps running down.
      this.reached = false;
      this.isLeader();
      return;
    }
    if (verdict.kind === "follow") {
      if (this.heldEpoch !== null) this.lose(`another process took the leadership (epoch ${verdict.leader.epoch})`);
      return;
    }
    this.renewStartMono = startMono;
    if (verdict.kind === "take" && taken !== null) {
      this.heldEpoch = taken;
      this.o.onChange?.(taken, verdict.why);
    }
  }

  /** Stops renewing and, when leading, releases the row so a follower takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.stepping;
    if (this.heldEpoch === null) return;
    const epoch = this.heldEpoch;
    this.heldEpoch = null;
    try {
      await this.o.engine.transaction(async (tx) => {
        await tx.run("UPDATE berth_leader SET released_ms = ? WHERE id = 1 AND owner_id = ? AND epoch = ?", [
          await this.dbClock(tx),
          this.o.ownerId,
          epoch,
        ]);
      });
    } catch {
      // the row lapses by its TTL instead
    }
    this.o.onChange?.(null, "it stopped");
  }
  private lose(why: string): void {
    if (this.heldEpoch === null) return;
    this.heldEpoch = null;
    this.renewStartMono = Number.NEGATIVE_INFINITY;
    this.o.onChange?.(null, why);
  }
}
