/**
 * Issue 37, F1: the node leases outlive a controller outage when a standby exists. Every `berth serve` on a store —
 * the leader and each follower alike — renews the lease of every node that advertises one, at a cadence derived from
 * the shortest such lease (`leaseRenewEveryMs`: a quarter of it, at most the lifecycle tick), not on the leader's
 * 10 s tick alone. So a crash or a pause of the leader (or of any one server) leaves every node renewed by the others
 * as often as before, and no leased agent is stopped while one server of the store runs.
 *
 * Why a follower may renew: a renewal is a `describe`, a read, which the node serves for any process holding the
 * controller key (docs/concepts.md "The node lease", A5) and which changes nothing there but the lease. Like every
 * request it is stamped in the shared store before it leaves (rule 4), so the leader's rule-5 judgement of a lease
 * counts the follower's renewals exactly as it counts a CLI verb's; a follower cut from the store cannot stamp, and
 * so sends nothing. Nothing here decides or acts on an agent.
 *
 * A node that has answered nothing for half its lease is not renewed any more (issue 37, F5): its describe is held
 * before it leaves and a probe that cannot renew goes instead (Targets.refresh, core/mesh/silent-node.ts), so a silent
 * node's lease runs out and its agents can be moved; an answered probe ends the hold and the describe goes at once.
 *
 * Shell: timers and calls. One describe per node in flight at a time (a node that holds its answers is not asked
 * again until the call ends or times out: the stamp of the call in flight already counts); rounds start every
 * interval whatever one node does, so a slow node never delays another's renewal.
 */
import { performance } from "node:perf_hooks";
import { leaseRenewEveryMs } from "../../core/mesh/lease.js";
import type { MeshController } from "../../mesh/controller/index.js";

export interface LeaseKeeperOptions {
  /** The lifecycle tick: the slowest cadence, and how often a store with no leased node is looked at again. */
  readonly tickMs: number;
  /** Told every round: the interval chosen and the leased nodes (logs, the bench). */
  readonly onRound?: (round: {
    readonly every_ms: number | null;
    readonly nodes: ReadonlyArray<{ readonly node_id: string; readonly lease_ms: number }>;
  }) => void;
  /** Told when a renewal was not answered (the node is recorded suspect by the describe itself). */
  readonly onMissed?: (nodeId: string) => void;
  readonly onError: (error: unknown) => void;
}

export interface LeaseKeeper {
  /** Stops the rounds and waits for the renewals in flight, so the store can be closed after. */
  stop(): Promise<void>;
}

type Access = Pick<MeshController, "leasedNodes" | "renewNodeLease">;

export function startLeaseKeeper(controller: Access, o: LeaseKeeperOptions): LeaseKeeper {
  const inFlight = new Map<string, Promise<void>>();
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let round: Promise<void> | null = null;

  const renew = (nodeId: string) => {
    if (inFlight.has(nodeId)) return;
    const call = controller
      .renewNodeLease(nodeId)
      .then(
        (answered) => {
          if (!answered && !stopped) o.onMissed?.(nodeId);
        },
        (error: unknown) => {
          if (!stopped) o.onError(error);
        },
      )
      .finally(() => inFlight.delete(nodeId));
    inFlight.set(nodeId, call);
  };

  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(run, ms);
    timer.unref();
  };

  function run(): void {
    timer = null;
    if (stopped) return;
    const began = performance.now();
    let every: number | null = null;
    round = controller
      .leasedNodes()
      .then((nodes) => {
        if (stopped) return;
        every = leaseRenewEveryMs(nodes.length === 0 ? null : Math.min(...nodes.map((n) => n.lease_ms)), o.tickMs);
        o.onRound?.({ every_ms: every, nodes });
        for (const n of nodes) renew(n.node_id);
      })
      .catch((error: unknown) => {
        if (!stopped) o.onError(error);
      })
      .finally(() => {
        round = null;
        // The interval counts from the round's start: a slow store read does not stretch it.
        schedule(Math.max(0, (every ?? o.tickMs) - (performance.now() - began)));
      });
  }

  run();
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await round;
      await Promise.all([...inFlight.values()]);
    },
  };
}
