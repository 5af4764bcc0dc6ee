import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CLOCK_SKEW_BOUND_MS,
  initialDeadline,
  judgeRenewal,
  LEASE_CHECK_MS,
  LEASE_MAX_MS,
  LEASE_MIN_MS,
  LEASE_RENEW_SLACK_MS,
  LEASE_STOP_GRACE_MS,
  leaseCertainlyOver,
  leaseExpired,
  leaseFloorForOutageMs,
  leaseRenewEveryMs,
  leaseShorterThanOutage,
  leaseWaitMs,
  renewedDeadline,
  WATCHDOG_LAG_S,
} from "./lease.js";

describe("the node's side of the lease", () => {
  it("a request renews the lease to its issue time plus lease_ms, not to its arrival time", () => {
    expect(judgeRenewal(1_000, 4_000, 10_000)).toEqual({ kind: "renew", deadline_ms: 11_000 });
  });

  it("a request stamped ahead of the node's clock renews only from the node's clock", () => {
    expect(judgeRenewal(9_000, 4_000, 10_000)).toEqual({ kind: "renew", deadline_ms: 14_000 });
  });

  it("a request that arrives once the lease it would renew has run out is late, and renews nothing", () => {
    const late = judgeRenewal(1_000, 11_000, 10_000);
    expect(late.kind).toBe("late");
    expect(renewedDeadline(5_000, late)).toBe(5_000);
    expect(renewedDeadline(null, late)).toBeNull();
  });

  it("a request one millisecond before its deadline still renews", () => {
    expect(judgeRenewal(1_000, 10_999, 10_000).kind).toBe("renew");
  });

  it("an older request arriving after a newer one never shortens the lease", () => {
    const newer = judgeRenewal(5_000, 5_100, 10_000);
    const older = judgeRenewal(2_000, 5_200, 10_000);
    expect(renewedDeadline(renewedDeadline(null, newer), older)).toBe(15_000);
  });

  it("the lease expires exactly at its deadline", () => {
    expect(leaseExpired(10_000, 9_999)).toBe(false);
    expect(leaseExpired(10_000, 10_000)).toBe(true);
  });

  it("a controller the node has no record of gets a fresh lease from the node's boot", () => {
    expect(initialDeadline(7_000, 10_000)).toBe(17_000);
  });
});

describe("the controller's side of the lease", () => {
  it("a node that advertises no lease never has its lease run out", () => {
    expect(leaseCertainlyOver(null, 1_000, 1e12)).toEqual({ kind: "no_lease" });
  });

  it("a node the controller never sent anything has no lease to wait for", () => {
    expect(leaseCertainlyOver(10_000, null, 1e12)).toEqual({ kind: "never_sent" });
  });

  it("the wait is lease_ms plus the skew bound, the stop grace and the stop margin: lease_ms + 11 s by default", () => {
    expect(leaseWaitMs(60_000)).toBe(71_000);
    expect(leaseCertainlyOver(60_000, 1_000, 71_999)).toEqual({ kind: "running_out", over_at_ms: 72_000 });
    expect(leaseCertainlyOver(60_000, 1_000, 72_000)).toEqual({ kind: "over", over_at_ms: 72_000 });
  });
});

/**
 * The argument of docs/concepts.md, checked over random worlds: clocks offset within the skew bound, any number of
 * requests stamped by the controller, each delivered after any delay (or never), in any order. Whatever the node
 * accepted, its last copy has stopped (deadline seen within a check, grace, then SIGKILL) by the real time at which
 * the controller, counting from its last *stamped* request, judges the lease over.
 */
