/**
 * The lifecycle tick of a long-lived controller (issue 16, `berth serve` and so `berth up`): describe every target
 * at start and then every `tickMs`, so the stored liveness (and this process's boot ids and facts) are fresh when the
 * dashboard paints, without any client asking for a refresh. It only observes: it never places, unloads or settles
 * (the reconcile loop is a later step). One tick at a time: a slow tick delays the next instead of piling up.
 */
import type { MeshController } from "./controller.js";

/** Ten seconds: a node's death shows within a tick plus the describe timeout (5 s). */
export const DEFAULT_TICK_MS = 10_000;

export interface TargetWatch {
  /** Stops the tick and waits for one in flight, so the store can be closed after. */
  stop(): Promise<void>;
}

export function startTargetWatch(controller: MeshController, tickMs: number, onError: (error: unknown) => void): TargetWatch {
  let inFlight: Promise<void> | null = null;
  let stopped = false;
  const tick = () => {
    // Issue 20: only the store's leader ticks (followers read what it records); see MeshController.isLeader.
    if (stopped || inFlight || !controller.isLeader()) return;
    inFlight = controller
      .watchTargets()
      .catch((error: unknown) => {
        if (!stopped) onError(error);
      })
      .finally(() => {
        inFlight = null;
      });
  };
  tick();
  const timer = setInterval(tick, tickMs);
  timer.unref();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}
