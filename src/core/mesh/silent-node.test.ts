import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeIdOf, signingKeyFromSeed } from "../crypto/ed25519.js";
import { NonceGuard } from "../protocol/nonce-guard.js";
import { signRequest } from "../protocol/sign.js";
import { verifyRequest } from "../protocol/verify.js";
import {
  CLOCK_SKEW_BOUND_MS,
  judgeRenewal,
  LEASE_STOP_GRACE_MS,
  LEASE_STOP_MARGIN_MS,
  leaseCertainlyOver,
  leaseWaitMs,
  renewedDeadline,
} from "./lease.js";
import { holdRenewalsAfterMs, judgeSend, probeTimes } from "./silent-node.js";

describe("when the controller stops sending a silent node requests that could renew its lease (issue 37, F5)", () => {
  const rows: ReadonlyArray<{
    rule: string;
    lease_ms: number | null;
    unreachable_since_ms: number | null;
    now: number;
    held: boolean;
  }> = [
    {
      rule: "a reachable leased node is sent everything",
      lease_ms: 6_000,
      unreachable_since_ms: null,
      now: 50_000,
      held: false,
    },
    {
      rule: "a node without a lease is never held, however long it is silent",
      lease_ms: null,
      unreachable_since_ms: 0,
      now: 10_000_000,
      held: false,
    },
    {
      rule: "a leased node unanswered for less than half its lease is still sent renewals",
      lease_ms: 6_000,
      unreachable_since_ms: 10_000,
      now: 12_999,
      held: false,
    },
    {
      rule: "a leased node unanswered for half its lease is held",
      lease_ms: 6_000,
      unreachable_since_ms: 10_000,
      now: 13_000,
      held: true,
    },
    {
      rule: "and stays held while it answers nothing",
      lease_ms: 6_000,
      unreachable_since_ms: 10_000,
      now: 900_000,
      held: true,
    },
  ];
  for (const r of rows) {
    it(r.rule, () => {
      const v = judgeSend({ lease_ms: r.lease_ms, unreachable_since_ms: r.unreachable_since_ms }, r.now);
      expect(v.kind).toBe(r.held ? "hold" : "send");
      if (v.kind === "hold" && r.unreachable_since_ms !== null && r.lease_ms !== null)
        expect(v.held_since_ms).toBe(r.unreachable_since_ms + holdRenewalsAfterMs(r.lease_ms));
    });
  }
});

describe("the probe of a held node", () => {
  const controller = signingKeyFromSeed(new Uint8Array(32).fill(1));
  const node = signingKeyFromSeed(new Uint8Array(32).fill(2));
  const nodeId = nodeIdOf(node.publicKey);

  it("is refused `expired` at verification by every node whose clock is within the skew bound, so it renews nothing", () => {
    const now = 1_700_000_000_000;
    for (let offset = -CLOCK_SKEW_BOUND_MS; offset <= CLOCK_SKEW_BOUND_MS; offset += 250) {
      const times = probeTimes(now);
      const { signed } = signRequest(controller, {
        method: "describe",
        target: nodeId,
        targetBoot: null,
        nonce: "0123456789abcdef0123456789abcdef",
        issuedAtMs: times.issued_at_ms,
        validityMs: times.validity_ms,
        decisionId: null,
        authority: null,
        body: {},
      });
      const verdict = verifyRequest(signed, {
        nodeId,
        bootId: "boot",
        nowMs: now + offset,
        authorised: new Set([controller.publicKey]),
        guard: new NonceGuard(),
      });
      // Refused before check 15: the node's lease (renewed only for an accepted request, rule 1) is not touched.
      expect(verdict).toMatchObject({ kind: "refused", code: "expired" });
    }
  });
});

/**
 * The whole argument over random worlds: a leased node goes silent at `silentAt` (it may still receive every request
 * the controller sends — a one-way link, the worst case for the lease — but answers none). The controller asks it every
 * `every` ms; each request is judged by `judgeSend` at its issue stamp, a sent one is stamped (rule 4) and a contact
 * that got no answer is recorded at the end of its timeout. The node renews from every request it receives (rule 1),
 * on a clock `offset` from the controller's, delivered after `delay`.
 */
describe("a silent leased node over random clocks, delays and cadences", () => {
  it("stops getting renewals half a lease after it was first suspected, its lease is then judged over in bounded time, and never before its copies have stopped", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3_000, max: 120_000 }), // lease_ms
        fc.integer({ min: 250, max: 10_000 }), // the renewal cadence
        fc.integer({ min: 500, max: 20_000 }), // the call timeout
        fc.integer({ min: -CLOCK_SKEW_BOUND_MS, max: CLOCK_SKEW_BOUND_MS }), // node clock − controller clock
        fc.integer({ min: 0, max: 2_000 }), // delivery delay of each request
        fc.integer({ min: 0, max: 50_000 }), // when the node goes silent
        (leaseMs, every, timeout, offset, delay, silentAt) => {
          let unreachableSince: number | null = null;
          let lastStamp: number | null = null;
          let nodeDeadline: number | null = null; // on the node's clock
          let failures: number[] = []; // when unanswered contacts end
          const horizon = silentAt + timeout + every + holdRenewalsAfterMs(leaseMs) + leaseWaitMs(leaseMs) + 60_000;
          let overAt: number | null = null;
          for (let t = 0; t <= horizon; t += every) {
            for (const f of failures) if (f <= t) unreachableSince ??= f;
            failures = failures.filter((f) => f > t);
            if (unreachableSince === null && t >= silentAt) failures.push(t + timeout);
            const send = judgeSend({ lease_ms: leaseMs, unreachable_since_ms: unreachableSince }, t);
            if (send.kind === "send") {
              lastStamp = t;
              // Every sent request reaches the node (worst case); before the silence its answers come back too.
              const arrivalNode = t + delay + offset;
              nodeDeadline = renewedDeadline(nodeDeadline, judgeRenewal(t, arrivalNode, leaseMs));
              if (unreachableSince !== null) expect(t).toBeLessThan(unreachableSince + holdRenewalsAfterMs(leaseMs));
            }
            const judged = leaseCertainlyOver(leaseMs, lastStamp, t);
            if (judged.kind === "over" && overAt === null) overAt = t;
          }
          // Bounded: the lease is judged over by the time the argument says, once the node is held.
          expect(overAt).not.toBeNull();
          expect(unreachableSince).not.toBeNull();
          const since = Number(unreachableSince);
          expect(overAt as number).toBeLessThanOrEqual(
            since + holdRenewalsAfterMs(leaseMs) + leaseWaitMs(leaseMs) + every,
          );
          // Safe: by then the node's clock has passed its deadline, and the grace and stop margin have run out.
          const deadlineRealTime = (nodeDeadline as number) - offset;
          expect(overAt as number).toBeGreaterThanOrEqual(
            deadlineRealTime + LEASE_STOP_GRACE_MS + LEASE_STOP_MARGIN_MS,
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});
