/**
 * The fenced leader of a controller store (issue 20; docs/ha.md): several `berth serve` processes share one store
 * (one PostgreSQL, or one SQLite file on one machine), and exactly one of them is leader at a time, by one lease row
 * (`berth_leader`) with an epoch from the store's counter that only grows.
 *
 * Structural rules:
 * - whether the row may be taken is judged on the **database's clock** (`db_now_ms`, read in the transaction that
 *   takes it): a follower takes over only once `renewed_ms + ttl_ms` has passed there, and `renewed_ms` is written
 *   from the same clock, so the hosts' wall clocks never meet;
 * - the leader acts only until `actForMs` after it *began* its last successful renewal, measured on its own
 *   monotonic clock (which runs on while the process is stopped). The renewal committed at or after that beginning,
 *   so a successor's takeover comes later than `ttl_ms` after it: the margin `ttl_ms − actForMs` is what the
 *   leader's clock rate may drift from the database's over one TTL, plus scheduling slack (TTL/5, 20 %);
 * - it renews every TTL/5, so four renewals in a row can fail (a slow or unreachable database) before it stops;
 * - a follower steps again the moment the leader's row lapses on the database's clock, not at its next interval, so
 *   a takeover after a crash or a pause takes TTL plus one step (issue 37: failover within 3 s at the default TTL);
 * - a new leadership always takes a new epoch, so every node that sees the successor refuses the deposed leader
 *   (`stale_epoch`, src/core/mesh/epoch-fence.ts), whatever the clocks did.
 *
 * Pure: the shell (src/store/leader.ts) reads the row, the clocks, and writes what this decides.
 */

export interface LeaderRow {
  readonly owner_id: string;
  readonly epoch: number;
  readonly renewed_ms: number;
  readonly ttl_ms: number;
  /** Where the leader serves its API (`http://host:port`), for followers to point writes at. */
  readonly address: string | null;
  readonly host: string;
  readonly pid: number;
  readonly released_ms: number | null;
}

export type LeaderVerdict =
  | { readonly kind: "renew" }
  | { readonly kind: "take"; readonly why: string }
  | { readonly kind: "follow"; readonly leader: LeaderRow };

/**
 * What one process should do with the lease row, judged at `dbNowMs` (the database's clock). `heldEpoch` is the
 * epoch this process believes it leads under (null when it does not): only that exact leadership is renewed. A row
 * still naming this process at another epoch (it stopped acting when its window ran out) is taken anew, with a new
 * epoch: nobody else holds it, and a new epoch fences whatever the old one may still have in flight.
 */
export function judgeLeader(
  row: LeaderRow | null,
  ownerId: string,
  heldEpoch: number | null,
  dbNowMs: number,
): LeaderVerdict {
  if (row === null) return { kind: "take", why: "the store has had no leader" };
  if (row.released_ms !== null)
    return { kind: "take", why: `the leader (pid ${row.pid} on ${row.host}, epoch ${row.epoch}) stepped down` };
  if (row.owner_id === ownerId)
    return row.epoch === heldEpoch
      ? { kind: "renew" }
      : {
          kind: "take",
          why: `this process led under epoch ${row.epoch} and stopped acting; it leads again under a new epoch`,
        };
  const silent = dbNowMs - row.renewed_ms;
  if (silent > row.ttl_ms)
    return {
      kind: "take",
      why: `the leader (pid ${row.pid} on ${row.host}, epoch ${row.epoch}) has not renewed for ${silent} ms (TTL ${row.ttl_ms} ms)`,
    };
  return { kind: "follow", leader: row };
}

/**
 * The leader a follower may name to a caller, judged on the database's clock: the row's holder while its lease runs,
 * else nobody (released, or silent past its TTL: it is dead or stopped acting, and a successor is being elected).
 */
export function liveLeader(row: LeaderRow | null, dbNowMs: number): LeaderRow | null {
  if (row === null || row.released_ms !== null) return null;
  return dbNowMs - row.renewed_ms > row.ttl_ms ? null : row;
}

export interface LeaderTiming {
  readonly ttlMs: number;
  readonly renewEveryMs: number;
  /** How long after the start of its last successful renewal the leader may still act. */
  readonly actForMs: number;
}

/**
 * Issue 37: 2.5 s, so a takeover after a crash or a pause (TTL + one follower step) stays within 3 s. The price is a
 * leader that steps down when four renewals in a row (2 s) fail. It leads again only under a new epoch, even when
 * nobody took the row meanwhile: its window ran out, so other processes may have judged its owner lease (renewed
 * with this TTL) gone and recovered its decisions under the store's epoch, and only a new epoch lets its first
 * describes fence what it still had in flight under the old one. A stall costs that leader its requests in flight
 * (`stale_epoch`), never a weaker fence.
 */
export const DEFAULT_LEADER_TTL_MS = 2_500;

/**
 * The longest a store is without an acting leader after its leader crashed or froze, with a follower standing by:
 * the TTL on the database's clock plus one follower step (it steps at the lapse; one interval covers a step that was
 * in flight then). A clean stop releases the row and takes one step.
 */
export function failoverBoundMs(timing: LeaderTiming): number {
  return timing.ttlMs + timing.renewEveryMs;
}

/**
 * When a follower should step next, given the row it just followed, judged on the database's clock: at the lapse
 * (plus a millisecond) when that comes before its next interval, else at the interval.
 */
export function nextFollowerStepMs(leader: LeaderRow, dbNowMs: number, timing: LeaderTiming): number {
  const lapse = leader.renewed_ms + leader.ttl_ms - dbNowMs + 1;
  return Math.max(1, Math.min(timing.renewEveryMs, lapse));
}

export function leaderTiming(ttlMs: number = DEFAULT_LEADER_TTL_MS): LeaderTiming {
  const fifth = Math.floor(ttlMs / 5);
  return { ttlMs, renewEveryMs: fifth, actForMs: ttlMs - fifth };
}

/** Whether a leader whose last successful renewal began at `renewStartMono` may still act at `nowMono`. */
export function mayAct(renewStartMono: number, nowMono: number, timing: LeaderTiming): boolean {
  return nowMono >= renewStartMono && nowMono < renewStartMono + timing.actForMs;
}
