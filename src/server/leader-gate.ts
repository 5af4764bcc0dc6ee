/**
 * Issue 20: a follower's answer to a write. Several `berth serve` may share one store; only the leader acts, so a
 * follower serves reads and answers every mutating route with where the leader is (docs/ha.md), doing nothing:
 * not even the `api.call` record, which would be a write in the follower's name.
 */
import type { MeshController } from "../mesh/controller/index.js";

export interface NotLeaderAnswer {
  readonly error: { readonly code: "not_leader"; readonly message: string };
  readonly leader: { readonly url: string | null; readonly epoch: number; readonly host: string; readonly pid: number } | null;
}

/**
 * The 503 body for a write on a follower, or null when this process leads (or does not compete: one controller). The
 * leader it names is read from the lease row now (one read), not remembered from its last step: a follower asked
 * just after a takeover names the new leader, never the dead one (and nobody while the row has lapsed untaken).
 */
export async function notLeaderAnswer(controller: Pick<MeshController, "currentLeaderView">): Promise<NotLeaderAnswer | null> {
  const view = await controller.currentLeaderView();
  if (view === null || view.leading) return null;
  const l = view.leader;
  const leader = l && l.released_ms === null ? { url: l.address, epoch: l.epoch, host: l.host, pid: l.pid } : null;
  return {
    error: {
      code: "not_leader",
      message: leader
        ? `this server is a follower: writes go to the leader at ${leader.url ?? `pid ${leader.pid} on ${leader.host}`} (epoch ${leader.epoch}); nothing was done`
        : "this server is a follower and no leader holds the store right now (one is elected within the lease TTL); nothing was done, try again",
    },
    leader,
  };
}
