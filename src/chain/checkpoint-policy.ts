/**
 * When a chain takes a checkpoint on its own (spec/audit-chain.md §10; issue 38): every N events (the append of the
 * event whose seq is a multiple of N takes it, in its transaction) and T after the previous one when events were
 * appended since (each long-lived process checks at least every minute), besides clean shutdown and `berth audit
 * checkpoint`. Each is chained as a `chain.checkpoint` event carrying its Merkle checkpoint note.
 *
 * Defaults N = 1000 events, T = 600 s; `$BERTH_CHECKPOINT_EVERY_EVENTS` and `$BERTH_CHECKPOINT_EVERY_SECONDS` change
 * them for `berth serve`, `berth up` and node daemons (read once at start).
 */
import { z } from "zod";

export const CHECKPOINT_EVERY_EVENTS = 1000;
export const CHECKPOINT_EVERY_MS = 600_000;

export interface CheckpointPolicy {
  /** A checkpoint at every seq that is a multiple of this (≥ 2: a checkpoint event itself takes a seq). */
  readonly everyEvents: number;
  /** A checkpoint this long after the previous one, when events were appended since. */
  readonly everyMs: number;
}

export const DEFAULT_CHECKPOINT_POLICY: CheckpointPolicy = {
  everyEvents: CHECKPOINT_EVERY_EVENTS,
  everyMs: CHECKPOINT_EVERY_MS,
};

const Events = z.coerce.number().int().min(2).max(1_000_000_000);
const Seconds = z.coerce.number().int().min(1).max(31_536_000);

export class CheckpointPolicyError extends Error {
  override name = "CheckpointPolicyError";
}

/** The policy from the environment; a value that is not a whole number in range is refused, naming the variable. */
export function checkpointPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): CheckpointPolicy {
  const read = (name: string, schema: z.ZodType<number>, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const parsed = schema.safeParse(raw);
    if (!parsed.success)
      throw new CheckpointPolicyError(`${name}: ${parsed.error.issues[0]?.message ?? "must be a whole number"}`);
    return parsed.data;
  };
  return {
    everyEvents: read("BERTH_CHECKPOINT_EVERY_EVENTS", Events, CHECKPOINT_EVERY_EVENTS),
    everyMs: read("BERTH_CHECKPOINT_EVERY_SECONDS", Seconds, CHECKPOINT_EVERY_MS / 1000) * 1000,
  };
}

/** How often a long-lived process asks `checkpointIfDue`: each minute, or sooner when T is shorter. */
export function checkpointPollMs(policy: CheckpointPolicy): number {
  return Math.min(60_000, policy.everyMs);
}
