import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AVOID_MAX,
  BACKOFF_CAP_MS,
  backoffMs,
  chainsAlert,
  MAX_RESCHEDULES,
  mayReschedule,
  rescheduleOrder,
} from "./reschedule.js";

const movable = { pinned: false, migratable: true, sticky: false, reschedules: 0 };

describe("which placements may move", () => {
  it("a migratable, unpinned placement moved fewer than five times may move", () => {
    expect(mayReschedule(movable)).toEqual({ ok: true });
    expect(mayReschedule({ ...movable, reschedules: MAX_RESCHEDULES - 1 })).toEqual({ ok: true });
  });

  it("a pinned placement is never moved", () => {
    expect(mayReschedule({ ...movable, pinned: true })).toMatchObject({ ok: false, error: { reason: "pinned" } });
  });

  it("a package that declares migratable: false is never moved", () => {
    expect(mayReschedule({ ...movable, migratable: false })).toMatchObject({
      ok: false,
      error: { reason: "not_migratable" },
    });
  });

  it("a package that declares sticky: true is never moved", () => {
    expect(mayReschedule({ ...movable, sticky: true })).toMatchObject({ ok: false, error: { reason: "sticky" } });
  });

  it("the fifth move is the last: a placement moved five times is held for the operator", () => {
    expect(mayReschedule({ ...movable, reschedules: MAX_RESCHEDULES })).toMatchObject({
      ok: false,
      error: { reason: "reschedule_limit" },
    });
  });

  it("a pin wins over every other reason (the order's author said where it runs)", () => {
    expect(mayReschedule({ pinned: true, migratable: false, sticky: true, reschedules: 9 })).toMatchObject({
      error: { reason: "pinned" },
    });
  });
});

describe("the order a reschedule runs", () => {
  it("adds the node it leaves to avoid, drops any pin and never runs dry", () => {
    const stored = { pin: null, avoid: ["a"], dry_run: false, name: "x" };
    expect(rescheduleOrder(stored, "b")).toEqual({ pin: null, avoid: ["a", "b"], dry_run: false, name: "x" });
  });

  it("never lists a node twice and keeps at most the engine's sixteen, the node it leaves always among them", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r"),
          { maxLength: AVOID_MAX },
        ),
        fc.constantFrom("a", "b", "r", "z"),
        (avoid, leaving) => {
          const out = rescheduleOrder<{ pin: null; avoid: readonly string[]; dry_run: boolean }>(
            { pin: null, avoid, dry_run: false },
            leaving,
          ).avoid;
          return out.length <= AVOID_MAX && new Set(out).size === out.length && out.includes(leaving);
        },
      ),
    );
  });
});

describe("backoff and alert deduplication", () => {
  it("backs off 10 s after the first failure, doubling, capped at 300 s", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map(backoffMs)).toEqual([
      0,
      10_000,
      20_000,
      40_000,
      80_000,
      160_000,
      300_000,
      300_000,
      BACKOFF_CAP_MS,
    ]);
  });

  it("chains an alert only when its reason differs from the last one chained", () => {
    expect(chainsAlert(null, "held")).toBe(true);
    expect(chainsAlert("held", "held")).toBe(false);
    expect(chainsAlert("held", "pinned")).toBe(true);
  });
});
