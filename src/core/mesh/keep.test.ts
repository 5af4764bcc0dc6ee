import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LIVENESS } from "../placement/inputs.js";
import { leaseWaitMs } from "./lease.js";
import {
  type InstanceObservation,
  type NodeView,
  type PlacementView,
  RESTART_POLICIES,
  type KeepInput,
  keepPlacement,
} from "./keep.js";

const placement: PlacementView = {
  instance_id: "i1",
  name: "web",
  node_id: "n1",
  policy: "always",
  moved: false,
  pinned: false,
  migratable: true,
  sticky: false,
  reschedules: 0,
};
const alive: NodeView = {
  liveness: "alive",
  forgotten: false,
  dead_at_ms: null,
  lease_ms: null,
  last_sent_issued_at_ms: 1_000,
};
const dead: NodeView = { ...alive, liveness: "dead" };
const leased: NodeView = { ...dead, lease_ms: 30_000 };
const listed = (state: string): InstanceObservation => ({ kind: "listed", state, generation: 3 });
const unverified: InstanceObservation = { kind: "unverified", why: "timeout" };

function run(over: Partial<KeepInput>): ReturnType<typeof keepPlacement> {
  return keepPlacement({
    placement,
    node: alive,
    observed: listed("running"),
    now_ms: 1_000_000,
    next_attempt_ms: 0,
    ...over,
  });
}

