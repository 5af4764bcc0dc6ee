/** The campaign's lease witness (lease-witness.ts): the bounds it derives from what the leased node's proxy saw. */
import { describe, expect, it } from "vitest";
import { LEASE_STOP_GRACE_MS, LEASE_STOP_MARGIN_MS } from "../../src/core/mesh/lease.js";
import { LeaseWitness, OVERRUN_SLACK_MS } from "./lease-witness.js";

const LEASE = 5_000;

describe("the lease witness", () => {
  it("raises the lower deadline only from the moment the node's ok answer was seen", () => {
    const w = new LeaseWitness(LEASE, 0);
    w.request({ nonce: "a", method: "status", issuedAtMs: 1_000, deliveredMs: 1_010 });
    expect(w.lowerDeadline(2_000)).toBe(Number.NEGATIVE_INFINITY);
    w.answer({ nonce: "a", method: "status", status: "ok", code: null, atMs: 1_500 });
    expect(w.lowerDeadline(1_400)).toBe(Number.NEGATIVE_INFINITY);
    expect(w.lowerDeadline(1_500)).toBe(1_000 + LEASE);
  });

  it("does not count a refused answer towards the lower deadline", () => {
    const w = new LeaseWitness(LEASE, 0);
    w.request({ nonce: "a", method: "place", issuedAtMs: 1_000, deliveredMs: 1_010 });
    w.answer({ nonce: "a", method: "place", status: "refused", code: "expired", atMs: 1_100 });
    expect(w.lowerDeadline(10_000)).toBe(Number.NEGATIVE_INFINITY);
  });

  it("bounds the upper deadline by every delivered request that was not late, and by the boot", () => {
    const w = new LeaseWitness(LEASE, 500);
    expect(w.upperDeadline(0)).toBe(500 + LEASE);
    w.request({ nonce: "a", method: "status", issuedAtMs: 2_000, deliveredMs: 2_005 });
    w.request({ nonce: "b", method: "start", issuedAtMs: 3_000, deliveredMs: 3_000 + LEASE + 100 });
    expect(w.upperDeadline(20_000)).toBe(2_000 + LEASE);
    expect(w.mustBeStoppedBy(20_000)).toBe(
      2_000 + LEASE + LEASE_STOP_GRACE_MS + LEASE_STOP_MARGIN_MS + OVERRUN_SLACK_MS,
    );
  });

  it("records a request delivered past its lease and answered ok as a revived lease, and not one refused", () => {
    const w = new LeaseWitness(LEASE, 0);
    w.request({ nonce: "late-ok", method: "start", issuedAtMs: 1_000, deliveredMs: 1_000 + LEASE + 500 });
    w.request({ nonce: "late-refused", method: "start", issuedAtMs: 1_000, deliveredMs: 1_000 + LEASE + 500 });
    w.answer({ nonce: "late-refused", method: "start", status: "refused", code: "expired", atMs: 7_000 });
    expect(w.revived).toEqual([]);
    w.answer({ nonce: "late-ok", method: "start", status: "ok", code: null, atMs: 7_000 });
    expect(w.revived).toHaveLength(1);
    expect(w.lateDelivered).toBe(2);
  });
});
