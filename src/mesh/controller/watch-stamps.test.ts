import { describe, expect, it } from "vitest";
import { openDatabase } from "../../store/sqlite.js";
import { leaseOfFacts, SentStamps } from "./watch-stamps.js";

const NODE = "0123456789abcdef0123456789abcdef";

describe("the controller's last-sent stamps (the node lease's rule 4)", () => {
  it("keeps the latest stamp a request carried, and never lowers it when an older one is recorded later", () => {
    const s = new SentStamps(openDatabase(":memory:"));
    s.record(NODE, 2_000);
    s.record(NODE, 1_000);
    expect(s.of(NODE).last_sent_ms).toBe(2_000);
    s.record(NODE, 3_000);
    expect(s.of(NODE).last_sent_ms).toBe(3_000);
  });

  it("takes back the stamp of a request that provably never left, and keeps one that may have arrived (issue 16)", () => {
    const s = new SentStamps(openDatabase(":memory:"));
    s.record(NODE, 1_000)(true);
    const unsent = s.record(NODE, 2_000);
    // pending: counted, whatever happens next
    expect(s.of(NODE).last_sent_ms).toBe(2_000);
    unsent(false);
    expect(s.of(NODE).last_sent_ms).toBe(1_000);
    // a dead node tried every tick: its stamp stays where the last request that may have arrived put it
    for (let t = 3_000; t < 10_000; t += 1_000) s.record(NODE, t)(false);
    expect(s.of(NODE).last_sent_ms).toBe(1_000);
    s.record(NODE, 12_000)(true);
    expect(s.of(NODE).last_sent_ms).toBe(12_000);
  });

  it("a pending stamp below a settled one is dominated; one above it still counts until settled", () => {
    const s = new SentStamps(openDatabase(":memory:"));
    const low = s.record(NODE, 1_000);
    const high = s.record(NODE, 5_000);
    s.record(NODE, 3_000)(true);
    expect(s.of(NODE).last_sent_ms).toBe(5_000);
    high(false);
    expect(s.of(NODE).last_sent_ms).toBe(3_000);
    low(false);
    expect(s.of(NODE).last_sent_ms).toBe(3_000);
  });

  it("two processes on one store raise one stamp", () => {
    const db = openDatabase(":memory:");
    new SentStamps(db).record(NODE, 5_000);
    expect(new SentStamps(db).of(NODE).last_sent_ms).toBe(5_000);
  });

  it("records nothing for a first describe addressed to any node", () => {
    const s = new SentStamps(openDatabase(":memory:"));
    s.record("*", 1_000);
    expect(s.of("*")).toEqual({ node_id: "*", last_sent_ms: null, lease_ms: null });
  });

  it("keeps the lease the node's accepted facts advertise, and a recorded lease does not touch the stamp", () => {
    const s = new SentStamps(openDatabase(":memory:"));
    s.record(NODE, 7_000);
    s.recordLease(NODE, leaseOfFacts({ lease_ms: 60_000 }));
    expect(s.of(NODE)).toEqual({ node_id: NODE, last_sent_ms: 7_000, lease_ms: 60_000 });
    s.recordLease(NODE, leaseOfFacts({ lease_ms: null }));
    expect(s.of(NODE).lease_ms).toBeNull();
  });

  it("reads only a positive integer as a lease", () => {
    for (const v of [0, -5, 1.5, "60000", null, undefined]) expect(leaseOfFacts({ lease_ms: v })).toBeNull();
  });
});
