import { describe, expect, it } from "vitest";
import {
  DEFAULT_LEADER_TTL_MS,
  failoverBoundMs,
  judgeLeader,
  type LeaderRow,
  leaderTiming,
  liveLeader,
  mayAct,
  nextFollowerStepMs,
} from "./leader-lease.js";

const row = (over: Partial<LeaderRow> = {}): LeaderRow => ({
  owner_id: "other",
  epoch: 7,
  renewed_ms: 10_000,
  ttl_ms: 15_000,
  address: "http://127.0.0.1:7420",
  host: "h",
  pid: 42,
  released_ms: null,
  ...over,
});

describe("who leads a controller store (issue 20)", () => {
  it.each([
    ["a store that never had a leader is taken", null, null, 0, "take"],
    ["a released leadership is taken at once", row({ released_ms: 11_000 }), null, 11_001, "take"],
    ["a live leader is followed", row(), null, 10_000 + 15_000, "follow"],
    ["a leader silent past its TTL on the database's clock is replaced", row(), null, 10_000 + 15_001, "take"],
    ["the holder renews its own leadership", row({ owner_id: "me" }), 7, 12_000, "renew"],
    [
      "a row naming this process at an epoch it no longer holds is taken anew (a new epoch)",
      row({ owner_id: "me" }),
      null,
      12_000,
      "take",
    ],
  ] as const)("%s", (_name, r, held, now, kind) => {
    expect(judgeLeader(r, "me", held, now).kind).toBe(kind);
  });

  it("a process whose window ran out leads again only under a new epoch, though the row still names it (issue 37 keeps issue 20's fence)", () => {
    // Nobody took the row, but its owner lease lapsed with it: others may have recovered its decisions meanwhile.
    expect(judgeLeader(row({ owner_id: "me", epoch: 7 }), "me", null, 12_000).kind).toBe("take");
    expect(judgeLeader(row({ owner_id: "me", epoch: 7 }), "me", 7, 12_000).kind).toBe("renew");
  });

  it("a follower steps again at the moment the leader's row lapses when that comes before its next interval (issue 37)", () => {
    const t = leaderTiming(2_500);
    const r = row({ renewed_ms: 10_000, ttl_ms: 2_500 });
    expect(nextFollowerStepMs(r, 10_000, t)).toBe(500);
    expect(nextFollowerStepMs(r, 12_200, t)).toBe(301);
    expect(nextFollowerStepMs(r, 12_600, t)).toBe(1);
  });

  it("at the default TTL a takeover after a crash or a pause is bound within 3 s (issue 37)", () => {
    expect(failoverBoundMs(leaderTiming(DEFAULT_LEADER_TTL_MS))).toBeLessThanOrEqual(3_000);
  });

  it("renews every TTL/5 and acts for TTL − TTL/5 after the start of its last renewal, never after", () => {
    const t = leaderTiming(15_000);
    expect(t).toEqual({ ttlMs: 15_000, renewEveryMs: 3_000, actForMs: 12_000 });
    expect(mayAct(1_000, 1_000, t)).toBe(true);
    expect(mayAct(1_000, 12_999, t)).toBe(true);
    expect(mayAct(1_000, 13_000, t)).toBe(false);
    // A clock that went backwards proves nothing: stop.
    expect(mayAct(1_000, 999, t)).toBe(false);
  });

  it("a successor can take over only after the old leader stopped acting, if the database's clock runs within 20 % of the leader's", () => {
    const t = leaderTiming(10_000);
    // The leader began its last renewal at real time 0; the renewal committed at real time c >= 0.
    for (const commitDelay of [0, 5, 500]) {
      for (const rate of [0.8, 1, 1.2]) {
        // The database's clock advances `rate` times as fast as the leader's: the TTL passes there at real time
        // commitDelay + ttl / rate; the leader stopped at actForMs.
        const takeover = commitDelay + t.ttlMs / rate;
        expect(takeover, `rate ${rate}`).toBeGreaterThan(t.actForMs);
      }
    }
  });

  it.each([
    ["no row: nobody", null, 0, false],
    ["a live leader is named", row(), 10_000 + 15_000, true],
    ["a released one is not", row({ released_ms: 11_000 }), 11_001, false],
    ["one silent past its TTL on the database's clock is not (dead, or stopped acting)", row(), 10_000 + 15_001, false],
  ] as const)("the leader a follower names: %s", (_name, r, now, named) => {
    expect(liveLeader(r, now) !== null).toBe(named);
  });
});
