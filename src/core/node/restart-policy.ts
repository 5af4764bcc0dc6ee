/**
 * The restart policy (issue 15, spec/mesh.md §15): what a node does when an instance it was asked to keep running
 * ends or stops answering its health check. One vocabulary for both targets: the agent spec's `spec.restart`, the
 * place order's `restart` and the node's place body carry the same three words.
 *
 * - `never`: an exit is final (the default for `berth place`, which is how berth behaved before supervision);
 * - `on-failure`: restarted after a non-zero exit, a signal, a lost process or `misses` failed health checks; a clean
 *   exit is final;
 * - `always`: restarted after any end of a `service` instance (the default for `berth deploy` of an agent, which is
 *   meant to be long-lived). A `once` workload that exits 0 is `finished` under every policy: it did its job.
 *
 * Structural rules of `decideRestart` (each a unit or property test in restart-policy.test.ts):
 * - the budget never lets more than `RESTART_BUDGET.restarts` restarts into any window of `RESTART_BUDGET.windowMs`:
 *   a restart is granted only while fewer than that many happened in the window ending now, and it happens at or
 *   after now, so the window ending at its own time holds at most the budget (the restarts it counts are a subset);
 * - the first restart in a window is immediate, the n-th waits 1 s × 2^(n−2), capped at 30 s;
 * - a spent budget is `failed`, never a later restart: the caller holds the instance for the operator, whose start
 *   begins a fresh budget (the caller clears the history), and a stop through berth never reaches this function.
 */
import { z } from "zod";

export const RESTART_POLICIES = ["never", "on-failure", "always"] as const;
export type RestartPolicy = (typeof RESTART_POLICIES)[number];

export const RestartPolicySchema = z.enum(RESTART_POLICIES, { error: 'must be "never", "on-failure" or "always"' });

/** `berth place` keeps today's behaviour unless asked; `berth deploy` of an agent keeps it alive. */
export const PLACE_RESTART_DEFAULT: RestartPolicy = "never";
export const AGENT_RESTART_DEFAULT: RestartPolicy = "always";

export const RESTART_BUDGET = {
  restarts: 3,
  windowMs: 10 * 60_000,
  firstBackoffMs: 1000,
  maxBackoffMs: 30_000,
} as const;

/** How an instance's run ended, as the node observed it. */
export type RunEnd =
  | { readonly kind: "exited"; readonly exitCode: number | null; readonly signal: string | null }
  /** The process is gone and nothing says how (no exit status, or the host restarted). */
  | { readonly kind: "lost"; readonly detail: string }
  /** `misses` consecutive health checks failed; the caller has stopped (or will stop) the process. */
  | { readonly kind: "unhealthy"; readonly misses: number; readonly lastError: string };

export interface RestartInput {
  readonly policy: RestartPolicy;
  readonly mode: "service" | "once";
  readonly end: RunEnd;
  /** When earlier restarts of this instance happened (ms), since the operator last started it; any order. */
  readonly restartsMs: readonly number[];
  readonly nowMs: number;
}

export type RestartDecision =
  /** Not restarted, and nothing is wrong with that: `exited` (policy or a clean exit) or `finished` (a done `once`). */
  | { readonly kind: "final"; readonly state: "exited" | "finished"; readonly reason: string }
  /** Restart at `atMs` (= now + `delayMs`); `attempt` of `RESTART_BUDGET.restarts` in the window. */
  | {
      readonly kind: "restart";
      readonly attempt: number;
      readonly delayMs: number;
      readonly atMs: number;
      readonly reason: string;
    }
  /** The budget is spent: held `failed` for the operator. */
  | { readonly kind: "failed"; readonly reason: string };

/** "exited with code 3", "killed by SIGKILL", "3 health checks failed in a row (exit code 1)" … */
export function describeEnd(end: RunEnd): string {
  switch (end.kind) {
    case "exited":
      if (end.signal !== null) return `killed by ${end.signal}`;
      return end.exitCode === null ? "exited (no exit status)" : `exited with code ${end.exitCode}`;
    case "lost":
      return `process lost (${end.detail})`;
    case "unhealthy":
      return `${end.misses} health check${end.misses === 1 ? "" : "s"} failed in a row (${end.lastError})`;
    default: {
      const never: never = end;
      return String(never);
    }
  }
}

const isCleanExit = (end: RunEnd): boolean => end.kind === "exited" && end.signal === null && end.exitCode === 0;

/** The backoff before the restart that would be the `n`-th (1-based) in the window. */
export function backoffMs(n: number): number {
  if (n <= 1) return 0;
  return Math.min(RESTART_BUDGET.maxBackoffMs, RESTART_BUDGET.firstBackoffMs * 2 ** (n - 2));
}

export function decideRestart(input: RestartInput): RestartDecision {
  const { policy, mode, end, nowMs } = input;
  const what = describeEnd(end);
  // A once workload that did its job is finished, whatever the policy: restarting it would run the job again.
  if (mode === "once" && isCleanExit(end)) return { kind: "final", state: "finished", reason: `finished: ${what}` };
  if (policy === "never")
    return { kind: "final", state: "exited", reason: `not restarted (restart policy never): ${what}` };
  if (isCleanExit(end) && (policy === "on-failure" || mode === "once")) {
    return { kind: "final", state: "exited", reason: `not restarted (restart policy ${policy}, clean exit): ${what}` };
  }
  // Every restart later than the window's start counts, a future-dated one too (a clock stepped back), never fewer.
  const inWindow = input.restartsMs.filter((t) => t > nowMs - RESTART_BUDGET.windowMs).length;
  if (inWindow >= RESTART_BUDGET.restarts) {
    return {
      kind: "failed",
      reason: `restart budget spent (${RESTART_BUDGET.restarts} restarts in ${RESTART_BUDGET.windowMs / 60_000} min): ${what}; held for the operator (berth instance start)`,
    };
  }
  const attempt = inWindow + 1;
  const delayMs = backoffMs(attempt);
  return {
    kind: "restart",
    attempt,
    delayMs,
    atMs: nowMs + delayMs,
    reason: `restart ${attempt}/${RESTART_BUDGET.restarts}: ${what}`,
  };
}

/** The restart history worth keeping: only restarts inside the window can still count against the budget. */
export function pruneRestarts(restartsMs: readonly number[], nowMs: number): number[] {
  return restartsMs.filter((t) => t > nowMs - RESTART_BUDGET.windowMs);
}
