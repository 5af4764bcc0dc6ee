/** §8.2 `dead_after` from the environment every process on a home shares (the CLI, `berth serve`, `berth up`). */
import { z } from "zod";
import { DEFAULT_DEAD_AFTER_MS } from "../../core/mesh/node-liveness.js";

const DeadAfterEnv = z.coerce
  .number()
  .int()
  .min(100, "must be at least 100 (ms)")
  .max(7 * 24 * 3600 * 1000, "must be at most a week (ms)");

/**
 * `dead_after` for every process on this home: the CLI, `berth serve` and `berth up` must judge the same stored
 * contacts the same way, so the setting comes from the environment they share rather than a flag of one verb.
 */
export function deadAfterFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env.BERTH_DEAD_AFTER_MS;
  if (raw === undefined || raw === "") return DEFAULT_DEAD_AFTER_MS;
  const parsed = DeadAfterEnv.safeParse(raw);
  if (!parsed.success)
    throw new ControllerError(`BERTH_DEAD_AFTER_MS: ${parsed.error.issues[0]?.message ?? "must be an integer (ms)"}`);
  return parsed.data;
}

export class ControllerError extends Error {
  override name = "ControllerError";
}
