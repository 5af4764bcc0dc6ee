/**
 * The node lease's arithmetic (spec/mesh.md §15, issue 16 "Node loss, without ever two copies"; the argument in prose
 * is docs/concepts.md "The node lease"). Two sides share these functions so they cannot drift apart:
 *
 * - the node: every accepted request from controller C renews C's lease to `min(issued_at, now) + lease_ms`
 *   (`judgeRenewal`), counted from when the request was *issued*, never from when it arrived, so a request held in
 *   the network cannot carry the lease past what its sender can compute; a request that arrives when that deadline
 *   has already passed is refused outright (a late renewal, or a late `start`, must not revive anything). Once C's
 *   deadline passes, every live instance C placed is stopped with a 2 s grace (`leaseExpired`).
 * - the controller: it may treat an instance on a dead leased node as gone only once
 *   `last_sent_issued_at + lease_ms + skew + grace + margin` has passed on its own clock (`leaseCertainlyOver`),
 *   where `last_sent_issued_at` is the `issued_at_ms` of the last request *any* process of this controller stamped for
 *   that node (persisted before it left), answered or not.
 *
 * Pure: clocks are passed in. Every bound is a named constant so the docs and the bench quote the same numbers.
 */

/** §15: the grace a lease stop gives an instance before SIGKILL. */
export const LEASE_STOP_GRACE_MS = 2_000;

/**
 * Assumption A2 of the argument: the node's and the controller's wall clocks differ by at most this much at all
 * times (NTP on a LAN keeps them within milliseconds; 5 s leaves room for a Pi without an RTC that synced late).
 */
export const CLOCK_SKEW_BOUND_MS = 5_000;

/**
 * After its deadline the node's copies are gone within this margin plus the grace. The daemon notices within one
 * lease check (250 ms); when no daemon runs, the group's own watchdog (core/node/containment-script.ts) acts instead,
 * on a deadline file that reads up to 2 s later than the daemon's deadline (whole seconds, so the daemon, when it
 * runs, always stops first and records `lease_stopped`) and polls each second: TERM by 3 s past the deadline,
 * SIGKILL 2 s later. Four seconds covers that with room for the kill's delivery; with the 5 s skew bound and the 2 s
 * grace the controller waits `lease_ms + 11 s`.
 */
export const LEASE_STOP_MARGIN_MS = 4_000;

/** How often the daemon compares its leases' deadlines with its clock. */
export const LEASE_CHECK_MS = 250;

/** The watchdog's file holds the daemon's deadline plus this, in whole seconds rounded down (see the margin). */
export const WATCHDOG_LAG_S = 2;

/**
 * `lease_ms` bounds in node.json. §15 says a lease SHOULD cover six of the controller's ticks (60 s at the default
 * 10 s); the floor is lower so tests and labs with a fast tick can use short leases, never below three lease checks.
 */
export const LEASE_MIN_MS = 3_000;
export const LEASE_MAX_MS = 86_400_000;

/** What the node concludes from one accepted request of a controller, for its lease. */
export type RenewalVerdict =
  | { readonly kind: "renew"; readonly deadline_ms: number }
  | { readonly kind: "late"; readonly deadline_ms: number; readonly reason: string };

/**
 * The node side of one request. The base is `min(issued_at, now)`: a controller whose clock runs ahead (within the
 * accepted 30 s lead) gains nothing by it, so the deadline never exceeds what the sender computes from its own stamp.
 */
export function judgeRenewal(issuedAtMs: number, nodeNowMs: number, leaseMs: number): RenewalVerdict {
  const deadline = Math.min(issuedAtMs, nodeNowMs) + leaseMs;
  if (nodeNowMs >= deadline) {
    return {
      kind: "late",
      deadline_ms: deadline,
      reason: `request issued at ${issuedAtMs} arrived after the lease it would renew ran out (${deadline}, lease_ms ${leaseMs}); a late request never renews a lease`,
    };
  }
  return { kind: "renew", deadline_ms: deadline };
}

/** A lease only moves forward: an older request that arrives after a newer one does not shorten it. */
export function renewedDeadline(current: number | null, verdict: RenewalVerdict): number | null {
  if (verdict.kind === "late") return current;
  return current === null ? verdict.deadline_ms : Math.max(current, verdict.deadline_ms);
}

/**
 * The deadline a node assumes for a controller it has no record for (it enabled its lease, or lost its store, since
 * that controller last spoke): a fresh lease from its own boot. Safe because a controller only relies on a lease it
 * learned from a describe, and that describe was a request that left a record.
 */
