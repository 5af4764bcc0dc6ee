/**
 * The campaign's seeded randomness: mulberry32 (Tommy Ettinger's 32-bit generator, public domain), small, fast and
 * well known; enough for picking schedules, not for anything secret. The same seed always gives the same schedule.
 */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi] (both inclusive). */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
}

export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => {
      const item = items[int(0, items.length - 1)];
      if (item === undefined) throw new Error("pick from an empty list");
      return item;
    },
    chance: (p) => next() < p,
  };
}
