/**
 * The instance observations' SQL (issue 35, schema v12): each placed instance as its node last reported it
 * (core/mesh/instance-observation.ts). Written by whoever had a verified status answer (the serve loop's pass, a
 * deploy, `--refresh`), read by the lists that ask no node (stored-reads.ts). Not chained: an observation is not a
 * decision. A later observation always wins, whichever process records last (the same rule as the contacts).
 */
import type { ObservedInstance } from "../../core/mesh/instance-observation.js";
import type { Query, Tx } from "../../store/engine.js";

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** Records each observation unless one seen later is already stored for its instance. */
export async function recordObservations(tx: Tx, observations: readonly ObservedInstance[]): Promise<void> {
  for (const o of observations) {
    await tx.run(
      `INSERT INTO mesh_observations (instance_id, node_id, state, lifecycle, restarts, pid, started_ms, seen_ms) VALUES (?,?,?,?,?,?,?,?)
       ON CONFLICT (instance_id) DO UPDATE SET node_id = excluded.node_id, state = excluded.state, lifecycle = excluded.lifecycle,
         restarts = excluded.restarts, pid = excluded.pid, started_ms = excluded.started_ms, seen_ms = excluded.seen_ms
       WHERE excluded.seen_ms >= mesh_observations.seen_ms`,
      [o.instance_id, o.node_id, o.state, o.lifecycle, o.restarts, o.pid, o.started_ms, o.seen_ms],
    );
  }
}

/** An instance's observation goes with its placement (placement ended, moved, released). */
export async function dropObservation(tx: Tx, instanceId: string): Promise<void> {
  await tx.run("DELETE FROM mesh_observations WHERE instance_id = ?", [instanceId]);
}

/** Every stored observation, by instance id. */
export async function observationsOn(q: Query): Promise<Map<string, ObservedInstance>> {
  const rows = await q.all<{
    instance_id: string;
    node_id: string;
    state: string;
    lifecycle: string | null;
    restarts: number | string | null;
    pid: number | string | null;
    started_ms: number | string | null;
    seen_ms: number | string;
  }>("SELECT instance_id, node_id, state, lifecycle, restarts, pid, started_ms, seen_ms FROM mesh_observations");
  return new Map(
    rows.map((r) => [
      r.instance_id,
      { ...r, restarts: num(r.restarts), pid: num(r.pid), started_ms: num(r.started_ms), seen_ms: Number(r.seen_ms) },
    ]),
  );
}