export function initialDeadline(bootNowMs: number, leaseMs: number): number {
  return bootNowMs + leaseMs;
}

/** The node stops a controller's instances once its clock reaches the deadline. */
export function leaseExpired(deadlineMs: number, nodeNowMs: number): boolean {
  return nodeNowMs >= deadlineMs;
}

/** The controller's wait past the last stamped request before the old copy has certainly stopped itself. */
export function leaseWaitMs(leaseMs: number, skewMs: number = CLOCK_SKEW_BOUND_MS): number {
  return leaseMs + skewMs + LEASE_STOP_GRACE_MS + LEASE_STOP_MARGIN_MS;
}

export type LeaseJudgement =
  | { readonly kind: "no_lease" }
  | { readonly kind: "never_sent" }
  | { readonly kind: "running_out"; readonly over_at_ms: number }
  | { readonly kind: "over"; readonly over_at_ms: number };

/**
 * The controller side: has the node's lease for us certainly run out, so that every copy we placed there has stopped?
 * `leaseMs` is the lease the node advertised in facts the controller accepted; `lastSentIssuedAtMs` the stamp of the
 * last request this controller stamped for that node (never the last *answered* one: a request lost on its way back
 * may still have renewed the lease).
 */
export function leaseCertainlyOver(
  leaseMs: number | null,
  lastSentIssuedAtMs: number | null,
  nowMs: number,
  skewMs: number = CLOCK_SKEW_BOUND_MS,
): LeaseJudgement {
  if (leaseMs === null) return { kind: "no_lease" };
  if (lastSentIssuedAtMs === null) return { kind: "never_sent" };
  const overAt = lastSentIssuedAtMs + leaseWaitMs(leaseMs, skewMs);
  return nowMs >= overAt ? { kind: "over", over_at_ms: overAt } : { kind: "running_out", over_at_ms: overAt };
}

/**
 * Issue 37: what a request that renews a lease may lose on its way before it renews: its stamp's commit, the
 * connection and handshake, the node's verification. Half a second covers a loaded machine's round trip.
 */
export const LEASE_RENEW_SLACK_MS = 500;

/**
 * Issue 37: how often every `berth serve` on a store (the leader and each standby alike) renews the leases of the
 * nodes that advertise one: a quarter of the shortest lease, so three renewals in a row may be lost or late before
 * the lease runs out, never more often than the node checks its leases, never less often than the lifecycle tick.
 * Null: no node advertises a lease, so there is nothing to renew beyond the tick.
 */
export function leaseRenewEveryMs(shortestLeaseMs: number | null, tickMs: number): number | null {
  if (shortestLeaseMs === null) return null;
  return Math.max(LEASE_CHECK_MS, Math.min(tickMs, Math.floor(shortestLeaseMs / 4)));
}

/**
 * Issue 37: the shortest lease whose agents outlive an outage of every renewing controller lasting `outageMs` (the
 * failover bound of a store with no standby: a replacement server's takeover): the outage, one renewal interval at
 * that lease's own cadence and the slack must fit in the lease, so `outage + lease/4 + slack ≤ lease`.
 */
export function leaseFloorForOutageMs(outageMs: number): number {
  return Math.ceil(((outageMs + LEASE_RENEW_SLACK_MS) * 4) / 3);
}

/**
 * Issue 37: whether a lease of `leaseMs` is shorter than what a controller outage of `outageMs` needs (the warning
 * `berth serve` and `berth deploy` give when no standby server would keep renewing through it).
 */
export function leaseShorterThanOutage(leaseMs: number, outageMs: number): boolean {
  return leaseMs < leaseFloorForOutageMs(outageMs);
}

/** Issue 37: a peer holding its owner lease this long is a long-lived process (a standby server), not a CLI call. */
export const STANDBY_HELD_MS = 60_000;

/**
 * Issue 37: the warning `berth serve` and `berth deploy` give for a node whose lease is shorter than what its agents
 * need to outlive a controller takeover (`outageMs`, the failover bound), when no standby server renews through it.
 */
export function leaseWarning(nodeId: string, leaseMs: number, outageMs: number): string {
  const survives = Math.max(0, leaseMs - Math.floor(leaseMs / 4) - LEASE_RENEW_SLACK_MS);
  return `node ${nodeId} runs with lease_ms ${leaseMs}, shorter than the ${leaseFloorForOutageMs(outageMs)} ms its agents need to outlive a controller takeover (the failover bound is ${outageMs} ms at this leader TTL), and no standby berth serve runs on this store: a controller outage longer than about ${survives} ms stops them. Run a second berth serve on the store, or raise lease_ms in that node's node.json`;
}