describe("the lease argument over random worlds", () => {
  const KILL_MS = 1_000; // SIGKILL delivery and the group's exit after the daemon's check
  const WATCHDOG_FORK_MS = 100; // `date` forked once per poll
  const WATCHDOG_KILL_MS = 500; // SIGKILL of the group, from inside it

  it("the controller never judges the lease over before the node's copies have certainly stopped", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3_000, max: 600_000 }),
        fc.integer({ min: -CLOCK_SKEW_BOUND_MS, max: CLOCK_SKEW_BOUND_MS }),
        fc.array(
          fc.record({
            sentReal: fc.integer({ min: 0, max: 1_000_000 }),
            delay: fc.option(fc.integer({ min: 0, max: 2_000_000 })),
          }),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        (leaseMs, skew, requests) => {
          const controllerClock = (real: number) => real; // the controller's clock is the reference
          const nodeClock = (real: number) => real + skew;
          const arrivals = requests
            .filter((r) => r.delay !== null)
            .map((r) => ({ issued: controllerClock(r.sentReal), arriveReal: r.sentReal + (r.delay ?? 0) }))
            .sort((a, b) => a.arriveReal - b.arriveReal);
          let deadline: number | null = null;
          for (const a of arrivals)
            deadline = renewedDeadline(deadline, judgeRenewal(a.issued, nodeClock(a.arriveReal), leaseMs));
          const lastStamped = Math.max(...requests.map((r) => controllerClock(r.sentReal)));
          const verdict = leaseCertainlyOver(leaseMs, lastStamped, 0);
          if (verdict.kind !== "running_out" && verdict.kind !== "over") return false;
          const overReal = verdict.over_at_ms; // controller clock = real time
          if (deadline === null) return true; // nothing was accepted: nothing was renewed
          const byDaemon = deadline - skew + LEASE_CHECK_MS + LEASE_STOP_GRACE_MS + KILL_MS;
          // No daemon: the watchdog reads floor(deadline/1000) + lag seconds, polls each second (plus a fork), TERMs,
          // and SIGKILLs the group 2 s later.
          const watchdogFiresNode = (Math.floor(deadline / 1000) + WATCHDOG_LAG_S) * 1000 + 1_000 + WATCHDOG_FORK_MS;
          const byWatchdog = watchdogFiresNode - skew + LEASE_STOP_GRACE_MS + WATCHDOG_KILL_MS;
          return overReal >= byDaemon && overReal >= byWatchdog;
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("without the late-request rule a held request would outlive the controller's wait (the rule is load-bearing)", () => {
    // Renewing from arrival instead of issue: a request stamped at 0 and held 60 s renews to 60 s + lease_ms.
    const leaseMs = 10_000;
    const renewedFromArrival = 60_000 + leaseMs;
    const verdict = leaseCertainlyOver(leaseMs, 0, 0);
    expect(verdict.kind === "running_out" && verdict.over_at_ms < renewedFromArrival).toBe(true);
    expect(judgeRenewal(0, 60_000, leaseMs).kind).toBe("late");
  });
});

describe("how often the controllers renew leases (issue 37)", () => {
  it.each([
    ["no node advertises a lease: nothing beyond the tick", null, 10_000, null],
    ["a quarter of the shortest lease", 8_000, 10_000, 2_000],
    ["never less often than the tick", 120_000, 10_000, 10_000],
    ["never more often than the node checks its leases", 800, 10_000, 250],
  ] as const)("%s", (_name, shortest, tick, every) => {
    expect(leaseRenewEveryMs(shortest, tick)).toBe(every);
  });

  it("three renewals in a row may be lost before the shortest lease runs out", () => {
    fc.assert(
      fc.property(fc.integer({ min: LEASE_MIN_MS, max: LEASE_MAX_MS }), (lease) => {
        const every = leaseRenewEveryMs(lease, 10_000) as number;
        expect(3 * every + LEASE_RENEW_SLACK_MS).toBeLessThan(lease);
      }),
    );
  });

  it("a lease at the floor for an outage outlives that outage at its own cadence; a shorter one is warned about", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 600_000 }), (outage) => {
        const floor = leaseFloorForOutageMs(outage);
        // Renewed every floor/4 (at most: the tick may make it more often), the last renewal before the outage is at most one interval old.
        expect(outage + floor / 4 + LEASE_RENEW_SLACK_MS).toBeLessThanOrEqual(floor);
        expect(leaseShorterThanOutage(floor, outage)).toBe(false);
        expect(leaseShorterThanOutage(floor - 1, outage)).toBe(true);
      }),
    );
  });
});
