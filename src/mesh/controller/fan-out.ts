/**
 * Bounded concurrency for the controller's calls to many nodes (issue 35): a tick's describes, a pass's statuses,
 * `--refresh` reads. One at a time, a pass at 1,000 nodes was 1,000 round trips end to end; all at once, thousands of
 * TLS handshakes started together and timed out their own calls.
 */

/** How many calls to distinct nodes are in flight at once. */
export const FAN_OUT = 64;

/** Runs `fn` over `items`, at most `limit` at a time, in order of start; resolves when all have ended. */
export async function fanOut<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * At most `limit` of the calls given to `run` in flight at once, whoever makes them; the others wait in order of
 * arrival. For calls that many callers start independently (the describes of a tick, a takeover and a lease round).
 */
export class Bounded {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
