import { describe, expect, it } from "vitest";
import type { ObservedInstance } from "../../core/mesh/instance-observation.js";
import { leaseWaitMs } from "../../core/mesh/lease.js";
import type { NodeView, PlacementView } from "../../core/mesh/keep.js";
import { FAN_OUT } from "../../mesh/controller/fan-out.js";
import { err, ok } from "../../kit/result.js";
import { ACTS_AT_ONCE, type ActionResult, type NodeRows, type KeepPorts, KeepLoop } from "./keep-loop.js";

const base: PlacementView = {
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

/** A scripted world: what each node answers, what each action returns; records everything the loop did. */
class World implements KeepPorts {
  now = 1_000_000;
  leader = true;
  rows = new Map<string, NodeRows>();
  nodes = new Map<string, NodeView>();
  placementList: PlacementView[] = [base];
  results: ActionResult[] = [];
  readonly performed: string[] = [];
  readonly alerted: string[] = [];
  readonly observedNodes: string[] = [];
  clock = () => this.now;
  shouldAct = () => this.leader;
  placements = async () => this.placementList;
  node = async (id: string) =>
    this.nodes.get(id) ?? {
      liveness: "alive" as const,
      forgotten: false,
      dead_at_ms: null,
      lease_ms: null,
      last_sent_issued_at_ms: null,
    };
  observe = async (id: string) => {
    this.observedNodes.push(id);
    return this.rows.get(id) ?? { kind: "unverified" as const, why: "no answer" };
  };
  perform = async (p: PlacementView, a: { kind: string }) => {
    this.performed.push(`${a.kind} ${p.instance_id}`);
    return this.results.shift() ?? ok();
  };
  alert = async (p: PlacementView, reason: string) => {
    this.alerted.push(`${reason} ${p.instance_id}`);
  };
  readonly recorded: ObservedInstance[][] = [];
  recoveredPasses = 0;
  recoverRecords = async () => {
    this.recoveredPasses += 1;
    return 0;
  };
  recordObservations = async (o: readonly ObservedInstance[]) => {
    this.recorded.push([...o]);
  };
}

const leaseStopped: NodeRows = {
  kind: "answered",
  rows: [{ instance_id: "i1", state: "lease_stopped", generation: 2 }],
};

describe("the keep loop's driver", () => {
  it("starts an instance its node stopped for the lease, once, and does nothing while it runs", async () => {
    const w = new World();
    w.rows.set("n1", leaseStopped);
    const loop = new KeepLoop(w);
    await loop.pass();
    expect(w.performed).toEqual(["start i1"]);
    w.rows.set("n1", { kind: "answered", rows: [{ instance_id: "i1", state: "running", generation: 3 }] });
    await loop.pass();
    await loop.pass();
    expect(w.performed).toEqual(["start i1"]);
  });

  it("asks each node once per pass, whatever number of placements it holds", async () => {
    const w = new World();
    w.placementList = [base, { ...base, instance_id: "i2" }, { ...base, instance_id: "i3", node_id: "n2" }];
    await new KeepLoop(w).pass();
    expect(w.observedNodes.sort()).toEqual(["n1", "n2"]);
  });

  it("records what each verified answer said of every placed instance, in one write per pass, before acting (issue 35)", async () => {
    const w = new World();
    w.placementList = [
      base,
      { ...base, instance_id: "i2" },
      { ...base, instance_id: "i3", node_id: "n2" },
      { ...base, instance_id: "old", moved: true },
    ];
    w.rows.set("n1", {
      kind: "answered",
      rows: [
        { instance_id: "i1", state: "running", generation: 3, restarts: 1, pid: 77, started_ms: 5 },
        { instance_id: "old", state: "running", generation: 1 },
      ],
    });
    await new KeepLoop(w).pass();
    expect(w.recorded).toHaveLength(1);
    // i2 absent from n1's verified answer; n2 gave none, so nothing is said of i3; a moved record is not a list's row.
    expect(w.recorded[0]?.sort((a, b) => (a.instance_id < b.instance_id ? -1 : 1))).toEqual([
      {
        instance_id: "i1",
        node_id: "n1",
        state: "running",
        lifecycle: "running",
        restarts: 1,
        pid: 77,
        started_ms: 5,
        seen_ms: w.now,
      },
      {
        instance_id: "i2",
        node_id: "n1",
        state: "absent",
        lifecycle: null,
        restarts: null,
        pid: null,
        started_ms: null,
        seen_ms: w.now,
      },
    ]);
  });

  it("a process that is not the leader decides but performs and chains nothing", async () => {
    const w = new World();
    w.leader = false;
    w.rows.set("n1", leaseStopped);
    w.nodes.set("n2", {
      liveness: "dead",
      forgotten: false,
      dead_at_ms: null,
      lease_ms: null,
      last_sent_issued_at_ms: null,
    });
    w.placementList = [base, { ...base, instance_id: "i2", node_id: "n2" }];
    const report = await new KeepLoop(w).pass();
    expect(w.performed).toEqual([]);
    expect(w.alerted).toEqual([]);
    expect(report.alerts).toEqual([{ instance_id: "i2", reason: "held_no_lease", chained: false }]);
    expect(w.recorded, "a follower records no observation either").toEqual([]);
    expect(w.recoveredPasses, "nor writes a lost registry record back").toBe(0);
  });

  it("the leader writes back the registry records deploys left unwritten once per pass (issue 37)", async () => {
    const w = new World();
    const loop = new KeepLoop(w);
    await loop.pass();
    await loop.pass();
    expect(w.recoveredPasses).toBe(2);
  });

  it("backs off a failing agent 10 s, then 20 s, and acts again only when its wait is over", async () => {
    const w = new World();
    w.rows.set("n1", leaseStopped);
    w.results = [err("refused"), err("refused")];
    const loop = new KeepLoop(w);
    await loop.pass();
    w.now += 9_999;
    await loop.pass();
    expect(w.performed).toEqual(["start i1"]);
    w.now += 1;
    await loop.pass();
    expect(w.performed).toEqual(["start i1", "start i1"]);
    w.now += 19_999;
    await loop.pass();
    expect(w.performed.length).toBe(2);
    w.now += 1;
    await loop.pass();
    expect(w.performed.length).toBe(3);
  });

  it("chains a failed action once per distinct reason while it backs off and retries", async () => {
    const w = new World();
    w.rows.set("n1", leaseStopped);
    w.results = [err("refused runtime"), err("refused runtime"), err("unreachable")];
    const loop = new KeepLoop(w);
    for (const step of [0, 10_000, 20_000]) {
      w.now += step;
      await loop.pass();
    }
    expect(w.performed).toEqual(["start i1", "start i1", "start i1"]);
    expect(w.alerted).toEqual(["action_failed i1", "action_failed i1"]);
  });

  it("chains one alert per distinct reason, not one per pass", async () => {
    const w = new World();
    w.nodes.set("n1", {
      liveness: "dead",
      forgotten: false,
      dead_at_ms: null,
      lease_ms: null,
      last_sent_issued_at_ms: null,
    });
    const loop = new KeepLoop(w);
    for (let i = 0; i < 5; i++) await loop.pass();
    expect(w.alerted).toEqual(["held_no_lease i1"]);
    w.placementList = [{ ...base, moved: true }];
    w.rows.set("n1", { kind: "answered", rows: [{ instance_id: "i1", state: "running", generation: 1 }] });
    for (let i = 0; i < 3; i++) await loop.pass();
    expect(w.alerted).toEqual(["held_no_lease i1", "duplicate i1"]);
    expect(w.performed).toEqual([]);
  });

  it("never acts on a node that gave no verified answer and is not dead", async () => {
    const w = new World();
    w.nodes.set("n1", {
      liveness: "suspect",
      forgotten: false,
      dead_at_ms: null,
      lease_ms: 30_000,
      last_sent_issued_at_ms: 0,
    });
    const report = await new KeepLoop(w).pass();
    expect(w.performed).toEqual([]);
    expect(report.waiting).toBe(1);
  });

  it("reschedules the placement of a dead leased node once the lease is certainly over, and not before", async () => {
    const w = new World();
    w.nodes.set("n1", {
      liveness: "dead",
      forgotten: false,
      dead_at_ms: null,
      lease_ms: 30_000,
      last_sent_issued_at_ms: w.now - leaseWaitMs(30_000) + 1,
    });
    const loop = new KeepLoop(w);
    await loop.pass();
    expect(w.performed).toEqual([]);
    w.now += 1;
    await loop.pass();
    expect(w.performed).toEqual(["reschedule i1"]);
  });

  it("counts the pass's own status call before judging a dead node's lease: one held unanswered past the margin, which may have renewed it, delays the move", async () => {
    // A node judged dead that still reads requests (its answers are lost): the status is stamped before it leaves,
    // arrives while the lease of the previous stamp still runs (renewing it), and is given up on after the 20 s call
    // timeout, longer than the 11 s margin the wait has past the lease.
    const lease = 60_000;
    const w = new World();
    const previous = w.now - 55_000;
    w.nodes.set("n1", {
      liveness: "dead",
      forgotten: false,
      dead_at_ms: null,
      lease_ms: lease,
      last_sent_issued_at_ms: previous,
    });
    w.observe = async (id: string) => {
      w.nodes.set(id, {
        liveness: "dead",
        forgotten: false,
        dead_at_ms: null,
        lease_ms: lease,
        last_sent_issued_at_ms: w.now,
      });
      w.now += 20_000;
      return { kind: "unverified" as const, why: "no answer within 20 s (sent)" };
    };
    const sentAt = w.now;
    expect(w.now + 20_000).toBeGreaterThanOrEqual(previous + leaseWaitMs(lease)); // judged by the previous stamp, over
    const report = await new KeepLoop(w).pass();
    expect(w.performed).toEqual([]);
    expect(report.waiting).toBe(1);
    // Once the wait counted from that status has run out (and the next status is provably unsent), it moves.
    w.observe = async () => ({ kind: "unverified" as const, why: "cannot connect" });
    w.now = sentAt + leaseWaitMs(lease);
    await new KeepLoop(w).pass();
    expect(w.performed).toEqual(["reschedule i1"]);
  });

  it("observes up to the fan-out of nodes at once, then performs what distinct agents need up to ACTS_AT_ONCE at a time, reported in node order", async () => {
    const w = new World();
    w.placementList = Array.from({ length: 100 }, (_, i) => ({
      ...base,
      instance_id: `i${i}`,
      name: `agent${i}`,
      node_id: `n${i}`,
    }));
    for (let i = 0; i < 100; i++)
      w.rows.set(`n${i}`, {
        kind: "answered",
        rows: [{ instance_id: `i${i}`, state: "lease_stopped", generation: 1 }],
      });
    let observing = 0;
    let mostObserving = 0;
    let performing = 0;
    let mostPerforming = 0;
    const observe = w.observe;
    w.observe = async (id: string) => {
      mostObserving = Math.max(mostObserving, ++observing);
      await turns(3);
      observing--;
      return observe(id);
    };
    const perform = w.perform;
    w.perform = async (p: PlacementView, a: { kind: string }) => {
      mostPerforming = Math.max(mostPerforming, ++performing);
      // Later rows end first, so a report in the order acts ended would read backwards.
      await turns(100 - Number(p.instance_id.slice(1)));
      performing--;
      return perform(p, a);
    };
    const report = await new KeepLoop(w).pass();
    expect(mostObserving).toBe(FAN_OUT);
    expect(mostPerforming).toBe(ACTS_AT_ONCE);
    expect(report.acted.map((a) => a.instance_id)).toEqual(Array.from({ length: 100 }, (_, i) => `i${i}`));
    expect(new Set(w.performed)).toEqual(new Set(Array.from({ length: 100 }, (_, i) => `start i${i}`)));
  });

  it("performs one name's rows one after another, in node order: a moved record's old copy and its successor never at once", async () => {
    const w = new World();
    // The old copy on n1 (moved; its node lists it stopped: unload it) and the successor on n2 (lease_stopped: start it).
    w.placementList = [
      { ...base, instance_id: "old", node_id: "n1", moved: true },
      { ...base, instance_id: "new", node_id: "n2" },
      { ...base, instance_id: "other", name: "other", node_id: "n3" },
    ];
    w.rows.set("n1", { kind: "answered", rows: [{ instance_id: "old", state: "stopped", generation: 4 }] });
    w.rows.set("n2", { kind: "answered", rows: [{ instance_id: "new", state: "lease_stopped", generation: 1 }] });
    w.rows.set("n3", { kind: "answered", rows: [{ instance_id: "other", state: "lease_stopped", generation: 1 }] });
    const running = new Set<string>();
    const together: string[][] = [];
    const perform = w.perform;
    w.perform = async (p: PlacementView, a: { kind: string }) => {
      running.add(p.instance_id);
      together.push([...running].sort());
      await turns(5);
      running.delete(p.instance_id);
      return perform(p, a);
    };
    await new KeepLoop(w).pass();
    expect(w.performed.filter((x) => !x.endsWith("other"))).toEqual(["unload_orphan old", "start new"]);
    expect(
      together.some((t) => t.includes("old") && t.includes("new")),
      "one name's acts overlapped",
    ).toBe(false);
    expect(
      together.some((t) => t.includes("other") && t.length > 1),
      "another agent's act waited its turn",
    ).toBe(true);
  });

  it("names when its earliest waiting row falls due: a dead node's lease over, a silent node judged dead, a failed act's retry", async () => {
    const lease = 30_000;
    const w = new World();
    const leaseOver = w.now + 7_000;
    w.placementList = [
      { ...base, instance_id: "leased", node_id: "dead" },
      { ...base, instance_id: "silent", name: "silent", node_id: "suspect" },
    ];
    w.nodes.set("dead", {
      liveness: "dead",
      forgotten: false,
      dead_at_ms: w.now - 1,
      lease_ms: lease,
      last_sent_issued_at_ms: leaseOver - leaseWaitMs(lease),
    });
    w.nodes.set("suspect", {
      liveness: "suspect",
      forgotten: false,
      dead_at_ms: w.now + 5_000,
      lease_ms: lease,
      last_sent_issued_at_ms: w.now,
    });
    const loop = new KeepLoop(w);
    expect((await loop.pass()).next_due_ms).toBe(w.now + 5_000);
    w.placementList = [w.placementList[0] as PlacementView];
    expect((await loop.pass()).next_due_ms).toBe(leaseOver);
    // Due, it moves; the move fails and its retry is due when the 10 s backoff ends.
    w.now = leaseOver;
    w.results = [err("no eligible node")];
    const failed = await loop.pass();
    expect(w.performed).toEqual(["reschedule leased"]);
    expect(failed.next_due_ms).toBe(leaseOver + 10_000);
    // Nothing waits for a time: nothing is due.
    w.placementList = [{ ...base, instance_id: "fine", node_id: "n1" }];
    w.rows.set("n1", { kind: "answered", rows: [{ instance_id: "fine", state: "running", generation: 1 }] });
    expect((await loop.pass()).next_due_ms).toBeNull();
  });

  it("a pass woken for the nodes due asks only them, acts on their rows, and keeps what the other nodes wait for", async () => {
    const lease = 30_000;
    const w = new World();
    const overAt = { a: w.now + 3_000, b: w.now + 8_000 };
    w.placementList = [
      { ...base, instance_id: "ia", name: "on-a", node_id: "a" },
      { ...base, instance_id: "ib", name: "on-b", node_id: "b" },
    ];
    for (const id of ["a", "b"] as const)
      w.nodes.set(id, {
        liveness: "dead",
        forgotten: false,
        dead_at_ms: null,
        lease_ms: lease,
        last_sent_issued_at_ms: overAt[id] - leaseWaitMs(lease),
      });
    const loop = new KeepLoop(w);
    expect((await loop.pass()).next_due_ms).toBe(overAt.a);
    w.now = overAt.a;
    expect(loop.dueNodes(w.now)).toEqual(new Set(["a"]));
    w.observedNodes.length = 0;
    const woken = await loop.pass({ nodes: loop.dueNodes(w.now) });
    expect(w.observedNodes).toEqual(["a"]);
    expect(woken.judged).toBe(1);
    expect(w.performed).toEqual(["reschedule ia"]);
    expect(woken.next_due_ms, "node b's wait, judged by the earlier pass, is still due").toBe(overAt.b);
    w.now = overAt.b;
    await loop.pass({ nodes: loop.dueNodes(w.now) });
    expect(w.performed).toEqual(["reschedule ia", "reschedule ib"]);
  });
});

/** Lets `n` turns of the event loop pass (what an awaited call costs in a scripted world). */
async function turns(n: number): Promise<void> {
  for (let t = 0; t < n; t++) await new Promise<void>((resolve) => setImmediate(resolve));
}
