/**
 * Issue 20: a follower's answer to a write. Several `berth serve` may share one store; only the leader acts, so a
 * follower does nothing itself for a write (not even the `api.call` record, which would be a write in the follower's
 * name). Issue 37 (F3): it forwards the write to the leader the store names *now* (forward.ts), so a caller of any
 * server is served through a failover; when the store names no leader (the row lapsed and nobody took it yet), when
 * this server cannot read the store, or when the request was already forwarded once, it answers 503 with
 * `Retry-After` and where the leader is (docs/ha.md).
 */
import type { MeshController } from "../mesh/controller/index.js";

export interface NotLeaderAnswer {
  readonly error: { readonly code: "not_leader"; readonly message: string };
  readonly leader: {
    readonly url: string | null;
    readonly epoch: number;
    readonly host: string;
    readonly pid: number;
  } | null;
}

/** What a follower does with a write: forward it to the leader named now, or answer it 503 (nothing done). */
export type FollowerVerdict =
  | {
      readonly kind: "forward";
      readonly url: string;
      readonly epoch: number;
      readonly ownerId: string;
      readonly answer: NotLeaderAnswer;
    }
  | { readonly kind: "answer"; readonly answer: NotLeaderAnswer; readonly retryAfterS: number };

/**
 * Null when this process leads. `forwarded`: the request already came through another server (it is never
 * forwarded twice: two followers that each name the other would bounce it). `retryAfterS`: what a caller is told to
 * wait when nobody leads (the failover bound, rounded up).
 */
export async function followerVerdict(
  controller: Pick<MeshController, "currentLeaderView">,
  o: { readonly forwarded: boolean; readonly retryAfterS: number },
): Promise<FollowerVerdict | null> {
  const view = await controller.currentLeaderView();
  if (view === null || view.leading) return null;
  const l = view.leader;
  const leader = l && l.released_ms === null ? { url: l.address, epoch: l.epoch, host: l.host, pid: l.pid } : null;
  const answer: NotLeaderAnswer = {
    error: {
      code: "not_leader",
      message: leader
        ? `this server is a follower: writes go to the leader at ${leader.url ?? `pid ${leader.pid} on ${leader.host}`} (epoch ${leader.epoch}); nothing was done`
        : "this server is a follower and no leader holds the store right now (one is elected within the failover bound); nothing was done, try again",
    },
    leader,
  };
  if (l !== null && leader?.url && view.fresh && !o.forwarded)
    return { kind: "forward", url: leader.url, epoch: leader.epoch, ownerId: l.owner_id, answer };
  return { kind: "answer", answer, retryAfterS: leader ? 1 : o.retryAfterS };
}
