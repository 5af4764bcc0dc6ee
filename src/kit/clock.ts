/**
 * Time for the shell: a monotonic reading for deadlines, a wall reading only where the API needs a timestamp, and a
 * cancellable sleep. `VirtualClock` drives tests and the fake cluster deterministically: time advances only when
 * every pending promise is blocked on a timer, so tests never sleep and never race.
 */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Wall-clock epoch milliseconds (the fake apiserver's timestamps and Date header). */
  wallNow(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        signal?.removeEventListener("abort", done);
        clearTimeout(timer);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    }),
};

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fire: () => void;
}

export class VirtualClock implements Clock {
  private t = 0;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(private readonly wallStart = Date.parse("2026-08-02T04:00:00Z")) {}

  now(): number {
    return this.t;
  }

  wallNow(): number {
    return this.wallStart + this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fire: () => resolve() };
      this.timers.push(timer);
      signal?.addEventListener(
        "abort",
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  /** Runs `fn` once virtual time reaches now + `delayMs`. */
  schedule(delayMs: number, fn: () => void): void {
    this.timers.push({ at: this.t + Math.max(0, delayMs), seq: this.seq++, fire: fn });
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Settles `work`, advancing virtual time to the next timer whenever everything else is blocked. Throws if `work`
   * is still pending with no timer left (a deadlock in the code under test) or past `limitMs` of virtual time.
   */
  async run<T>(work: Promise<T>, limitMs = 3_600_000): Promise<T> {
    let settled = false;
    work.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    while (!settled) {
      await new Promise<void>((r) => setImmediate(r));
      if (settled) break;
      if (this.timers.length === 0) throw new Error(`deadlock at virtual ${this.t} ms: work pending with no timer`);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift() as Timer;
      if (next.at > limitMs) throw new Error(`virtual time limit ${limitMs} ms exceeded`);
      this.t = Math.max(this.t, next.at);
      next.fire();
    }
    return work;
  }
}
