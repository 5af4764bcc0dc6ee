import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type PassCause, startTick } from "./tick.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A pass that records when and why it ran, and ends when the test lets it (or at once). */
function recorder(o: { holdFirst?: boolean } = {}) {
  const runs: Array<{ at: number; cause: PassCause }> = [];
  let release: (() => void) | null = null;
  const pass = async (_stopped: () => boolean, cause: PassCause) => {
    runs.push({ at: Date.now(), cause });
    if (o.holdFirst && runs.length === 1) await new Promise<void>((resolve) => (release = resolve));
  };
  return { runs, pass, release: () => release?.() };
}

describe("the tick shell", () => {
  it("runs a pass at once and then every tick", async () => {
    const start = Date.now();
    const r = recorder();
    const tick = startTick(r.pass, 1_000, (e) => {
      throw e;
    });
    await vi.advanceTimersByTimeAsync(2_500);
    await tick.stop();
    expect(r.runs).toEqual([
      { at: start, cause: "tick" },
      { at: start + 1_000, cause: "tick" },
      { at: start + 2_000, cause: "tick" },
    ]);
  });

  it("runs one extra pass when a wake asked falls due, between two ticks (issue 35)", async () => {
    const start = Date.now();
    const r = recorder();
    const tick = startTick(r.pass, 10_000, (e) => {
      throw e;
    });
    await vi.advanceTimersByTimeAsync(0);
    tick.wakeIn(3_000);
    await vi.advanceTimersByTimeAsync(9_000);
    await tick.stop();
    expect(r.runs).toEqual([
      { at: start, cause: "tick" },
      { at: start + 3_000, cause: "wake" },
    ]);
  });

  it("keeps the earliest wake asked, and a wake never runs beside a pass: it starts its pass when that one ends", async () => {
    const start = Date.now();
    const r = recorder({ holdFirst: true });
    const tick = startTick(r.pass, 60_000, (e) => {
      throw e;
    });
    tick.wakeIn(5_000);
    tick.wakeIn(2_000);
    tick.wakeIn(4_000);
    await vi.advanceTimersByTimeAsync(8_000);
    expect(r.runs, "the first pass still runs: the wake waits for it").toEqual([{ at: start, cause: "tick" }]);
    r.release();
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(10_000);
    await tick.stop();
    expect(r.runs).toEqual([
      { at: start, cause: "tick" },
      { at: start + 8_000, cause: "wake" },
    ]);
  });

  it("runs no wake once stopped, nor one its due() declines", async () => {
    const r = recorder();
    let leader = true;
    const tick = startTick(
      r.pass,
      60_000,
      (e) => {
        throw e;
      },
      () => leader,
    );
    await vi.advanceTimersByTimeAsync(0);
    leader = false;
    tick.wakeIn(1_000);
    await vi.advanceTimersByTimeAsync(2_000);
    leader = true;
    tick.wakeIn(1_000);
    await tick.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(r.runs.map((x) => x.cause)).toEqual(["tick"]);
  });
});