describe("the keep loop's decision for one placement (spec/mesh.md §15)", () => {
  it("an agent a person stopped is never started, replaced, rescheduled or placed again, whatever becomes of its node (issue 33)", () => {
    const stopped = { ...placement, stopped: true };
    const overAt = 1_000 + leaseWaitMs(30_000);
    for (const observed of [listed("stopped"), listed("lease_stopped"), { kind: "not_listed" as const }, unverified]) {
      for (const node of [alive, dead, leased, { ...alive, forgotten: true }]) {
        expect(run({ placement: stopped, node, observed, now_ms: overAt + 1 }).kind).toBe("none");
      }
    }
    // Its moved record is never placed again; its old copy is still settled (a stopped copy unloaded).
    const moved = { ...stopped, moved: true, successor_missing: true, moved_by: "forget" as const };
    expect(run({ placement: moved, observed: listed("stopped") }).kind).toBe("unload_orphan");
    expect(run({ placement: moved, observed: { kind: "not_listed" } }).kind).toBe("forget_orphan");
    expect(run({ placement: { ...moved, stopped: false }, observed: listed("stopped") }).kind).toBe("place_again");
  });

  it("a running instance is left alone (started stays a strict no-op)", () => {
    expect(run({}).kind).toBe("none");
    expect(run({ observed: listed("starting") }).kind).toBe("none");
  });

  it("an instance its node stopped for the lease is started again once contact is back, whatever the policy", () => {
    for (const policy of RESTART_POLICIES)
      expect(run({ placement: { ...placement, policy }, observed: listed("lease_stopped") }).kind).toBe("start");
  });

  it("an instance the node still holds exited, failed or stopped is the node's supervision's or the operator's, never the loop's", () => {
    for (const state of ["exited", "failed", "stopped", "loaded", "unknown"])
      expect(run({ observed: listed(state) }).kind).toBe("none");
  });

  it("an instance its reachable node no longer lists is lost: placed again under on-failure or always, an alert under never", () => {
    expect(run({ observed: { kind: "not_listed" } }).kind).toBe("replace");
    expect(run({ placement: { ...placement, policy: "on-failure" }, observed: { kind: "not_listed" } }).kind).toBe(
      "replace",
    );
    expect(run({ placement: { ...placement, policy: "never" }, observed: { kind: "not_listed" } })).toMatchObject({
      kind: "alert",
      reason: "lost",
    });
  });

  it("without a verified answer from a node not yet dead, the loop only waits", () => {
    for (const liveness of ["alive", "suspect", "unknown"] as const)
      expect(run({ node: { ...alive, liveness }, observed: unverified }).kind).toBe("wait");
  });

  it("the instances of a dead node without a lease are held with an alert, never re-placed", () => {
    expect(run({ node: dead, observed: unverified })).toMatchObject({ kind: "alert", reason: "held_no_lease" });
  });

  it("the instances of a dead leased node wait until the lease has certainly run out, counted from the last request sent", () => {
    const overAt = 1_000 + leaseWaitMs(30_000);
    expect(run({ node: leased, observed: unverified, now_ms: overAt - 1 })).toEqual({
      kind: "wait",
      why: expect.any(String),
      until_ms: overAt,
    });
    expect(run({ node: leased, observed: unverified, now_ms: overAt })).toMatchObject({
      kind: "reschedule",
      authority: "lease",
    });
  });

  it("a dead leased node's pinned, non-migratable or sticky placement, or one moved five times, is alerted, never moved", () => {
    const now = 1_000 + leaseWaitMs(30_000);
    expect(
      run({ placement: { ...placement, pinned: true }, node: leased, observed: unverified, now_ms: now }),
    ).toMatchObject({ kind: "alert", reason: "pinned" });
    expect(
      run({ placement: { ...placement, migratable: false }, node: leased, observed: unverified, now_ms: now }),
    ).toMatchObject({ reason: "not_migratable" });
    expect(
      run({ placement: { ...placement, sticky: true }, node: leased, observed: unverified, now_ms: now }),
    ).toMatchObject({ reason: "sticky" });
    expect(
      run({ placement: { ...placement, reschedules: 5 }, node: leased, observed: unverified, now_ms: now }),
    ).toMatchObject({ reason: "reschedule_limit" });
  });

  it("a dead leased node's placement under policy never is alerted lost, not moved", () => {
    const now = 1_000 + leaseWaitMs(30_000);
    expect(
      run({ placement: { ...placement, policy: "never" }, node: leased, observed: unverified, now_ms: now }),
    ).toMatchObject({ kind: "alert", reason: "lost" });
  });

  it("a forgotten node's placements move on the operator's authority, no lease needed", () => {
    expect(run({ node: { ...alive, liveness: "unknown", forgotten: true }, observed: unverified })).toMatchObject({
      kind: "reschedule",
      authority: "operator",
    });
  });

  it("a record already moved: its old copy found running is an alert duplicate, found stopped is unloaded fenced, found absent is forgotten", () => {
    const moved = { ...placement, moved: true };
    expect(run({ placement: moved, observed: listed("running") })).toMatchObject({
      kind: "alert",
      reason: "duplicate",
    });
    expect(run({ placement: moved, observed: listed("lease_stopped") })).toEqual({
      kind: "unload_orphan",
      why: expect.any(String),
      generation: 3,
    });
    expect(run({ placement: moved, observed: { kind: "not_listed" } }).kind).toBe("forget_orphan");
    expect(run({ placement: moved, observed: unverified }).kind).toBe("wait");
  });

  it("a moved record whose agent nothing has placed since is placed again first, whatever its old node answers", () => {
    const moved: PlacementView = {
      ...placement,
      moved: true,
      moved_by: "lease",
      successor_missing: true,
      reschedules: 5,
    };
    for (const observed of [unverified, listed("lease_stopped"), { kind: "not_listed" as const }])
      expect(run({ placement: moved, observed }).kind).toBe("place_again");
    // the move already counted: a sixth move is refused, a place again of the fifth is not
    expect(run({ placement: { ...moved, moved_by: "forget" }, observed: unverified }).kind).toBe("place_again");
  });

  it("a moved record is not placed again under policy never, pinned, non-migratable or sticky: only its old copy is settled", () => {
    const moved: PlacementView = { ...placement, moved: true, moved_by: "forget", successor_missing: true };
    for (const over of [{ policy: "never" as const }, { pinned: true }, { migratable: false }, { sticky: true }]) {
      expect(run({ placement: { ...moved, ...over }, observed: { kind: "not_listed" } }).kind).toBe("forget_orphan");
    }
  });

  it("the running copy of a node the operator forgot is stopped on that authority; any other moved record's running copy is only alerted", () => {
    const forgotten: PlacementView = { ...placement, moved: true, moved_by: "forget" };
    expect(run({ placement: forgotten, observed: listed("running") })).toEqual({
      kind: "stop_orphan",
      why: expect.any(String),
      generation: 3,
    });
    expect(run({ placement: forgotten, observed: listed("stopped") }).kind).toBe("unload_orphan");
    for (const by of ["lease", "lost", "drain"] as const) {
      expect(
        run({ placement: { ...placement, moved: true, moved_by: by }, observed: listed("running") }),
      ).toMatchObject({ kind: "alert", reason: "duplicate" });
    }
  });

  it("while an agent backs off, every acting row waits until its next attempt", () => {
    expect(run({ observed: listed("lease_stopped"), next_attempt_ms: 2_000_000 })).toMatchObject({
      kind: "wait",
      until_ms: 2_000_000,
    });
    expect(run({ observed: { kind: "not_listed" }, next_attempt_ms: 2_000_000 }).kind).toBe("wait");
  });
});

