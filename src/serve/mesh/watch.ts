/**
 * The lifecycle tick of a long-lived controller (issue 16, `berth serve` and so `berth up`): describe every target at
 * start and then every `tickMs`, so the stored liveness (and this process's boot ids and facts) are fresh when the
 * dashboard paints, without any client asking for a refresh; then one pass of the keep loop
 * (keep-loop.ts) over every managed placement. Only the store's leader ticks (issue 20), and the loop acts only
 * when `shouldAct()` says so (the leadership seam: `berth serve` passes `isLeader()`). One tick at a time: a slow
 * tick delays the next instead of piling up. The pass's status calls also renew every leased node's lease.
 *
 * Issue 35: when a pass leaves a row waiting for a time (a dead node's lease certainly over, a silent node judged dead,
 * a backoff ended), one more keep pass runs then (`next_due_ms`, kit/tick.ts `wakeIn`): a move allowed between two
 * ticks was up to a tick late (10 s by default). Such a pass asks only the nodes whose rows fell due for their status
 * and describes nothing; the beat still describes every target and judges every agent.
 */
import type { MeshController } from "../../mesh/controller/controller.js";
import { type PassReport, KeepLoop } from "./keep-loop.js";
import { meshKeepPorts } from "./keep-ports.js";
import { type PassCause, startTick, type Tick } from "../../kit/tick.js";

/** Ten seconds: a node's death shows within a tick plus the describe timeout (5 s). */
export const DEFAULT_TICK_MS = 10_000;

/**
 * The least time between a pass and a wake it asked for: rows falling due within it are judged together, and a row
 * whose due time has come but which still waits (its node's stamp moved on) cannot make the loop spin.
 */
const WAKE_GAP_MS = 250;
/** How early a woken pass may find a due instant still ahead (timers and the clock differ by a few ms). */
const WAKE_EARLY_MS = 50;

/** The running tick; `stop()` waits for the pass in flight, so the store can be closed after. */
export interface TargetWatch extends Pick<Tick, "stop"> {
  /**
   * One pass now, beside the tick, on the same loop (its backoff and alert memory): the keep pass's report, or null when
   * this process does not lead the store (the tick skips such a pass) or the tick was stopped before the keep pass.
   */
  pass(): Promise<PassReport | null>;
}

export interface WatchOptions {
  /** The leadership seam: false → the loop decides but performs and chains nothing. Default: always act. */
  readonly shouldAct?: () => boolean;
  /** Told every pass's report (logs, tests). */
  readonly onPass?: (report: PassReport) => void;
  /**
   * Issue 35: the first pass does not describe again a target described since then (`berth serve` passes its start:
   * the takeover's describes, made when it became the leader, serve the first pass too). Later passes describe all.
   */
  readonly firstPassReusesSinceMs?: number;
}

export function startTargetWatch(
  controller: MeshController,
  tickMs: number,
  onError: (error: unknown) => void,
  o: WatchOptions = {},
): TargetWatch {
  const access = controller.keepAccess();
  const loop = new KeepLoop(meshKeepPorts(access, o.shouldAct ?? (() => true)));
  let reuseSinceMs = o.firstPassReusesSinceMs;
  let tick: Tick | null = null;
  const wakeAtDue = (dueMs: number | null) => {
    if (dueMs !== null) tick?.wakeIn(Math.max(WAKE_GAP_MS, dueMs - access.clock()));
  };
  const pass = async (stopped: () => boolean, cause: PassCause): Promise<PassReport | null> => {
    let nodes: Set<string> | undefined;
    if (cause === "tick") {
      const since = reuseSinceMs;
      reuseSinceMs = undefined;
      await controller.watchTargets(since);
      if (stopped()) return null;
    } else {
      // A wake asks only the nodes whose rows fell due (a timer may fire a little before the store's clock says so).
      nodes = loop.dueNodes(access.clock() + WAKE_EARLY_MS);
      if (nodes.size === 0) {
        wakeAtDue(loop.nextDueMs());
        return null;
      }
    }
    const report = await loop.pass(nodes === undefined ? {} : { nodes });
    o.onPass?.(report);
    wakeAtDue(report.next_due_ms);
    return report;
  };
  // Issue 20: only the store's leader ticks (followers read what it records); see MeshController.isLeader.
  tick = startTick(
    async (stopped, cause) => {
      await pass(stopped, cause);
    },
    tickMs,
    onError,
    () => controller.isLeader(),
  );
  let stopped = false;
  return {
    pass: () => (controller.isLeader() ? pass(() => stopped, "tick") : Promise.resolve(null)),
    stop: () => {
      stopped = true;
      return tick?.stop() ?? Promise.resolve();
    },
  };
}
