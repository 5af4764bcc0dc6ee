/**
 * The fault campaign's fixed seeds as part of the test command (issue 16): each seed is a fresh world of three real
 * node daemons behind TCP proxies, CLI processes as a user runs them, faults struck from the schedule, then heal and
 * judge from outside (see run.ts). A failing seed prints its schedule and `bash scripts/campaign --seeds N --verbose`.
 * BERTH_CAMPAIGN_SEEDS=A-B overrides the fixed set.
 */
import { describe, expect, it } from "vitest";
import { replayHint, runSeed } from "./run.js";

const FIXED = { first: 1, count: 30 };

function seeds(): number[] {
  const m = /^(\d+)-(\d+)$/.exec(process.env.BERTH_CAMPAIGN_SEEDS ?? "");
  const [lo, hi] = m ? [Number(m[1]), Number(m[2])] : [FIXED.first, FIXED.first + FIXED.count - 1];
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}

describe("berth's fault campaign: seeded schedules against real daemons, judged from /proc, the stores and the chains", () => {
  for (const seed of seeds()) {
    it(`seed ${seed}: never two live copies, no orphan, no unasked stop, every agent once after heal, every chain verifies`, async () => {
      const o = await runSeed(seed);
      expect(o.violations, `${replayHint(seed)}\n${o.schedule}\n${o.notes.join("\n")}`).toEqual([]);
    }, 300_000);
  }
});
