/**
 * The tick shell both long-running loops of `berth serve` share (issue 16): the mesh lifecycle tick (serve/mesh/watch.ts)
 * and the Kubernetes keeper's (serve/kubernetes/keeper-ports.ts). A pass at once and then every `tickMs`, one at a
 * time: a slow pass delays the next instead of piling up, and a tick `due()` declines is skipped. No backoff here:
 * what to retry and when is each loop's own decision (core/mesh/reschedule.ts), taken inside its pass.
 *
 * Issue 35: a loop that knows when something it waits for falls due (a lease certainly over) asks for one extra pass
 * then (`wakeIn`), instead of finding it up to a tick late. A wake never runs beside a pass: one that falls while a
 * pass runs starts its pass as soon as that one ends.
 */

export interface Tick {
  /** Stops the tick and waits for the pass in flight, so what it uses can be closed after. */
  stop(): Promise<void>;
  /**
   * One extra pass in `delayMs` (the earliest asked wins; a later one is dropped, the pass it would start sees what the
   * earlier saw and asks again). Declined, like any tick, when `due()` says no or the tick is stopped.
   */
  wakeIn(delayMs: number): void;
}

/** Why a pass runs: its beat, or a wake it asked for. */
export type PassCause = "tick" | "wake";

/**
 * `pass` is told whether the tick has been stopped meanwhile, to leave off between steps, and why it runs. Its failure
 * goes to `onError`, unless the tick was stopped meanwhile: a pass cut short by shutdown is not a fault.
 */
export function startTick(
  pass: (stopped: () => boolean, cause: PassCause) => Promise<void>,
  tickMs: number,
  onError: (error: unknown) => void,
  due: () => boolean = () => true,
): Tick {
  let inFlight: Promise<void> | null = null;
  let stopped = false;
  /** A wake fell while a pass ran: its pass starts when that one ends. */
  let wakeAfter = false;
  let wakeTimer: NodeJS.Timeout | null = null;
  let wakeAtMs = Number.POSITIVE_INFINITY;
  const isStopped = () => stopped;
  const run = (cause: PassCause) => {
    if (stopped || !due()) return;
    if (inFlight) {
      if (cause === "wake") wakeAfter = true;
      return;
    }
    inFlight = pass(isStopped, cause)
      .catch((error: unknown) => {
        if (!stopped) onError(error);
      })
      .finally(() => {
        inFlight = null;
        if (wakeAfter) {
          wakeAfter = false;
          run("wake");
        }
      });
  };
  run("tick");
  const timer = setInterval(() => run("tick"), tickMs);
  timer.unref();
  return {
    wakeIn: (delayMs) => {
      if (stopped) return;
      const at = Date.now() + Math.max(0, delayMs);
      if (wakeTimer !== null && at >= wakeAtMs) return;
      if (wakeTimer !== null) clearTimeout(wakeTimer);
      wakeAtMs = at;
      wakeTimer = setTimeout(
        () => {
          wakeTimer = null;
          wakeAtMs = Number.POSITIVE_INFINITY;
          run("wake");
        },
        Math.max(0, delayMs),
      );
      wakeTimer.unref();
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      if (wakeTimer !== null) clearTimeout(wakeTimer);
      wakeTimer = null;
      await inFlight;
    },
  };
}
