/**
 * Rescheduling rules (spec/mesh.md §15 "Rescheduling", issue 16): whether a placement may move off its node, the order
 * the new `place()` runs with, the per-agent retry backoff, and when a failed attempt is chained.
 *
 * - A pinned order or a package whose policy says `migratable: false` (or `sticky: true`) is never moved: the loop
 *   alerts instead. Moving it would break what its author declared.
 * - At most `MAX_RESCHEDULES` per placement lineage: a workload that kills every node it lands on is held for the
 *   operator rather than walked across the mesh.
 * - The new order is the stored one with the node it leaves added to `avoid` (the engine already refuses a dead node
 *   by liveness; `avoid` keeps a drained or returning node last), never pinned, and starting as before.
 *
 * Pure.
 */
import { err, ok, type Result } from "../../kit/result.js";

export const MAX_RESCHEDULES = 5;

/** Why a record left its node: the lease ran out, the node lost it, the operator drained or forgot the node. */
export const MOVE_AUTHORITIES = ["lease", "lost", "drain", "forget"] as const;
export type MoveAuthority = (typeof MOVE_AUTHORITIES)[number];
/** §15: retry backoff 10 s doubling, capped at 300 s (also the keep loop's per-agent backoff). */
export const BACKOFF_BASE_MS = 10_000;
export const BACKOFF_CAP_MS = 300_000;
/** The engine's `avoid` list holds at most this many nodes (order.ts); the oldest entries give way. */
export const AVOID_MAX = 16;

export interface MovableRecord {
  readonly pinned: boolean;
  readonly migratable: boolean;
  readonly sticky: boolean;
  /** How many times this placement's lineage has been moved already. */
  readonly reschedules: number;
}

/** Why a placement stays where it is: the alert's reason and the sentence that explains it. */
export interface MoveRefusal {
  readonly reason: "pinned" | "not_migratable" | "sticky" | "reschedule_limit";
  readonly detail: string;
}

/** The placement may move, or why it may not. */
export type MoveVerdict = Result<void, MoveRefusal>;

export function mayReschedule(r: MovableRecord): MoveVerdict {
  if (r.pinned) return err({ reason: "pinned", detail: "the order pins it to its node; it is never moved" });
  if (!r.migratable)
    return err({ reason: "not_migratable", detail: "its package declares migratable: false; it is never moved" });
  if (r.sticky) return err({ reason: "sticky", detail: "its package declares sticky: true; it is never moved" });
  if (r.reschedules >= MAX_RESCHEDULES) {
    return err({
      reason: "reschedule_limit",
      detail: `moved ${r.reschedules} times already (at most ${MAX_RESCHEDULES}); held for the operator`,
    });
  }
  return ok();
}

/** The parts of a stored order rescheduling changes (the rest is copied as stored). */
export interface MovableOrder {
  readonly pin: string | null;
  readonly avoid: readonly string[];
  readonly dry_run: boolean;
}

export function rescheduleOrder<O extends MovableOrder>(stored: O, leaving: string): O {
  const avoid = [...stored.avoid.filter((n) => n !== leaving), leaving].slice(-AVOID_MAX);
  return { ...stored, pin: null, avoid, dry_run: false };
}

/** The wait after `failures` consecutive failed attempts: 0, then 10 s, 20 s, 40 s … capped at 300 s. */
export function backoffMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 30));
}

/** §15: a failed attempt (and any alert) is chained only when its reason differs from the last one chained. */
export function chainsAlert(lastChainedReason: string | null, reason: string): boolean {
  return lastChainedReason !== reason;
}
