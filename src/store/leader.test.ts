import { describe, expect, it } from "vitest";
import { ENGINE_KINDS, engineHarness } from "../../test/support/engines.js";
import type { EngineKind, StoreEngine } from "./engine.js";
import { ensureAuthorityTables, readLeaderEpoch, readStoreId } from "./leader-authority.js";
import { LeaderLease, NotLeader } from "./leader.js";
import { ensureLeaseTables, takeLease } from "./lease.js";

const engines = engineHarness();

/** One store; each contender opens its own connection to it, as separate processes (or machines) do. */
async function store(kind: EngineKind): Promise<{ open: () => Promise<StoreEngine> }> {
  const first = await engines.open(kind);
  await first.transaction(async (tx) => {
    await ensureLeaseTables(tx);
    await ensureAuthorityTables(tx, 0);
  });
  return { open: () => engines.reopen(first) };
}

async function contender(engine: StoreEngine, clock: { now: number } | null, ttlMs = 10_000) {
  const lease = await engine.transaction((tx) => takeLease(tx, clock?.now ?? Date.now()));
  const changes: Array<number | null> = [];
  const leader = new LeaderLease({
    engine,
    storeId: await engine.read(readStoreId),
    ownerId: lease.owner_id,
    ttlMs,
    address: `http://${lease.owner_id}`,
    ...(clock ? { dbClock: () => clock.now, mono: () => clock.now } : {}),
    onChange: (epoch) => changes.push(epoch),
  });
  return { leader, changes, ownerId: lease.owner_id };
}

describe.each(ENGINE_KINDS)("the leader lease on one store (issue 20) on %s", { timeout: 60_000 }, (kind) => {
  it("of several contenders exactly one leads, and it sends its own epoch; the others send nothing mutating", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const all = [
      await contender(await s.open(), clock),
      await contender(await s.open(), clock),
      await contender(await s.open(), clock),
    ];
    for (let round = 0; round < 10; round++) {
      // All at once: on PostgreSQL the three transactions really race (SERIALIZABLE decides).
      await Promise.all(all.map((c) => c.leader.step()));
      expect(all.filter((c) => c.leader.isLeader())).toHaveLength(1);
      clock.now += 2_000;
    }
    const [lead] = all.filter((c) => c.leader.isLeader());
    const epoch = await (await s.open()).read(readLeaderEpoch);
    expect(await lead?.leader.authorityFor("place")).toMatchObject({ epoch });
    for (const c of all.filter((x) => x !== lead)) {
      await expect(c.leader.authorityFor("place")).rejects.toThrow(NotLeader);
      await expect(c.leader.authorityFor("place")).rejects.toThrow(/the leader is http:\/\//);
      expect(await c.leader.authorityFor("status")).toEqual({
        store_id: (await lead?.leader.authorityFor("status"))?.store_id,
        epoch,
      });
    }
  });

  it("a leader that cannot renew stops acting before its TTL ends, and a follower takes over after it with a higher epoch", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    const b = await contender(await s.open(), clock);
    await a.leader.step();
    await b.leader.step();
    expect(a.leader.isLeader()).toBe(true);
    const first = (await a.leader.authorityFor("place")).epoch;
    const renewedAt = clock.now;
    // `a` is cut from the store (it no longer steps); `b` keeps trying.
    let stoppedAt: number | null = null;
    let takenAt: number | null = null;
    while (clock.now < renewedAt + 30_000) {
      clock.now += 500;
      if (stoppedAt === null && !a.leader.isLeader()) stoppedAt = clock.now;
      await b.leader.step();
      if (takenAt === null && b.leader.isLeader()) takenAt = clock.now;
      expect(a.leader.isLeader() && b.leader.isLeader()).toBe(false);
    }
    expect(stoppedAt).not.toBeNull();
    expect(takenAt).not.toBeNull();
    expect(stoppedAt as number).toBeLessThanOrEqual(renewedAt + 8_000);
    expect(takenAt as number).toBeGreaterThan(renewedAt + 10_000);
    expect((await b.leader.authorityFor("place")).epoch).toBeGreaterThan(first);
    expect(a.changes).toEqual([first, null]);
  });

  it("a released leadership is taken by the next step, without waiting for the TTL", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    const b = await contender(await s.open(), clock);
    await a.leader.step();
    await b.leader.step();
    await a.leader.stop();
    expect(a.leader.isLeader()).toBe(false);
    clock.now += 1;
    await b.leader.step();
    expect(b.leader.isLeader()).toBe(true);
  });

  it("a leader that was paused past its window leads again only under a new epoch, though nobody took the row", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    await a.leader.step();
    const first = (await a.leader.authorityFor("place")).epoch;
    clock.now += 20_000;
    expect(a.leader.isLeader()).toBe(false);
    await expect(a.leader.authorityFor("place")).rejects.toThrow(NotLeader);
    await a.leader.step();
    expect(a.leader.isLeader()).toBe(true);
    const second = (await a.leader.authorityFor("place")).epoch;
    expect(second).toBeGreaterThan(first);
    expect(a.changes).toEqual([first, null, second]);
  });

  it("a leader paused past its window after another took the row over leads again only under a newer epoch", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    const b = await contender(await s.open(), clock);
    await a.leader.step();
    const first = (await a.leader.authorityFor("place")).epoch;
    clock.now += 20_000;
    await b.leader.step();
    const second = (await b.leader.authorityFor("place")).epoch;
    expect(second).toBeGreaterThan(first);
    await b.leader.stop();
    clock.now += 1;
    await a.leader.step();
    expect(a.leader.isLeader()).toBe(true);
    expect((await a.leader.authorityFor("place")).epoch).toBeGreaterThan(second);
  });

  it("a follower names the leader of now, read from the row: right after a takeover, before its own next step", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const [a, b, c] = [
      await contender(await s.open(), clock),
      await contender(await s.open(), clock),
      await contender(await s.open(), clock),
    ];
    for (const x of [a, b, c]) await x.leader.step();
    expect((await c.leader.currentView()).leader?.owner_id).toBe(a.ownerId);
    // `a` dies; `b` takes over after the TTL; `c` has not stepped since.
    clock.now += 10_001;
    await b.leader.step();
    expect(b.leader.isLeader()).toBe(true);
    expect(c.leader.view().leader?.owner_id, "its last step saw the dead leader").toBe(a.ownerId);
    const fresh = await c.leader.currentView();
    expect(fresh).toMatchObject({
      leading: false,
      epoch: null,
      leader: { owner_id: b.ownerId, address: `http://${b.ownerId}` },
    });
    expect(fresh.leader?.epoch).toBe((await b.leader.authorityFor("place")).epoch);
    // The leader itself answers from memory: it leads.
    expect(await b.leader.currentView()).toMatchObject({ leading: true });
  });

  it("a leader whose window ran out names nobody to a caller, though the row still names it (issue 37: never sent back to itself)", async () => {
    const s = await store(kind);
    const db = { now: 1_000 };
    const mono = { now: 1_000 };
    const engine = await s.open();
    const lease = await engine.transaction((tx) => takeLease(tx, db.now));
    const a = new LeaderLease({
      engine,
      storeId: await engine.read(readStoreId),
      ownerId: lease.owner_id,
      ttlMs: 10_000,
      address: "http://a",
      dbClock: () => db.now,
      mono: () => mono.now,
    });
    await a.step();
    expect((await a.currentView()).leading).toBe(true);
    // Its own clock ran past the window (a stall); on the database's the row has not lapsed yet.
    mono.now += 8_001;
    db.now += 1;
    expect(a.isLeader()).toBe(false);
    expect(await a.currentView()).toMatchObject({ leading: false, leader: null });
  });

  it("a follower names nobody while the leader's row has lapsed and nobody has taken it yet", async () => {
    const s = await store(kind);
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    const b = await contender(await s.open(), clock);
    await a.leader.step();
    await b.leader.step();
    clock.now += 10_001;
    expect(b.leader.view().leader?.owner_id).toBe(a.ownerId);
    expect((await b.leader.currentView()).leader).toBeNull();
  });

  it("on the database's own clock, a contender takes the leadership and a second one follows it", async () => {
    const s = await store(kind);
    const a = await contender(await s.open(), null);
    const b = await contender(await s.open(), null);
    await a.leader.step();
    await b.leader.step();
    expect([a.leader.isLeader(), b.leader.isLeader()]).toEqual([true, false]);
    const seen = b.leader.view().leader;
    expect(seen?.owner_id).toBe(a.ownerId);
    // The row's renewal time is the database's clock: within a few seconds of this process's.
    expect(Math.abs((seen?.renewed_ms ?? 0) - Date.now())).toBeLessThan(5_000);
  });
});

