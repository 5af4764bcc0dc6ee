/**
 * The health verdict (issue 15, spec/mesh.md §15): the package's `health {exec, interval_s, misses}` is run by the
 * node every `interval_s`; `misses` consecutive failures make the instance `unhealthy`, which the restart policy then
 * treats as a failure. One success clears the count. Pure: the shell runs the command and reports what it saw.
 */
import type { Result } from "../../kit/result.js";
export interface HealthSpec {
  readonly exec: readonly string[];
  readonly interval_s: number;
  readonly misses: number;
}

export type HealthProbe = Result<void>;

export type HealthVerdict =
  | { readonly kind: "healthy"; readonly misses: 0 }
  /** Failed, but fewer than `misses` times in a row. */
  | { readonly kind: "missed"; readonly misses: number; readonly error: string }
  | { readonly kind: "unhealthy"; readonly misses: number; readonly error: string };

export function judgeHealth(spec: HealthSpec, missesSoFar: number, probe: HealthProbe): HealthVerdict {
  if (probe.ok) return { kind: "healthy", misses: 0 };
  const misses = missesSoFar + 1;
  return misses >= spec.misses
    ? { kind: "unhealthy", misses, error: probe.error }
    : { kind: "missed", misses, error: probe.error };
}
