/**
 * The placement engine's history reading as it was before issue 35's rewrite (test oracle, see README.md): only
 * what `decide` reads.
 */
import type { PlacedTotal } from "../../../../src/core/placement/inputs.js";
import type { PlacedLoad } from "./score.js";

/** The placed load per node id from `cluster.placed` (rows for one node add up; order-independent). */
export function placedLoadsOf(totals: readonly PlacedTotal[]): ReadonlyMap<string, PlacedLoad> {
  const out = new Map<string, PlacedLoad>();
  for (const t of totals) {
    const was = out.get(t.node_id);
    out.set(
      t.node_id,
      was
        ? { count: was.count + t.count, memory_bytes: was.memory_bytes + t.memory_bytes }
        : { count: t.count, memory_bytes: t.memory_bytes },
    );
  }
  return out;
}
