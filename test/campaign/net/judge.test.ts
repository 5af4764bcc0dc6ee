/**
 * The network world's judge (judge.ts) is a pure function over observations: each test plants one violation in an
 * otherwise clean history and shows the judge names it — and that the clean history passes, so a planted violation is
 * what it caught.
 */
import { describe, expect, it } from "vitest";
import { type Explanation, judge, type Observations, type ProcObs, type Sample } from "./judge.js";

const CAMPAIGN = 100;
const DAEMON = { node: 0, pid: 200, start: 5 };

function proc(
  pid: number,
  start: number,
  pgid: number,
  ppid: number,
  env: { name: string; instance: string } | null,
  extra: Partial<ProcObs> = {},
): ProcObs {
  return { pid, start, ppid, pgid, comm: "sh", node: 0, cgroupInstance: null, env, ...extra };
}

const A = { name: "cmpXs1a0", instance: "inst-a" };
/** An agent generation: its leader, its worker, and a child that cleared its environment (found by its group). */
const gen = (leader: number, start: number, who = A) => [
  proc(leader, start, leader, DAEMON.pid, who),
  proc(leader + 1, start + 1, leader, leader, who),
  proc(leader + 2, start + 1, leader, leader, null, { comm: "sleep" }),
];
const daemon = proc(DAEMON.pid, DAEMON.start, DAEMON.pid, CAMPAIGN, null, { comm: "node" });

function samples(...frames: ProcObs[][]): Sample[] {
  return frames.map((procs, i) => ({ atMs: i * 1_000, procs: [daemon, ...procs] }));
}

function observations(s: Sample[], o: Partial<Observations> = {}): Observations {
  return {
    prefix: "cmpX",
    samples: s,
    daemons: [DAEMON],
    campaignPids: [CAMPAIGN],
    explanations: [],
    controllerHashes: new Set(["d1"]),
    leased: new Map(),
    cuts: [],
    daemonDown: [],
    crashes: [],
    intent: new Map([[A.name, "run"]]),
    recorded: new Map([[A.instance, A.name]]),
    heldOnDeadNode: new Set(),
    ...o,
  };
}

const stopEvent: Explanation = {
  kind: "node-event",
  node: 0,
  instance: A.instance,
  event: "workload.stop",
  decisionId: "d1",
  lease: false,
};

