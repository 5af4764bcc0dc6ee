/**
 * The fault campaign's fixed seeds as part of the test command (issue 16): worlds of three real node daemons behind
 * TCP proxies (one of them leased), CLI processes as a user runs them, faults struck from the schedule, then heal and
 * judge from outside (see run.ts). A failing seed prints its schedule and how to replay it.
 * The seeds run a few worlds at once in one hook; each seed is then its own test.
 * BERTH_CAMPAIGN_SEEDS=A-B, BERTH_CAMPAIGN_PARALLEL=N and BERTH_CAMPAIGN_WORLD=K override the fixed set and the widths.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Outcome, replayHint, runSeeds } from "./run.js";

const FIXED = { first: 1, count: 8, parallel: 3, world: 4 };

function seeds(): number[] {
  const m = /^(\d+)-(\d+)$/.exec(process.env.BERTH_CAMPAIGN_SEEDS ?? "");
  const [lo, hi] = m ? [Number(m[1]), Number(m[2])] : [FIXED.first, FIXED.first + FIXED.count - 1];
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}

const outcomes = new Map<number, Outcome>();

describe("berth's fault campaign: seeded schedules against real daemons, judged from /proc, the stores and the chains", () => {
  beforeAll(async () => {
    const parallel = Number(process.env.BERTH_CAMPAIGN_PARALLEL ?? FIXED.parallel);
    const worldSize = Number(process.env.BERTH_CAMPAIGN_WORLD ?? FIXED.world);
    for (const o of await runSeeds(seeds(), parallel, () => undefined, { worldSize })) outcomes.set(o.seed, o);
  }, 900_000);

  for (const seed of seeds()) {
    it(`seed ${seed}: never two live copies, no orphan, no unasked stop, every agent once after heal, every chain verifies`, () => {
      const o = outcomes.get(seed);
      expect(o, `seed ${seed} did not run`).toBeDefined();
      expect(o?.violations, `${o ? replayHint(o) : ""}\n${o?.schedule}\n${o?.notes.join("\n")}`).toEqual([]);
    });
  }
});
