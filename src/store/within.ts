/**
 * Waiting a bounded time for a promise (the leader's view and the PostgreSQL writability check): a store that does not
 * answer must never hold a caller longer than the wait it was given.
 */

/** What `within` gives when the promise had not settled in time. */
export const LATE: unique symbol = Symbol("late");

/** `p`'s value, or `LATE` if it has not settled within `ms`; a rejection within the wait rejects. The timer never outlives the wait. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<typeof LATE>((resolve) => {
        timer = setTimeout(() => resolve(LATE), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
