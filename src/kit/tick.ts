/**
 * The tick shell both long-running loops of `berth serve` share (issue 16): the mesh lifecycle tick (serve/mesh/watch.ts)
 * and the Kubernetes keeper's (serve/kubernetes/keeper-ports.ts). A pass at once and then every `tickMs`, one at a
 * time: a slow pass delays the next instead of piling up, and a tick `due()` declines is skipped. No backoff here:
 * what to retry and when is each loop's own decision (core/mesh/reschedule.ts), taken inside its pass.
 */

export interface Tick {
  /** Stops the tick and waits for the pass in flight, so what it uses can be closed after. */
  stop(): Promise<void>;
}

/**
 * `pass` is told whether the tick has been stopped meanwhile, to leave off between steps. Its failure goes to
 * `onError`, unless the tick was stopped meanwhile: a pass cut short by shutdown is not a fault.
 */
export function startTick(
  pass: (stopped: () => boolean) => Promise<void>,
  tickMs: number,
  onError: (error: unknown) => void,
  due: () => boolean = () => true,
): Tick {
  let inFlight: Promise<void> | null = null;
  let stopped = false;
  const isStopped = () => stopped;
  const tick = () => {
    if (stopped || inFlight || !due()) return;
    inFlight = pass(isStopped)
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
