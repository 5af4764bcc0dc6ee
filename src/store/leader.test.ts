import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensureAuthorityTables, readLeaderEpoch, readStoreId } from "./leader-authority.js";
import { LeaderLease, NotLeader } from "./leader.js";
import { ensureLeaseTables, takeLease } from "./lease.js";
import { type Db, openDatabase, withWriteTx } from "./sqlite.js";

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** One store file; each contender opens its own connection, as separate processes do. */
function store(): { open: () => Db; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "berth-leader-"));
  dirs.push(dir);
  const path = join(dir, "controller.db");
  const open = () => {
    const db = openDatabase(path);
    dbs.push(db);
    withWriteTx(db, (tx) => {
      ensureLeaseTables(tx);
      ensureAuthorityTables(tx, 0);
    });
    return db;
  };
  return { open, path };
}

function contender(db: Db, clock: { now: number }, ttlMs = 10_000) {
  const lease = withWriteTx(db, (tx) => takeLease(tx, clock.now));
  const changes: Array<number | null> = [];
  const leader = new LeaderLease({
    db,
    storeId: readStoreId(db),
    ownerId: lease.owner_id,
    ttlMs,
    address: `http://${lease.owner_id}`,
    dbClock: () => clock.now,
    mono: () => clock.now,
    onChange: (epoch) => changes.push(epoch),
  });
  return { leader, changes, ownerId: lease.owner_id };
}

describe("the leader lease on one store (issue 20)", () => {
  it("of several contenders exactly one leads, and it sends its own epoch; the others send nothing mutating", () => {
    const s = store();
    const clock = { now: 1_000 };
    const all = [contender(s.open(), clock), contender(s.open(), clock), contender(s.open(), clock)];
    for (let round = 0; round < 10; round++) {
      for (const c of all) c.leader.step();
      expect(all.filter((c) => c.leader.isLeader())).toHaveLength(1);
      clock.now += 2_000;
    }
    const [lead] = all.filter((c) => c.leader.isLeader());
    const epoch = readLeaderEpoch(s.open());
    expect(lead?.leader.authorityFor("place")).toMatchObject({ epoch });
    for (const c of all.filter((x) => x !== lead)) {
      expect(() => c.leader.authorityFor("place")).toThrow(NotLeader);
      expect(() => c.leader.authorityFor("place")).toThrow(/the leader is http:\/\//);
      expect(c.leader.authorityFor("status")).toEqual({ store_id: lead?.leader.authorityFor("status").store_id, epoch });
    }
  });

  it("a leader that cannot renew stops acting before its TTL ends, and a follower takes over after it with a higher epoch", () => {
    const s = store();
    const clock = { now: 1_000 };
    const a = contender(s.open(), clock);
    const b = contender(s.open(), clock);
    a.leader.step();
    b.leader.step();
    expect(a.leader.isLeader()).toBe(true);
    const first = a.leader.authorityFor("place").epoch;
    const renewedAt = clock.now;
    // `a` is cut from the store (it no longer steps); `b` keeps trying.
    let stoppedAt: number | null = null;
    let takenAt: number | null = null;
    while (clock.now < renewedAt + 30_000) {
      clock.now += 500;
      if (stoppedAt === null && !a.leader.isLeader()) stoppedAt = clock.now;
      b.leader.step();
      if (takenAt === null && b.leader.isLeader()) takenAt = clock.now;
      expect(a.leader.isLeader() && b.leader.isLeader()).toBe(false);
    }
    expect(stoppedAt).not.toBeNull();
    expect(takenAt).not.toBeNull();
    expect(stoppedAt as number).toBeLessThanOrEqual(renewedAt + 8_000);
    expect(takenAt as number).toBeGreaterThan(renewedAt + 10_000);
    expect(b.leader.authorityFor("place").epoch).toBeGreaterThan(first);
    expect(a.changes).toEqual([first, null]);
  });

  it("a released leadership is taken by the next step, without waiting for the TTL", () => {
    const s = store();
    const clock = { now: 1_000 };
    const a = contender(s.open(), clock);
    const b = contender(s.open(), clock);
    a.leader.step();
    b.leader.step();
    a.leader.stop();
    expect(a.leader.isLeader()).toBe(false);
    clock.now += 1;
    b.leader.step();
    expect(b.leader.isLeader()).toBe(true);
  });

  it("a leader that was paused past its window leads again only under a new epoch", () => {
    const s = store();
    const clock = { now: 1_000 };
    const a = contender(s.open(), clock);
    a.leader.step();
    const first = a.leader.authorityFor("place").epoch;
    clock.now += 20_000;
    expect(a.leader.isLeader()).toBe(false);
    a.leader.step();
    expect(a.leader.isLeader()).toBe(true);
    expect(a.leader.authorityFor("place").epoch).toBeGreaterThan(first);
  });
});
