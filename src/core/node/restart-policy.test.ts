import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { judgeHealth } from "./health-check.js";
import {
  backoffMs,
  decideRestart,
  pruneRestarts,
  RESTART_BUDGET,
  type RestartDecision,
  type RestartPolicy,
  type RunEnd,
} from "./restart-policy.js";

const crash: RunEnd = { kind: "exited", exitCode: 3, signal: null };
const clean: RunEnd = { kind: "exited", exitCode: 0, signal: null };
const killed: RunEnd = { kind: "exited", exitCode: null, signal: "SIGKILL" };
const W = RESTART_BUDGET.windowMs;

const decide = (
  policy: RestartPolicy,
  end: RunEnd,
  restartsMs: number[] = [],
  nowMs = 1_000_000_000,
  mode: "service" | "once" = "service",
): RestartDecision => decideRestart({ policy, mode, end, restartsMs, nowMs });

describe("the restart policy", () => {
  it.each([
    ["never", "exits with code 3", crash, "final"],
    ["never", "is killed by SIGKILL", killed, "final"],
    ["never", "exits 0", clean, "final"],
    ["on-failure", "exits with code 3", crash, "restart"],
    ["on-failure", "is killed by SIGKILL", killed, "restart"],
    ["on-failure", "exits 0", clean, "final"],
    ["on-failure", "is lost with the host", { kind: "lost", detail: "host restarted" }, "restart"],
    [
      "on-failure",
      "fails its health check three times",
      { kind: "unhealthy", misses: 3, lastError: "exit code 1" },
      "restart",
    ],
    ["always", "exits with code 3", crash, "restart"],
    ["always", "exits 0", clean, "restart"],
    [
      "always",
      "fails its health check three times",
      { kind: "unhealthy", misses: 3, lastError: "timed out" },
      "restart",
    ],
  ] as const)("under %s, a service that %s gets a %s decision", (policy, _what, end, kind) => {
    expect(decide(policy, end).kind).toBe(kind);
  });

  it("says which restart of the budget it is and why, in the chained reason", () => {
    expect(decide("on-failure", crash)).toEqual({
      kind: "restart",
      attempt: 1,
      delayMs: 0,
      atMs: 1_000_000_000,
      reason: "restart 1/3: exited with code 3",
    });
    expect(
      decide("always", killed, [1_000_000_000 - 5000]).kind === "restart" &&
        decide("always", killed, [1_000_000_000 - 5000]),
    ).toMatchObject({
      attempt: 2,
      reason: "restart 2/3: killed by SIGKILL",
    });
  });

  it("restarts the first time at once, then waits 1 s doubling per restart in the window, capped at 30 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(backoffMs)).toEqual([0, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    const now = 5 * W;
    expect(decide("always", crash, [now - 2000], now)).toMatchObject({
      kind: "restart",
      delayMs: 1000,
      atMs: now + 1000,
    });
    expect(decide("always", crash, [now - 3000, now - 1000], now)).toMatchObject({ kind: "restart", delayMs: 2000 });
  });

  it("is failed once three restarts happened in the last ten minutes, and forgets restarts older than that", () => {
    const now = 5 * W;
    const spent = decide("always", crash, [now - 60_000, now - 30_000, now - 1000], now);
    expect(spent.kind).toBe("failed");
    expect(spent.kind === "failed" && spent.reason).toMatch(
      /^restart budget spent \(3 restarts in 10 min\): exited with code 3/,
    );
    expect(decide("always", crash, [now - W, now - 30_000, now - 1000], now)).toMatchObject({
      kind: "restart",
      attempt: 3,
    });
    expect(pruneRestarts([now - W - 1, now - W, now - W + 1, now], now)).toEqual([now - W + 1, now]);
  });

  it("calls a once workload that exited 0 finished under every policy, and restarts a failed one only when asked", () => {
    for (const policy of ["never", "on-failure", "always"] as const)
      expect(decide(policy, clean, [], 0, "once")).toMatchObject({ kind: "final", state: "finished" });
    expect(decide("always", crash, [], 0, "once").kind).toBe("restart");
    expect(decide("never", crash, [], 0, "once")).toMatchObject({ kind: "final", state: "exited" });
  });

  it("never lets more than three restarts into any ten-minute window, whatever the exits and the clock do", () => {
    // A run of ends at increasing times (gaps from 0 to 15 min); each granted restart happens at its atMs, and the next
    // end comes at or after it, as on a node.
    const ends = fc.array(
      fc.record({
        gapMs: fc.integer({ min: 0, max: 15 * 60_000 }),
        end: fc.constantFrom<RunEnd>(crash, killed, clean, { kind: "lost", detail: "x" }),
      }),
      {
        minLength: 1,
        maxLength: 60,
      },
    );
    fc.assert(
      fc.property(fc.constantFrom<RestartPolicy>("on-failure", "always"), ends, (policy, run) => {
        const restarts: number[] = [];
        let now = 0;
        let failed = false;
        for (const { gapMs, end } of run) {
          if (failed) break;
          now += gapMs;
          const d = decideRestart({
            policy,
            mode: "service",
            end,
            restartsMs: pruneRestarts(restarts, now),
            nowMs: now,
          });
          if (d.kind === "failed") failed = true;
          if (d.kind === "restart") {
            expect(d.atMs).toBeGreaterThanOrEqual(now);
            restarts.push(d.atMs);
            now = d.atMs;
          }
        }
        for (const t of restarts)
          expect(restarts.filter((u) => u >= t && u < t + W).length).toBeLessThanOrEqual(RESTART_BUDGET.restarts);
      }),
      { numRuns: 500 },
    );
  });

  it("never restarts under never, and a failed decision is not undone by waiting (the caller holds it)", () => {
    fc.assert(
      fc.property(fc.constantFrom<RunEnd>(crash, killed, clean), fc.nat(), (end, now) => {
        expect(decide("never", end, [], now).kind).toBe("final");
      }),
    );
  });
});

describe("the health verdict", () => {
  const spec = { exec: ["./check"], interval_s: 1, misses: 3 };
  it("is unhealthy only after misses consecutive failures, and one success clears the count", () => {
    const fail = { ok: false as const, error: "exit code 1" };
    expect(judgeHealth(spec, 0, fail)).toEqual({ kind: "missed", misses: 1, error: "exit code 1" });
    expect(judgeHealth(spec, 1, fail).kind).toBe("missed");
    expect(judgeHealth(spec, 2, fail)).toEqual({ kind: "unhealthy", misses: 3, error: "exit code 1" });
    expect(judgeHealth(spec, 2, { ok: true, value: undefined })).toEqual({ kind: "healthy", misses: 0 });
  });
});
