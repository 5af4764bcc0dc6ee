/**
 * The fault campaign's fixed seeds as part of the test command (issue 16): worlds of three real node daemons behind
 * TCP proxies (one of them leased), CLI processes as a user runs them, faults struck from the schedule, then heal and
 * judge from outside (see run.ts). A failing seed prints its schedule and how to replay it.
 * The seeds run a few worlds at once in one hook; each seed is then its own test.
 * BERTH_CAMPAIGN_SEEDS=A-B, BERTH_CAMPAIGN_PARALLEL=N and BERTH_CAMPAIGN_WORLD=K override the fixed set and the widths.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Outcome, replayHint, runSeeds } from "./run.js";
import { coverage, FAULT_KINDS, OPERATION_KINDS, scheduleFor } from "./schedule.js";

/**
 * Seeds 1–30: together they plan every operation and every fault kind (printed, and checked below). Three worlds of
 * ten schedules side by side, in this process.
 */
const FIXED = { first: 1, count: 30, parallel: 3, world: 10 };

function seeds(): number[] {
  const m = /^(\d+)-(\d+)$/.exec(process.env.BERTH_CAMPAIGN_SEEDS ?? "");
  const [lo, hi] = m ? [Number(m[1]), Number(m[2])] : [FIXED.first, FIXED.first + FIXED.count - 1];
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}

const outcomes = new Map<number, Outcome>();

describe("berth's fault campaign: seeded schedules against real daemons, judged from /proc, the stores and the chains", () => {
  it("the fixed seeds plan every operation and every fault kind", () => {
    const c = coverage(seeds().map(scheduleFor));
    process.stdout.write(
      `campaign coverage of seeds ${seeds()[0]}-${seeds().at(-1)}: operations ${JSON.stringify(c.ops)} faults ${JSON.stringify(c.faults)}\n`,
    );
    if (process.env.BERTH_CAMPAIGN_SEEDS) return; // an override may pick any seeds
    for (const k of OPERATION_KINDS) expect(c.ops[k], `operation ${k}`).toBeGreaterThan(0);
    for (const k of FAULT_KINDS) expect(c.faults[k], `fault ${k}`).toBeGreaterThan(0);
  });

  beforeAll(async () => {
    const parallel = Number(process.env.BERTH_CAMPAIGN_PARALLEL ?? FIXED.parallel);
    const worldSize = Number(process.env.BERTH_CAMPAIGN_WORLD ?? FIXED.world);
    const started = Date.now();
    for (const o of await runSeeds(seeds(), parallel, () => undefined, { worldSize })) outcomes.set(o.seed, o);
    const struck: Record<string, number> = {};
    for (const o of outcomes.values()) for (const [k, v] of Object.entries(o.faults)) struck[k] = (struck[k] ?? 0) + v;
    process.stdout.write(
      `campaign: ${outcomes.size} schedules in ${((Date.now() - started) / 1000).toFixed(0)} s; faults struck ${JSON.stringify(struck)}\n`,
    );
  }, 900_000);

  for (const seed of seeds()) {
    it(`seed ${seed}: never two live copies, no orphan, no unasked stop, every agent once after heal, every chain verifies`, () => {
      const o = outcomes.get(seed);
      expect(o, `seed ${seed} did not run`).toBeDefined();
      expect(o?.violations, `${o ? replayHint(o) : ""}\n${o?.schedule}\n${o?.notes.join("\n")}`).toEqual([]);
    });
  }
});
