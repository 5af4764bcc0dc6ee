import { describe, expect, it } from "vitest";
import type { Cluster, WatchHandlers } from "./cluster.js";
import { VirtualClock } from "../kit/clock.js";
import { DEFAULT_WAIT, Waiter } from "./waiter.js";

/** A cluster whose only capability is one watch, whose handlers the test drives. */
function watchOnly() {
  const opened: { from: string | undefined; handlers: WatchHandlers }[] = [];
  const cluster = {
    watchPod: (_ns: string, _name: string, from: string | undefined, handlers: WatchHandlers) => {
      opened.push({ from, handlers });
      return { close: () => {} };
    },
  } as unknown as Cluster;
  return { cluster, opened };
}

const wake = (h: WatchHandlers, resourceVersion: string) =>
  h.onWake({ podName: "p", kind: "modified", resourceVersion });

describe("Waiter", () => {
  it("primed after a 404, opens the watch from the current state before any wait", () => {
    const { cluster, opened } = watchOnly();
    const w = new Waiter(cluster, "ns", "p", new VirtualClock(), DEFAULT_WAIT, 60_000);
    w.observed(undefined);
    w.prime();
    expect(opened.map((o) => o.from)).toEqual([undefined]);
    w.prime();
    expect(opened).toHaveLength(1);
  });

  it("drops a wake, coalesced while the loop was busy, for the resourceVersion the loop already observed", async () => {
    const clock = new VirtualClock();
    const { cluster, opened } = watchOnly();
    const w = new Waiter(cluster, "ns", "p", clock, DEFAULT_WAIT, 60_000);
    w.prime();
    const h = opened[0]?.handlers as WatchHandlers;
    h.onEstablished();
    wake(h, "7"); // the create's own ADDED, arriving before its answer was handled
    w.observed("7");
    const started = clock.now();
    const waited = w.wait();
    clock.schedule(300, () => wake(h, "8"));
    await clock.run(waited);
    expect(clock.now() - started).toBe(300);
  });

  it("still answers at once for a coalesced wake of a newer resourceVersion", async () => {
    const clock = new VirtualClock();
    const { cluster, opened } = watchOnly();
    const w = new Waiter(cluster, "ns", "p", clock, DEFAULT_WAIT, 60_000);
    w.prime();
    const h = opened[0]?.handlers as WatchHandlers;
    w.observed("7");
    wake(h, "7");
    wake(h, "9");
    await clock.run(w.wait());
    expect(clock.now()).toBe(0);
  });

  it("ignores a wake during a wait for the state the loop already observed, and wakes for the next", async () => {
    const clock = new VirtualClock();
    const { cluster, opened } = watchOnly();
    const w = new Waiter(cluster, "ns", "p", clock, DEFAULT_WAIT, 60_000);
    w.observed("7");
    const waited = w.wait();
    const h = opened[0]?.handlers as WatchHandlers;
    h.onEstablished();
    clock.schedule(100, () => wake(h, "7"));
    clock.schedule(250, () => wake(h, "8"));
    await clock.run(waited);
    expect(clock.now()).toBe(250);
  });
});