describe("the leader lease on PostgreSQL when a contender freezes inside its transaction (issue 37)", {
  timeout: 60_000,
}, () => {
  it("a leader frozen mid-renewal, holding the leader row, does not keep a follower from taking over: the server ends its session", async () => {
    const s = await store("postgres");
    const clock = { now: 1_000 };
    const a = await contender(await s.open(), clock);
    const b = await contender(await s.open(), clock);
    await a.leader.step();
    const first = (await a.leader.authorityFor("place")).epoch;
    // What PostgreSQL sees of a leader stopped (SIGSTOP) right after its renewal's UPDATE: a session idle in its
    // transaction, holding the row's lock, and nothing more from it for as long as the process is stopped.
    const frozen = await s.open();
    let wake = () => {};
    const woken = new Promise<void>((r) => {
      wake = r;
    });
    let locked = () => {};
    const holdsTheRow = new Promise<void>((r) => {
      locked = r;
    });
    const holding = frozen.transaction(async (tx) => {
      await tx.run("UPDATE berth_leader SET renewed_ms = renewed_ms WHERE id = 1");
      locked();
      await woken;
    });
    const outcome = holding.then(
      () => "committed",
      () => "failed",
    );
    // The follower steps only once the frozen session holds the row: stepping earlier raced the UPDATE, and a takeover
    // that went first left nothing for the server to end (the Node 24 tier of a clean-clone run saw "committed").
    await Promise.race([holdsTheRow, holding]);
    let step: string;
    try {
      clock.now += 10_001;
      // Without the server ending the frozen session, the follower's takeover waits on the row lock for ever.
      step = await Promise.race([
        b.leader.step().then(() => "done"),
        new Promise<string>((r) => setTimeout(() => r("blocked on the frozen leader's lock"), 30_000)),
      ]);
    } finally {
      wake();
    }
    expect(step).toBe("done");
    expect(b.leader.isLeader()).toBe(true);
    expect((await b.leader.authorityFor("place")).epoch).toBeGreaterThan(first);
    // Woken, the frozen one's transaction fails: its session is gone, and nothing of it was written.
    expect(await outcome).toBe("failed");
  });
});
