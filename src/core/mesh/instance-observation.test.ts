import { describe, expect, it } from "vitest";
import { OBSERVATION_STALE_MS, observedInstanceOf, seenText } from "./instance-observation.js";

describe("an instance as its node last reported it", () => {
  it.each([
    ["running", "running"],
    ["unhealthy", "running"],
    ["backoff", "running"],
    ["loaded", "not started"],
    ["starting", "not started"],
    ["stopped", "terminated"],
    ["failed", "terminated"],
    ["lease_stopped", "terminated"],
    ["something-new", "something-new"],
  ])("a row in state %s is stored as %s, with the node's own word as its lifecycle", (row, state) => {
    expect(observedInstanceOf("i1", "n1", { state: row, restarts: 2, pid: 42, started_ms: 7 }, 100)).toEqual({
      instance_id: "i1",
      node_id: "n1",
      state,
      lifecycle: row,
      restarts: 2,
      pid: 42,
      started_ms: 7,
      seen_ms: 100,
    });
  });

  it("a verified answer that does not list the instance records it absent, with nothing else known", () => {
    expect(observedInstanceOf("i1", "n1", null, 100)).toEqual({
      instance_id: "i1",
      node_id: "n1",
      state: "absent",
      lifecycle: null,
      restarts: null,
      pid: null,
      started_ms: null,
      seen_ms: 100,
    });
  });

  it("a row without a pid or restarts (an older node, a process not running) stores null for them", () => {
    expect(observedInstanceOf("i1", "n1", { state: "stopped", pid: null }, 5)).toMatchObject({
      pid: null,
      restarts: null,
      started_ms: null,
    });
  });
});

describe("how a list that reads the store says an instance's state", () => {
  it("a recent record says its state and its age", () => {
    expect(seenText("running", 10_000, 14_000)).toBe("running (seen 4s ago)");
  });

  it("a record older than the stale threshold says so", () => {
    expect(seenText("running", 0, OBSERVATION_STALE_MS)).toBe("running (seen 45s ago)");
    expect(seenText("running", 0, OBSERVATION_STALE_MS + 1)).toBe("running (last seen 45s ago, stale)");
    expect(seenText("running", 0, 3 * 60_000 + 5_000)).toBe("running (last seen 3m ago, stale)");
  });

  it("an instance never recorded is unknown and says it was never seen", () => {
    expect(seenText(null, null, 1)).toBe("unknown (never seen)");
  });

  it("a record from a clock ahead of this one reads as just seen, never a negative age", () => {
    expect(seenText("running", 2_000, 1_000)).toBe("running (seen 0s ago)");
  });
});
