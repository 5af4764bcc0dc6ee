/**
 * Issue 37: `berth serve` warns, in its log, when a node's lease is shorter than what its agents need to outlive a
 * controller takeover (`leaseShorterThanOutage` against the failover bound at this server's leader TTL) while no
 * standby server runs on the store to renew through one (no other process has held a live owner lease on the store
 * for a minute, or for as long as this server has run if that is less: two servers started together count each
 * other). Once per node and lease; a store that cannot be read now is asked again at the next round.
 *
 * Shell: told each round of the lease keeper (the leased nodes), reads the store's owner leases.
 */
import { performance } from "node:perf_hooks";
import { failoverBoundMs } from "../../core/mesh/leader-lease.js";
import { leaseShorterThanOutage, leaseWarning, STANDBY_HELD_MS } from "../../core/mesh/lease.js";
import type { MeshController } from "../../mesh/controller/index.js";

type Access = Pick<MeshController, "leaderTiming" | "store">;

export function shortLeaseWarner(
  controller: Access,
  warn: (message: string, fields: Record<string, unknown>) => void,
): (nodes: ReadonlyArray<{ readonly node_id: string; readonly lease_ms: number }>) => void {
  const warned = new Set<string>();
  const startedMono = performance.now();
  let asking = false;
  return (nodes) => {
    const timing = controller.leaderTiming();
    if (timing === null || asking) return;
    const boundMs = failoverBoundMs(timing);
    const short = nodes.filter(
      (n) => leaseShorterThanOutage(n.lease_ms, boundMs) && !warned.has(`${n.node_id}/${n.lease_ms}`),
    );
    if (short.length === 0) return;
    asking = true;
    controller.store
      .longLivedPeers(Math.min(STANDBY_HELD_MS, performance.now() - startedMono))
      .then((peers) => {
        if (peers > 0) return;
        for (const n of short) {
          warned.add(`${n.node_id}/${n.lease_ms}`);
          warn(leaseWarning(n.node_id, n.lease_ms, boundMs), {
            node: n.node_id,
            lease_ms: n.lease_ms,
            failover_bound_ms: boundMs,
          });
        }
      })
      .catch(() => undefined)
      .finally(() => {
        asking = false;
      });
  };
}