describe("the loop's invariants over every input", () => {
  const states = [
    "running",
    "starting",
    "loading",
    "loaded",
    "stopped",
    "exited",
    "failed",
    "lost",
    "unknown",
    "lease_stopped",
    "weird",
  ];
  const input = fc.record({
    placement: fc.record({
      instance_id: fc.constant("i1"),
      name: fc.constant("web"),
      node_id: fc.constant("n1"),
      policy: fc.constantFrom(...RESTART_POLICIES),
      moved: fc.boolean(),
      moved_by: fc.constantFrom("lease" as const, "lost" as const, "drain" as const, "forget" as const),
      successor_missing: fc.boolean(),
      pinned: fc.boolean(),
      migratable: fc.boolean(),
      sticky: fc.boolean(),
      reschedules: fc.integer({ min: 0, max: 7 }),
    }),
    node: fc.record({
      liveness: fc.constantFrom(...LIVENESS),
      forgotten: fc.boolean(),
      dead_at_ms: fc.option(fc.integer({ min: 0, max: 2_000_000 })),
      lease_ms: fc.option(fc.integer({ min: 3_000, max: 600_000 })),
      last_sent_issued_at_ms: fc.option(fc.integer({ min: 0, max: 2_000_000 })),
    }),
    observed: fc.oneof(
      fc.record({
        kind: fc.constant("listed" as const),
        state: fc.constantFrom(...states),
        generation: fc.option(fc.nat()),
      }),
      fc.constant({ kind: "not_listed" as const }),
      fc.constant({ kind: "unverified" as const, why: "timeout" }),
    ),
    now_ms: fc.integer({ min: 0, max: 3_000_000 }),
    next_attempt_ms: fc.integer({ min: 0, max: 3_000_000 }),
  });

  it("never unloads, stops or replaces an instance observed live, and never restarts one the node holds live", () => {
    fc.assert(
      fc.property(input, (i) => {
        const a = keepPlacement(i);
        if (i.observed.kind === "listed" && ["running", "starting", "loading"].includes(i.observed.state)) {
          // Only the operator's forget stops a live copy; placing a moved agent again touches no copy.
          if (a.kind === "stop_orphan") return i.placement.moved && i.placement.moved_by === "forget";
          return (
            a.kind === "none" ||
            a.kind === "wait" ||
            a.kind === "place_again" ||
            (a.kind === "alert" && a.reason === "duplicate")
          );
        }
        return true;
      }),
      { numRuns: 5_000 },
    );
  });

  it("never moves or re-places on an unverified observation unless the node is dead with its lease over, or forgotten", () => {
    fc.assert(
      fc.property(input, (i) => {
        const a = keepPlacement(i);
        if (i.observed.kind !== "unverified") return true;
        if (
          a.kind === "start" ||
          a.kind === "replace" ||
          a.kind === "unload_orphan" ||
          a.kind === "stop_orphan" ||
          a.kind === "forget_orphan"
        )
          return false;
        // A moved record's agent was judged free to move when it was moved; placing it again needs no new look.
        if (a.kind === "place_again") return i.placement.moved && i.placement.successor_missing;
        if (a.kind !== "reschedule") return true;
        if (a.authority === "operator") return i.node.forgotten;
        const n = i.node;
        return (
          n.liveness === "dead" &&
          n.lease_ms !== null &&
          n.last_sent_issued_at_ms !== null &&
          i.now_ms >= n.last_sent_issued_at_ms + leaseWaitMs(n.lease_ms)
        );
      }),
      { numRuns: 5_000 },
    );
  });

  it("never moves a pinned, non-migratable or sticky placement, nor one moved five times", () => {
    fc.assert(
      fc.property(input, (i) => {
        const a = keepPlacement(i);
        const p = i.placement;
        return a.kind !== "reschedule" || (!p.pinned && p.migratable && !p.sticky && p.reschedules < 5);
      }),
      { numRuns: 5_000 },
    );
  });

  it("never acts before the agent's next attempt", () => {
    fc.assert(
      fc.property(input, (i) => {
        const a = keepPlacement(i);
        const acts = ["start", "replace", "reschedule", "place_again", "unload_orphan", "stop_orphan"].includes(a.kind);
        return !acts || i.now_ms >= i.next_attempt_ms;
      }),
      { numRuns: 5_000 },
    );
  });
});
