/**
 * How alive a node is, judged from what the controller store records of its last contacts (spec/mesh.md §8.2,
 * issue 16 "Node loss"). Every process that opens the store (each CLI call, `berth serve`) judges the same record
 * with the same function, so all of them show the same truth; only the clock reading differs.
 *
 * Pure: the shell records the contacts and passes the clock in.
 *
 * | record                                                    | judged    |
 * |-----------------------------------------------------------|-----------|
 * | never answered                                            | unknown   |
 * | unreachable since T, now − T < dead_after                 | suspect   |  (the wire word for "unreachable")
 * | unreachable since T, now − T ≥ dead_after                 | dead      |
 * | reachable, last valid answer within the alive window      | alive     |
 * | reachable, last valid answer older than the alive window  | suspect   |  (nobody has asked lately)
 *
 * `dead` is not sticky: a valid answer makes the node `alive` again (it came back).
 */
import type { Liveness } from "../placement/inputs.js";

/** §8.2: alive only with a valid answer this recent. */
export const ALIVE_WINDOW_MS = 60_000;

/**
 * §8.2 `dead_after`: how long a node stays unreachable before it is judged dead. Two minutes is twelve of
 * `berth serve`'s 10 s ticks: long enough that a reboot or a Wi-Fi drop is not a death, short enough that an operator
 * is told within minutes (Nomad's default heartbeat grace is of the same order).
 */
export const DEFAULT_DEAD_AFTER_MS = 120_000;

/** What the store keeps of a node's contacts. */
export interface ContactRecord {
  /** The last valid signed answer (a refusal counts: the node is there, it said no). */
  readonly last_ok_ms: number | null;
  /** Set by the first failed contact after the last valid answer; cleared by the next valid answer. */
  readonly unreachable_since_ms: number | null;
}

/**
 * Issue 35: when a node that stopped answering is judged dead if nothing answers before then (its first failed contact
 * + dead_after); null while its contacts answer. Before it, `judgeNodeLiveness` says suspect; from it, dead.
 */
export function deadAtMs(
  c: Pick<ContactRecord, "unreachable_since_ms">,
  deadAfterMs: number = DEFAULT_DEAD_AFTER_MS,
): number | null {
  return c.unreachable_since_ms === null ? null : c.unreachable_since_ms + deadAfterMs;
}

export function judgeNodeLiveness(
  c: ContactRecord,
  nowMs: number,
  deadAfterMs: number = DEFAULT_DEAD_AFTER_MS,
): Liveness {
  if (c.unreachable_since_ms !== null) return nowMs - c.unreachable_since_ms >= deadAfterMs ? "dead" : "suspect";
  if (c.last_ok_ms === null) return "unknown";
  return nowMs - c.last_ok_ms < ALIVE_WINDOW_MS ? "alive" : "suspect";
}
