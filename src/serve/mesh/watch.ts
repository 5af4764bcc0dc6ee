/**
 * The lifecycle tick of a long-lived controller (issue 16, `berth serve` and so `berth up`): describe every target at
 * start and then every `tickMs`, so the stored liveness (and this process's boot ids and facts) are fresh when the
 * dashboard paints, without any client asking for a refresh; then one pass of the keep loop
 * (keep-loop.ts) over every managed placement. Only the store's leader ticks (issue 20), and the loop acts only
 * when `shouldAct()` says so (the leadership seam: `berth serve` passes `isLeader()`). One tick at a time: a slow
 * tick delays the next instead of piling up. The pass's status calls also renew every leased node's lease.
 */
import type { MeshController } from "../../mesh/controller/controller.js";
import { type PassReport, KeepLoop } from "./keep-loop.js";
import { meshKeepPorts } from "./keep-ports.js";
import { startTick, type Tick } from "../../kit/tick.js";

/** Ten seconds: a node's death shows within a tick plus the describe timeout (5 s). */
export const DEFAULT_TICK_MS = 10_000;

/** The running tick; `stop()` waits for the pass in flight, so the store can be closed after. */
export interface TargetWatch extends Tick {
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
  const loop = new KeepLoop(meshKeepPorts(controller.keepAccess(), o.shouldAct ?? (() => true)));
  let reuseSinceMs = o.firstPassReusesSinceMs;
  const pass = async (stopped: () => boolean): Promise<PassReport | null> => {
    const since = reuseSinceMs;
    reuseSinceMs = undefined;
    await controller.watchTargets(since);
    if (stopped()) return null;
    const report = await loop.pass();
    o.onPass?.(report);
    return report;
  };
  // Issue 20: only the store's leader ticks (followers read what it records); see MeshController.isLeader.
  const tick = startTick(
    async (stopped) => {
      await pass(stopped);
    },
    tickMs,
    onError,
    () => controller.isLeader(),
  );
  let stopped = false;
  return {
    pass: () => (controller.isLeader() ? pass(() => stopped) : Promise.resolve(null)),
    stop: () => {
      stopped = true;
      return tick.stop();
    },
  };
}