describe("the network world's judge", () => {
  it("passes a clean history: an agent whose env-less child is found by its group, killed by the campaign and restarted as a new generation", () => {
    const s = samples(gen(300, 10), gen(300, 10), gen(400, 20), gen(400, 20));
    const kill: Explanation = { kind: "campaign-kill", pid: 300, start: 10, why: "kill-leader" };
    expect(judge(observations(s, { explanations: [kill] }))).toEqual([]);
  });

  it("catches two live copies of one name, on two nodes", () => {
    const other = gen(500, 30, { name: A.name, instance: "inst-b" }).map((p) => ({ ...p, node: 1 }));
    const s = samples(gen(300, 10), [...gen(300, 10), ...other], gen(300, 10));
    const v = judge(
      observations(s, {
        explanations: [{ ...stopEvent, instance: "inst-b" }],
        recorded: new Map([
          [A.instance, A.name],
          ["inst-b", A.name],
        ]),
      }),
    );
    expect(v.filter((x) => x.startsWith("two-live"))).toHaveLength(1);
  });

  it("catches two generations of one instance live at once (a stray of the old one beside the restart)", () => {
    const oldWorker = proc(302, 11, 300, 1, null, { comm: "sleep" });
    const s = samples(
      gen(300, 10),
      [...gen(400, 20), oldWorker],
      [...gen(400, 20), oldWorker],
      [...gen(400, 20), oldWorker],
      [...gen(400, 20), oldWorker],
      [...gen(400, 20), oldWorker],
    );
    const v = judge(
      observations(s, { explanations: [{ kind: "campaign-kill", pid: 300, start: 10, why: "kill-leader" }] }),
    );
    expect(v.some((x) => x.startsWith("orphan: instance inst-a"))).toBe(true);
  });

  it("a generation's leftovers outliving a killed leader are an orphan only past the grace counted from their daemon's return (seed 3042)", () => {
    const left = [proc(301, 11, 300, 1, A), proc(302, 11, 300, 301, null, { comm: "sleep" })];
    // Leader seen at 0 s, killed; its worker and child live on to 5 s, then go (reaped).
    const s = samples(gen(300, 10), left, left, left, left, left, []);
    const kill: Explanation = { kind: "campaign-kill", pid: 300, start: 10, why: "kill-leader" };
    const seen = judge(observations(s, { explanations: [kill], intent: new Map(), recorded: new Map() }));
    expect(seen.some((x) => x.startsWith("orphan: instance inst-a"))).toBe(true);
    // Its daemon was killed from 0.5 s to 3 s: reaped 3 s after it came back is within the grace.
    const down = judge(
      observations(s, {
        explanations: [kill],
        intent: new Map(),
        recorded: new Map(),
        daemonDown: [{ node: 0, fromMs: 500, toMs: 3_000 }],
      }),
    );
    expect(down.filter((x) => x.startsWith("orphan"))).toEqual([]);
    // A daemon down on another node excuses nothing.
    const elsewhere = judge(
      observations(s, {
        explanations: [kill],
        intent: new Map(),
        recorded: new Map(),
        daemonDown: [{ node: 1, fromMs: 500, toMs: 3_000 }],
      }),
    );
    expect(elsewhere.some((x) => x.startsWith("orphan: instance inst-a"))).toBe(true);
  });

  it("catches an orphan: a process in a node's namespace that no instance, daemon or campaign tool accounts for", () => {
    const stray = proc(900, 90, 900, 1, null, { comm: "sleep" });
    const s = samples(
      [...gen(300, 10), stray],
      [...gen(300, 10), stray],
      [...gen(300, 10), stray],
      [...gen(300, 10), stray],
      [...gen(300, 10), stray],
    );
    expect(judge(observations(s)).some((x) => x.startsWith("orphan: process 900"))).toBe(true);
    // A tool the campaign ran in the namespace is not one.
    const tool = proc(901, 91, 901, CAMPAIGN, null, { comm: "nft" });
    expect(judge(observations(samples(...Array.from({ length: 5 }, () => [...gen(300, 10), tool]))))).toEqual([]);
  });

  it("catches the unexplained death of a live agent, and does not let one event excuse two deaths", () => {
    const s = samples(gen(300, 10), [], gen(400, 20), []);
    const v = judge(observations(s, { intent: new Map(), recorded: new Map() }));
    expect(v.filter((x) => x.startsWith("unexplained-death"))).toHaveLength(2);
    const once = judge(observations(s, { intent: new Map(), recorded: new Map(), explanations: [stopEvent] }));
    expect(once.filter((x) => x.startsWith("unexplained-death"))).toHaveLength(1);
    expect(
      judge(observations(s, { intent: new Map(), recorded: new Map(), explanations: [stopEvent, stopEvent] })),
    ).toEqual([]);
  });

  it("counts a copy on a leased node that ended while its daemon was down as its watchdog's lease stop, and only there", () => {
    const s = samples(gen(300, 10), gen(300, 10), []);
    const o = { intent: new Map(), recorded: new Map(), leased: new Map([[0, 5_000]]) } as const;
    expect(judge(observations(s, { ...o, daemonDown: [{ node: 0, fromMs: 500, toMs: 5_000 }] }))).toEqual([]);
    expect(
      judge(observations(s, { ...o, daemonDown: [{ node: 1, fromMs: 500, toMs: 5_000 }] })).some((x) =>
        x.startsWith("unexplained-death"),
      ),
    ).toBe(true);
    expect(
      judge(observations(s, { ...o, leased: new Map(), daemonDown: [{ node: 0, fromMs: 500, toMs: 5_000 }] })).some(
        (x) => x.startsWith("unexplained-death"),
      ),
    ).toBe(true);
  });

  it("catches a berth daemon that exited when the campaign had not killed it", () => {
    const v = judge(
      observations(samples(gen(300, 10)), {
        crashes: [{ what: "node 2's daemon", pid: 200, how: "exit code 1: SqliteError: database or disk is full" }],
      }),
    );
    expect(v).toEqual([
      "crash: node 2's daemon (pid 200) exited on its own: exit code 1: SqliteError: database or disk is full",
    ]);
  });

  it("catches a stop under a decision the controller's chain does not hold", () => {
    const s = samples(gen(300, 10), []);
    const v = judge(
      observations(s, {
        intent: new Map(),
        recorded: new Map(),
        explanations: [{ ...stopEvent, decisionId: "forged" }],
      }),
    );
    expect(v.some((x) => x.startsWith("unchained-stop"))).toBe(true);
  });

  it("catches a copy on a leased node that outlives its lease while the node is cut off", () => {
    const s = Array.from({ length: 12 }, (_, i) => ({ atMs: i * 1_000, procs: [daemon, ...gen(300, 10)] }));
    const cut = { node: 0, fromMs: 1_000, toMs: 11_000 };
    expect(
      judge(observations(s, { leased: new Map([[0, 5_000]]), cuts: [cut] })).some((x) => x.startsWith("lease-overrun")),
    ).toBe(true);
    expect(judge(observations(s, { leased: new Map([[0, 5_000]]), cuts: [{ ...cut, toMs: 3_000 }] }))).toEqual([]);
  });

  it("catches an agent not converged and a live instance the controller does not record", () => {
    expect(
      judge(observations(samples(gen(300, 10)), { recorded: new Map() })).some((x) => x.startsWith("unrecorded-live")),
    ).toBe(true);
    expect(
      judge(observations(samples(gen(300, 10)), { intent: new Map([[A.name, "stopped"]]) })).some((x) =>
        x.startsWith("not-converged"),
      ),
    ).toBe(true);
  });
});
