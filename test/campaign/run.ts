/**
 * Runs schedules against real processes and judges them from outside (issue 16, "berth's own fault campaign"; issue
 * 21, "Proof"). A world (world.ts) runs a chunk of seeds one after another; each schedule gets its own agent names.
 * Per schedule: each round arms its faults, starts its CLI processes and strikes its timed faults; then heal (every
 * proxy disarmed and listening, every daemon restarted with its data dir — except a `dead-node`, which stays dead
 * until the schedule is judged), `berth unsettled --settle` when the store holds an open decision, the user converges
 * (`berth deploy` of each agent meant to run that does not run once, `berth agent stop` of each stopped one still
 * running), and judge:
 * - two-live: never two live instances of one name in any /proc sample (every ~100 ms, the world's whole life);
 * - unrecorded-live: after settle, no live instance of the world the controller does not record;
 * - killed-unasked: no instance the controller had recorded disappears unless a stop/replace/unload/place of that
 *   name was asked, a `node drain` of its node was running (drain's stops are asked for), the campaign itself killed
 *   it (a fault, or its node's power lost before a `node forget`), or its node's lease asked for it — judged precisely: the copy ran
 *   on the leased node, its node recorded it `lease_stopped` or its daemon was down, and it was gone no earlier than
 *   the lease deadline the node's accepted requests prove (lease-witness.ts);
 * - lease-overrun / lease-revived: no copy on the leased node outlives the latest deadline any delivered request
 *   allows, and no request delivered past its lease is answered ok;
 * - not-converged: after heal every agent meant to run runs exactly once (recorded) — unless its node is dead for
 *   this schedule (a forgotten node excuses nothing: forget frees its agents to run elsewhere), or its lease stopped
 *   it (or kept a crashed copy from restarting) after the user converged — and every stopped one not at all; an agent
 *   of an earlier schedule that this one's drain moved or forget killed is converged and judged with this schedule's own;
 *   the agents earlier schedules of the world left running must still run (or have been stopped by their lease);
 * - chain: `berth audit verify` of the controller's chain and of every node's chain, at the end of each world (each
 *   chain holds every schedule's events; a failure is attributed by the chain heads recorded after each schedule).
 * A world that found a violation, or forgot a node (gone for good), is closed; the rest of its chunk runs in a fresh
 * one. A drained node is uncordoned after the judge. Timing is not replayed (the
 * machine decides it); the schedule is, from the seed, and so is the order of a chunk. Over 400 lines: one runner,
 * kept together so the order of heal and judge reads top to bottom.
 */
import { join } from "node:path";
import type { Spawned } from "../support/process.js";
import { bump, type FaultContext, restartDaemon, sleep, strike } from "./faults.js";
import { LEASE_STOP_GRACE_MS } from "../../src/core/mesh/lease.js";
import { EARLY_TOLERANCE_MS, LeaseWitness } from "./lease-witness.js";
import {
  chainHead,
  instancesByName,
  liveAgentProcesses,
  nameHolders,
  nodeLeaseHolds,
  nodeLeaseStops,
  openDecisions,
  recordedPlacements,
} from "./observe.js";
import { Sampler } from "./sampler.js";
import { describeSchedule, type Operation, type Schedule, scheduleFor } from "./schedule.js";
import { type CliResult, LEASE_MS, makeWorld, type World, WorldSetupError } from "./world.js";

export interface Outcome {
  readonly seed: number;
  readonly schedule: string;
  /** Faults that struck, by type (armed faults whose request never came are counted as `<type>:unstruck`). */
  readonly faults: Record<string, number>;
  readonly ops: Record<string, number>;
  readonly violations: string[];
  readonly notes: string[];
  readonly ms: number;
  /** The seeds its world ran, in order, up to and including this one (the replay). */
  readonly world: readonly number[];
  /** It forgot a node (`node-forget`): that node is gone for good, so its world is closed after it. */
  readonly closedWorld?: boolean;
  /**
   * Where the wall time went, in ms by phase (the network world): the schedule's own (`rounds`, `heal`, `settle`,
   * `converge`, `judge`) and, on the first and last outcome of a world, the world's fixed costs (`setup:*`,
   * `verify`, `teardown`). Summed by `summarise`.
   */
  readonly phases?: Record<string, number>;
}

const ROUND_DEADLINE_MS = 90_000;
/** How long the judge waits, after the user converged, for every agent to show the intended state. */
const CONVERGE_WAIT_MS = 20_000;
const CONVERGE_ATTEMPTS = 3;
/** How long the intended state must hold before the judge looks: longer than a killed copy takes to leave /proc. */
const SETTLED_FOR_MS = 1_000;

interface WorldState {
  readonly w: World;
  readonly sampler: Sampler;
  readonly witness: LeaseWitness | null;
  readonly down: Map<number, Array<[number, number | null]>>;
  /** Agents earlier schedules left running once: name → instance. */
  readonly carried: Map<string, string>;
  readonly log: (s: string) => void;
  /** Chain heads after each schedule (controller, then each node), for attributing a chain failure. */
  readonly heads: Array<{ seed: number; heads: Array<number | null> }>;
  /**
   * Instances whose end an operator's node verb accounts for, with why: seen live on a node while `node drain` ran
   * and gone after it (drain's stops are asked for), or killed with their node's power before `node forget`.
   */
  readonly excused: Map<string, string>;
}

interface RunState extends FaultContext {
  readonly ws: WorldState;
  readonly s: Schedule;
  readonly seed: number;
  readonly ops: Record<string, number>;
  readonly notes: string[];
  readonly intent: Map<number, "run" | "stopped">;
  /** Names whose instances someone asked to go (stop, replace, unload, place). */
  readonly asked: Set<string>;
  /** Nodes forgotten by this schedule (also in `dead`, but never excused as dead: forget frees their agents). */
  readonly forgotten: Set<number>;
  /** Nodes drained by this schedule, uncordoned after the judge. */
  readonly drained: Set<number>;
  /**
   * Agents of earlier schedules of this world that a node verb of this one moved or killed (drain, forget): the user
   * converges them too (name → spec file), and they must run once after heal like this schedule's own.
   */
  readonly extra: Map<string, string>;
  /** When this schedule began: an `extra` agent's instances from before it were judged by their own schedule. */
  readonly startedMs: number;
}

/** Every agent the user means something for after this schedule: its own (by intent), and the carried ones moved or killed by a node verb. */
function meant(
  st: RunState,
): Array<{ readonly name: string; readonly spec: string; readonly intent: "run" | "stopped" }> {
  const own = [...st.intent].map(([a, intent]) => ({
    name: st.w.agentName(st.seed, a),
    spec: st.w.specFile(st.seed, a),
    intent,
  }));
  return [...own, ...[...st.extra].map(([name, spec]) => ({ name, spec, intent: "run" as const }))];
}

/** The spec file of an agent of this world, from its name (`<prefix>s<seed>a<i>`); null for a workload's name. */
function specOf(w: World, name: string): string | null {
  const m = /s(\d+)a(\d+)$/.exec(name);
  return m && w.seedOf(name) !== null ? w.specFile(Number(m[1]), Number(m[2])) : null;
}

/** Marks an instance a node verb accounts for; a carried agent of an earlier schedule it touched is converged again. */
function excuse(st: RunState, id: string, name: string, why: string): void {
  st.ws.excused.set(id, why);
  const spec = specOf(st.w, name);
  if (st.w.seedOf(name) !== st.seed && spec !== null && st.ws.carried.get(name) === id) st.extra.set(name, spec);
}

/**
 * The node's power is lost (issue 16's dead node *with* its agents): its daemon and every process of its instances
 * killed -9, and it stays dead (it is forgotten next). Never the last live node that is not cordoned by a drain: then
 * a node already dead (or else a drained one) is taken (its agents are killed with it), so some node is left to
 * converge on (seed 1828 of the long run forgot the last node while the other live one was drained).
 */
async function powerLoss(st: RunState, wanted: number): Promise<number> {
  const { w } = st;
  let i = wanted;
  // A node a drain of this schedule cordoned takes no agent until it is uncordoned after the judge: not a live one here.
  const eligible = (k: number) => (w.nodes[k]?.alive ?? false) && !st.drained.has(k);
  const others = w.nodes.filter((_, k) => k !== i && eligible(k)).length;
  if (eligible(i) && others === 0) {
    const dead = w.nodes.findIndex((n, k) => k !== wanted && !n.alive);
    i = dead >= 0 ? dead : w.nodes.findIndex((_, k) => k !== wanted && !eligible(k));
    st.notes.push(
      `node-forget: node ${wanted} is the last live uncordoned node; node ${i} (${dead >= 0 ? "dead" : "drained"}) lost its power and is forgotten instead`,
    );
  }
  const node = w.nodes[i];
  if (!node) return i;
  const live = liveAgentProcesses(w.prefix).filter((p) => p.node === node.nodeId);
  const wasAlive = node.alive;
  await node.killWithInstances();
  for (const p of live) {
    try {
      process.kill(-p.pgid, "SIGKILL");
    } catch {
      // gone with its group already
    }
  }
  if (wasAlive) st.down.set(i, [...(st.down.get(i) ?? []), [Date.now(), null]]);
  for (const p of live) {
    st.killed.add(p.instance);
    excuse(st, p.instance, p.name, `power lost on node ${i} before it was forgotten`);
  }
  st.dead.add(i);
  st.forgotten.add(i);
  bump(st.faults, `power-loss:${wasAlive ? "node" : "dead-node"}`);
  return i;
}

function command(st: RunState, op: Operation): string[][] {
  const { w } = st;
  const agent = (i: number) => w.agentName(st.seed, i);
  switch (op.op) {
    case "deploy":
      return [["deploy", w.specFile(st.seed, op.agent), "--json"]];
    case "deploy-twice":
      return [
        ["deploy", w.specFile(st.seed, op.agent), "--json"],
        ["deploy", w.specFile(st.seed, op.agent), "--json"],
      ];
    case "place":
      return [["place", w.pkgDir, "--name", w.workloadName(st.seed, op.workload), "--json"]];
    case "settle":
      return [["unsettled", "--settle", "--json"]];
    case "stop":
      return [["agent", "stop", agent(op.agent), "--json"]];
    case "replace":
      return [["agent", "replace", agent(op.agent), "--json"]];
    case "node-drain":
      return [
        [
          "node",
          "drain",
          w.nodes[op.node]?.nodeId ?? String(op.node),
          "--reason",
          `campaign seed ${st.seed}`,
          "--json",
        ],
      ];
    case "node-forget":
      // powerLoss() has run and picked the node (st.forgotten's newest).
      return [
        [
          "node",
          "forget",
          w.nodes[[...st.forgotten].at(-1) ?? op.node]?.nodeId ?? String(op.node),
          "--reason",
          `campaign seed ${st.seed}: power lost`,
          "--json",
        ],
      ];
    case "unload": {
      const name = agent(op.agent);
      const id = [...(recordedPlacements(w.home) ?? new Map<string, string>())].find(([, n]) => n === name)?.[0];
      if (id === undefined) {
        st.notes.push(`unload of ${name}: no recorded placement, skipped`);
        return [];
      }
      return [["instance", "unload", id, "--json"]];
    }
  }
}

function noteIntent(st: RunState, op: Operation): void {
  const { w } = st;
  if (op.op === "deploy" || op.op === "deploy-twice" || op.op === "replace") st.intent.set(op.agent, "run");
  if (op.op === "stop") st.intent.set(op.agent, "stopped");
  if (op.op === "stop" || op.op === "replace" || op.op === "unload") st.asked.add(w.agentName(st.seed, op.agent));
  if (op.op === "place") st.asked.add(w.workloadName(st.seed, op.workload));
}

async function finish(clis: Spawned[], notes: string[], faults: Record<string, number>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"late">((r) => {
    timer = setTimeout(() => r("late"), ROUND_DEADLINE_MS);
  });
  const all = Promise.all(clis.map((c) => c.exited())).then(() => "done" as const);
  if ((await Promise.race([all, deadline])) === "late") {
    for (const c of clis) if (c.child.exitCode === null) c.child.kill("SIGKILL");
    notes.push(`a CLI process ran past ${ROUND_DEADLINE_MS} ms and was killed`);
    bump(faults, "kill-cli:deadline");
    await all;
  }
  clearTimeout(timer);
}

/** Every proxy disarmed and listening; every daemon but this schedule's dead ones restarted. */
async function heal(st: RunState): Promise<void> {
  for (const p of st.w.proxies) {
    p.disarm();
    await p.heal();
  }
  for (const [i, n] of st.w.nodes.entries()) if (!n.alive && !st.dead.has(i)) await restartDaemon(st, i);
}

/**
 * Whether an instance's disappearance was asked for by its node's lease, precisely (see the header): null if so,
 * else why not (for the violation's text).
 */
function notALeaseStop(ws: WorldState, instance: string): string | null {
  const seen = ws.sampler.seen.get(instance);
  const i = ws.w.leaseNode;
  if (!seen || seen.goneMs === null || i === null || !ws.witness) return "it ran on no leased node";
  const node = ws.w.nodes[i];
  if (!node || seen.node !== node.nodeId) return "it ran on a node without a lease";
  // A stop begins at most the grace (and a second for the kill) before the copy is gone: it was live at lastMs.
  const lower = ws.witness.lowerDeadline(seen.lastMs - LEASE_STOP_GRACE_MS - 1_000);
  if (seen.goneMs < lower - EARLY_TOLERANCE_MS)
    return `it was gone by ${seen.goneMs}, ${lower - seen.goneMs} ms before the lease deadline its node's accepted requests prove (${lower})`;
  const gone = seen.goneMs;
  const daemonDown = (ws.down.get(i) ?? []).some(([from, to]) => from <= gone && (to === null || to >= seen.lastMs));
  const chained = nodeLeaseStops(node.dataDir).get(instance);
  if (chained === undefined && !daemonDown) return "its node's chain records no lease stop of it and its daemon was up";
  const lowerAtChain =
    chained === undefined ? Number.NEGATIVE_INFINITY : ws.witness.lowerDeadline(chained - LEASE_STOP_GRACE_MS - 1_000);
  if (chained !== undefined && chained < lowerAtChain - EARLY_TOLERANCE_MS)
    return `its node chained the lease stop at ${chained}, ${lowerAtChain - chained} ms before the lease deadline its accepted requests prove (${lowerAtChain})`;
  return null;
}

/**
 * The other way a lease ends a copy after the user converged: the copy crashed (a campaign kill) before, its node's
 * supervisor waited out the restart backoff, and by then no controller had renewed the lease (only CLIs run here, and
 * the last one has exited), so the node did not restart it (`lease_stopped`, chained in phase `supervise`) — the
 * controller starts it at its next contact, as the issue asks. Excused only when the node chained that after the user
 * converged and no earlier than the lease deadline its accepted requests prove; the reason, or null.
 */
function leaseHoldAfter(ws: WorldState, instances: readonly string[], convergedAtMs: number): string | null {
  const i = ws.w.leaseNode;
  const node = i === null ? undefined : ws.w.nodes[i];
  if (!node || !ws.witness) return null;
  const holds = nodeLeaseHolds(node.dataDir);
  for (const id of instances) {
    const at = holds.get(id);
    if (at === undefined || at < convergedAtMs) continue;
    const lower = ws.witness.lowerDeadline(at);
    if (at < lower - EARLY_TOLERANCE_MS) continue;
    return `not restarted after its crash: its node's lease ran out after the user converged (chained at ${at}, lease deadline at least ${lower})`;
  }
  return null;
}

function judge(st: RunState, verifiedAfterMs: number): string[] {
  const { w, ws } = st;
  const violations = ws.sampler.found.splice(0);
  if (ws.witness)
    for (const r of ws.witness.revived.splice(0))
      violations.push(`lease-revived: a request held past its lease renewed it: ${r}`);
  const live = ws.sampler.sample();
  const recorded = recordedPlacements(w.home) ?? new Map<string, string>();
  const by = instancesByName(live);
  // A forgotten node is dead too, but forgetting it freed its agents: they must run elsewhere, not be excused.
  const deadNodes = new Set([...st.dead].filter((i) => !st.forgotten.has(i)).map((i) => w.nodes[i]?.nodeId));
  for (const [id, name] of new Map(live.map((p) => [p.instance, p.name]))) {
    if (!recorded.has(id))
      violations.push(`unrecorded-live: ${name} instance ${id} runs and the controller does not record it`);
  }
  const stillLive = new Set(live.map((p) => p.instance));
  const leaseStops = new Map<string, number>();
  // Why each copy that went during this schedule was not its lease's doing: named in a not-converged verdict, so a
  // finding that does not replay (the machine decides the timing) still says what the judge saw.
  const notLease = new Map<string, string[]>();
  for (const [id, seen] of ws.sampler.seen) {
    const judgedHere = w.seedOf(seen.name) === st.seed || (st.extra.has(seen.name) && seen.firstMs >= st.startedMs);
    if (stillLive.has(id) || !judgedHere) continue;
    const whyNot = notALeaseStop(ws, id);
    if (whyNot === null) {
      if (seen.goneMs !== null) leaseStops.set(seen.name, Math.max(leaseStops.get(seen.name) ?? 0, seen.goneMs));
      continue;
    }
    notLease.set(seen.name, [...(notLease.get(seen.name) ?? []), `${id} gone at ${seen.goneMs}: ${whyNot}`]);
    if (!ws.sampler.everRecorded.has(id) || st.asked.has(seen.name) || st.killed.has(id) || ws.excused.has(id))
      continue;
    violations.push(
      `killed-unasked: ${seen.name} instance ${id} was recorded and live, and is gone though nobody asked, the campaign did not kill it and its lease did not stop it (${whyNot})`,
    );
  }
  if (leaseStops.size > 0) bump(st.faults, "lease-stop:observed");
  const holders = nameHolders(w.home);
  for (const { name, intent } of meant(st)) {
    const ids = [...(by.get(name) ?? [])];
    if (intent === "run" && (ids.length !== 1 || recorded.get(ids[0] ?? "") !== name)) {
      // Held on a dead node: its placement is there, or an open decision was sent there (its answer never came, and
      // settle cannot ask a dead node). Without a lease berth holds it by design (issue 16: never re-placed; a user
      // who knows the node is gone for good forgets it, which the node-forget operation covers); the campaign's dead
      // node returns after the judge, so the user waits for it, as one would for a node that is only down.
      const onDead = [...(holders.get(name) ?? [])].find((n) => deadNodes.has(n));
      if (ids.length === 0 && onDead !== undefined) {
        st.notes.push(
          `${name}: held on node ${onDead}, dead for this schedule (its placement or an open decision); not running once is what a controller without that node must accept`,
        );
        continue;
      }
      if (ids.length === 0 && (leaseStops.get(name) ?? 0) >= verifiedAfterMs) {
        st.notes.push(`${name}: stopped by its node's lease after the user converged (judged above)`);
        continue;
      }
      const held =
        ids.length === 0
          ? leaseHoldAfter(
              ws,
              [...recorded].filter(([, n]) => n === name).map(([id]) => id),
              verifiedAfterMs,
            )
          : null;
      if (held !== null) {
        st.notes.push(`${name}: ${held}`);
        continue;
      }
      const gone = notLease.get(name);
      violations.push(
        `not-converged: ${name} should run exactly once after heal; live instances [${ids.join(", ")}], recorded ${JSON.stringify([...recorded].filter(([, n]) => n === name))}; converged at ${verifiedAfterMs}${gone ? `; gone, not by its lease: ${gone.join("; ")}` : ""}`,
      );
    }
    if (intent === "stopped" && ids.length > 0) {
      // A copy on a node that is dead for this schedule cannot be stopped by anyone (its daemon is gone; `agent stop`
      // rightly answers that no node that answered holds it): not a finding while its node stays dead.
      const onLiveNodes = ids.filter((id) => !deadNodes.has(ws.sampler.seen.get(id)?.node));
      if (onLiveNodes.length === 0) {
        st.notes.push(
          `${name}: stopped, and its copy [${ids.join(", ")}] runs on a node that is dead for this schedule (no one can stop it there)`,
        );
        ws.carried.delete(name);
        continue;
      }
      violations.push(`not-converged: ${name} was stopped and still runs: [${ids.join(", ")}]`);
    }
  }
  // What earlier schedules of this world left running must still run, unless its lease stopped it.
  for (const [name, id] of ws.carried) {
    if (stillLive.has(id)) continue;
    ws.carried.delete(name);
    const excused = ws.excused.get(id);
    if (excused !== undefined) {
      st.notes.push(`${name} (seed ${w.seedOf(name)}): its copy ${id} ${excused}; converged again and judged above`);
      continue;
    }
    const whyNot = notALeaseStop(ws, id);
    if (whyNot === null)
      st.notes.push(`${name} (seed ${w.seedOf(name)}): stopped by its node's lease during this schedule`);
    else
      violations.push(
        `killed-unasked: ${name} instance ${id}, left running by seed ${w.seedOf(name)}, is gone though nobody asked (${whyNot})`,
      );
  }
  for (const { name, intent } of meant(st)) {
    const ids = [...(by.get(name) ?? [])];
    if (intent === "run" && ids.length === 1 && ids[0] !== undefined) ws.carried.set(name, ids[0]);
  }
  return violations;
}

async function runSchedule(ws: WorldState, seed: number, world: readonly number[]): Promise<Outcome> {
  const started = Date.now();
  const s = scheduleFor(seed);
  const { w, log } = ws;
  w.writeAgents(seed, s.agents);
  const st: RunState = {
    w,
    ws,
    s,
    seed,
    mine: (name) => w.seedOf(name) === seed,
    faults: {},
    ops: {},
    notes: [],
    intent: new Map(),
    asked: new Set(),
    killed: new Set(),
    dead: new Set(),
    down: ws.down,
    forgotten: new Set(),
    drained: new Set(),
    extra: new Map(),
    startedMs: started,
  };
  let violations: string[] = [];
  try {
    for (const [i, round] of s.rounds.entries()) {
      log(`seed ${seed} round ${i + 1}`);
      for (const op of round.ops) noteIntent(st, op);
      let opsDoneResolve: () => void = () => undefined;
      const opsDone = new Promise<void>((r) => {
        opsDoneResolve = r;
      });
      const clis: Spawned[] = [];
      for (const op of round.ops) if (op.op === "node-forget") await powerLoss(st, op.node);
      const strikes = round.faults.map((f) => strike(st, f, clis, opsDone));
      const roundStart = Date.now();
      for (const op of round.ops) {
        for (const args of command(st, op)) {
          bump(st.ops, op.op);
          clis.push(w.spawnBerth(...args));
        }
      }
      await finish(clis, st.notes, st.faults);
      opsDoneResolve();
      await Promise.all(strikes);
      for (const c of clis)
        log(
          `  exit ${c.child.exitCode ?? c.child.signalCode}: ${c.output().slice(0, 300).replace(/\s+/g, " ")} ${c.errors().slice(0, 300)}`,
        );
      for (const p of w.proxies) p.disarm();
      for (const op of round.ops) {
        if (op.op !== "node-drain") continue;
        // What was live on the drained node during the drain and is gone now, the drain asked to stop.
        st.drained.add(op.node);
        const nodeId = w.nodes[op.node]?.nodeId;
        ws.sampler.sample();
        for (const [id, seen] of ws.sampler.seen) {
          if (seen.node === nodeId && seen.goneMs !== null && seen.goneMs >= roundStart)
            excuse(st, id, seen.name, `was on node ${op.node} while it was drained`);
        }
      }
    }
    await heal(st);
    log(`seed ${seed} healed${st.dead.size > 0 ? ` (node(s) ${[...st.dead].join(", ")} dead for this schedule)` : ""}`);
    if ((openDecisions(w.home) ?? 1) > 0) {
      const r = await w.berth("unsettled", "--settle", "--json");
      bump(st.ops, "settle:heal");
      if (r.code !== 0) st.notes.push(`settle exited ${r.code}: ${r.stdout.slice(0, 200)} ${r.stderr.slice(0, 200)}`);
    }
    // The user converges: a deploy of each agent meant to run that does not run once, a stop of each stopped one that runs.
    // A user whose verb failed (a loaded machine misses the CLI's 5 s describe deadline) runs it again: up to three
    // times, and only while the agent is not yet as meant. Then the judge waits for the state to show.
    // A copy may be dying at the very moment the user looks (a kill of its group leader or worker struck late in the
    // last round): everything looks as meant, so the user runs nothing, and its node restarts it (restart: always)
    // after its backoff. So the wait runs even when no verb did; and if the user ran nothing and the agents are still
    // not as meant after it (say its node gave up restarting it), the user looks once more.
    const convergedAt = Date.now();
    const deadIds = new Set([...st.dead].filter((i) => !st.forgotten.has(i)).map((i) => w.nodes[i]?.nodeId));
    for (let look = 1; look <= 2; look++) {
      const converge: CliResult[] = [];
      for (let attempt = 1; attempt <= CONVERGE_ATTEMPTS; attempt++) {
        const now = instancesByName(ws.sampler.sample());
        const recorded = recordedPlacements(w.home) ?? new Map<string, string>();
        const pending = meant(st).filter(({ name, intent }) => {
          const ids = [...(now.get(name) ?? [])];
          return intent === "run" ? !(ids.length === 1 && recorded.get(ids[0] ?? "") === name) : ids.length > 0;
        });
        if (pending.length === 0 || (attempt > 1 && converge.every((r) => r.code === 0))) break;
        const results = await Promise.all(
          pending.map(({ name, spec, intent }) => {
            bump(st.ops, `converge:${intent === "run" ? "deploy" : "stop"}`);
            return intent === "run" ? w.berth("deploy", spec, "--json") : w.berth("agent", "stop", name, "--json");
          }),
        );
        for (const [k, r] of results.entries()) {
          const line = `converge ${look}.${attempt}.${k} (${pending[k]?.name}): exit ${r.code} ${r.stdout.slice(0, 240).replace(/\s+/g, " ")} ${r.stderr.slice(0, 160).replace(/\s+/g, " ")}`;
          log(line);
          if (r.code !== 0) st.notes.push(line);
        }
        converge.splice(0, converge.length, ...results);
        // A deploy that met a lost stop/unload answer says to check the instance's status, then deploy again: the
        // user does (the status resolves the pending verb, verbs.ts), and the next attempt deploys again.
        const advised = new Set(
          results.flatMap((r) =>
            r.code === 0 ? [] : [...r.stdout.matchAll(/berth instance status ([A-Za-z0-9-]+)/g)].map((m) => m[1] ?? ""),
          ),
        );
        for (const id of advised) {
          if (id === "") continue;
          bump(st.ops, "converge:status");
          const r = await w.berth("instance", "status", id, "--json");
          log(
            `converge ${look}.${attempt}: instance status ${id}: exit ${r.code} ${r.stdout.slice(0, 200).replace(/\s+/g, " ")}`,
          );
        }
      }
      // Settled once the intended state has held for SETTLED_FOR_MS: a copy in its last milliseconds still shows.
      const end = Date.now() + CONVERGE_WAIT_MS;
      let settled = false;
      let settledSince: number | null = null;
      while (!settled && Date.now() < end) {
        const live = ws.sampler.sample();
        const by = instancesByName(live);
        const onDead = new Set(live.filter((p) => deadIds.has(p.node)).map((p) => p.name));
        const asMeant = meant(st).every(({ name, intent }) => {
          const n = by.get(name)?.size ?? 0;
          return intent === "run" ? n === 1 || (n === 0 && onDead.has(name)) : n === 0;
        });
        settledSince = asMeant ? (settledSince ?? Date.now()) : null;
        settled = settledSince !== null && Date.now() - settledSince >= SETTLED_FOR_MS;
        if (!settled) await sleep(200);
      }
      if (settled || converge.length > 0) break;
      if (look === 1)
        st.notes.push(
          `the agents looked as meant at converge and were not after ${CONVERGE_WAIT_MS} ms: the user looked again`,
        );
    }
    violations = judge(st, convergedAt);
  } catch (e) {
    violations.push(`campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  } finally {
    for (const i of st.dead) {
      if (!st.forgotten.has(i))
        await restartDaemon(st, i).catch((e: unknown) => st.notes.push(`restart of dead node ${i}: ${String(e)}`));
    }
    for (const i of st.drained) {
      if (st.forgotten.has(i)) continue;
      const r = await w.berth(
        "node",
        "uncordon",
        w.nodes[i]?.nodeId ?? String(i),
        "--reason",
        `campaign seed ${seed}: judged`,
        "--json",
      );
      if (r.code !== 0)
        st.notes.push(
          `uncordon of drained node ${i} exited ${r.code}: ${r.stdout.slice(0, 200)} ${r.stderr.slice(0, 200)}`,
        );
    }
    ws.heads.push({
      seed,
      heads: [chainHead(join(w.home, "controller.db")), ...w.nodes.map((n) => chainHead(join(n.dataDir, "node.db")))],
    });
  }
  return {
    seed,
    schedule: describeSchedule(s),
    faults: st.faults,
    ops: st.ops,
    violations,
    notes: st.notes,
    ms: Date.now() - started,
    world,
    ...(st.forgotten.size > 0 ? { closedWorld: true } : {}),
  };
}

/** `berth audit verify` of every chain of the world; a failure is attributed to the schedule that wrote its first bad event. */
async function verifyChains(ws: WorldState, outcomes: Outcome[]): Promise<void> {
  const { w } = ws;
  const dbs = [join(w.home, "controller.db"), ...w.nodes.map((n) => join(n.dataDir, "node.db"))];
  const verified: CliResult[] = await Promise.all([
    w.berth("audit", "verify", "--db", dbs[0] as string, "--json"),
    ...w.nodes.map((n) =>
      w.berth("audit", "verify", "--db", join(n.dataDir, "node.db"), "--pubkey", n.publicKey, "--json"),
    ),
  ]);
  for (const [k, v] of verified.entries()) {
    if (v.code === 0) continue;
    const seq = Number(/"seq"\s*:\s*(\d+)/.exec(v.stdout)?.[1] ?? Number.NaN);
    const by = ws.heads.find((h) => Number.isFinite(seq) && (h.heads[k] ?? -1) >= seq)?.seed;
    const target = outcomes.find((o) => o.seed === by) ?? outcomes[outcomes.length - 1];
    target?.violations.push(
      `chain: berth audit verify of ${dbs[k]} failed${by === undefined ? " (not attributed to one schedule)" : ""}: ${v.stdout.slice(0, 400)} ${v.stderr.slice(0, 400)}`,
    );
  }
}

/**
 * Runs a chunk of seeds in one world, in order, until one finds a violation (its world is then closed). Returns the
 * outcomes and the seeds it did not run.
 */
export async function runWorld(
  seeds: readonly number[],
  opts: { verbose?: boolean; progress?: (line: string) => void } = {},
): Promise<{ outcomes: Outcome[]; rest: number[] }> {
  const started = Date.now();
  const log = opts.verbose
    ? (m: string) => process.stderr.write(`[world ${seeds[0]}… +${Date.now() - started} ms] ${m}\n`)
    : () => undefined;
  // The witness sees the leased node's requests from the first one (`nodes add`); a fresh lease counts from boot.
  const witness = new LeaseWitness(LEASE_MS, Date.now() + 60_000);
  const w = await makeWorld(3, {
    leaseNode: 2,
    leaseMs: LEASE_MS,
    onProxy: (i, p) => {
      if (i === 2) p.observer = witness;
    },
  });
  witness.bootMs = Date.now();
  const leased = w.leaseNode === null ? undefined : w.nodes[w.leaseNode];
  const sampler = new Sampler(w.prefix, w.home, leased && witness ? { nodeId: leased.nodeId, witness } : null, log);
  const ws: WorldState = {
    w,
    sampler,
    witness,
    down: new Map(),
    carried: new Map(),
    log,
    heads: [],
    excused: new Map(),
  };
  sampler.start();
  log(`world up (${w.prefix})`);
  const outcomes: Outcome[] = [];
  let ran = 0;
  try {
    for (const seed of seeds) {
      const o = await runSchedule(ws, seed, seeds.slice(0, ran + 1));
      ran++;
      opts.progress?.(
        `seed ${seed} judged in ${(o.ms / 1000).toFixed(1)} s: ${o.violations.length === 0 ? "ok" : `${o.violations.length} violation(s)`} (reported with its world's chains)`,
      );
      outcomes.push(o);
      // A world that found a violation, or forgot a node for good, is closed; the rest of its chunk gets a fresh one.
      if (o.violations.length > 0 || o.closedWorld === true) break;
    }
    sampler.stop();
    await verifyChains(ws, outcomes);
  } finally {
    sampler.stop();
    await w.close();
  }
  return { outcomes, rest: seeds.slice(ran) };
}

/**
 * Runs `seeds` in worlds of `worldSize` consecutive seeds, at most `parallel` worlds at once; `each` is told every
 * outcome as soon as its world has verified its chains.
 */
export async function runSeeds(
  seeds: readonly number[],
  parallel: number,
  each: (o: Outcome) => void,
  opts: { verbose?: boolean; worldSize?: number } = {},
): Promise<Outcome[]> {
  const size = Math.max(1, opts.worldSize ?? 1);
  const queue: number[][] = [];
  for (let i = 0; i < seeds.length; i += size) queue.push(seeds.slice(i, i + size));
  const outcomes: Outcome[] = [];
  const setupFailures = new Map<number, number>();
  const worker = async () => {
    for (let chunk = queue.shift(); chunk; chunk = queue.shift()) {
      let result: { outcomes: Outcome[]; rest: number[] };
      try {
        result = await runWorld(chunk, opts);
      } catch (e) {
        if (e instanceof WorldSetupError && (setupFailures.get(chunk[0] as number) ?? 0) < 3) {
          // Not a finding: the chunk goes back to the queue whole, for another world.
          setupFailures.set(chunk[0] as number, (setupFailures.get(chunk[0] as number) ?? 0) + 1);
          queue.unshift(chunk);
          continue;
        }
        // A world that could not even start: its first seed carries the error, the rest run elsewhere.
        const seed = chunk[0] as number;
        const error = `campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`;
        result = {
          outcomes: [
            {
              seed,
              schedule: describeSchedule(scheduleFor(seed)),
              faults: {},
              ops: {},
              violations: [error],
              notes: [],
              ms: 0,
              world: [seed],
            },
          ],
          rest: chunk.slice(1),
        };
      }
      for (const o of result.outcomes) {
        outcomes.push(o);
        each(o);
      }
      if (result.rest.length > 0) queue.unshift(result.rest);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  return outcomes.sort((a, b) => a.seed - b.seed);
}

/** `1,2,3,5` → `1-3,5`. */
function ranges(seeds: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < seeds.length; ) {
    let j = i;
    while (j + 1 < seeds.length && (seeds[j + 1] as number) === (seeds[j] as number) + 1) j++;
    parts.push(i === j ? `${seeds[i]}` : `${seeds[i]}-${seeds[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

export function replayHint(o: Pick<Outcome, "seed" | "world"> & { readonly schedule?: string }): string {
  // A network-world schedule replays only in that world (its description says so: "seed N (net)").
  const net = o.schedule !== undefined && /^seed \d+ \(net\)/.test(o.schedule) ? " --world net" : "";
  if (o.world.length <= 1) return `replay: bash scripts/campaign${net} --seeds ${o.seed} --verbose`;
  return `replay: bash scripts/campaign${net} --seeds ${ranges(o.world)} --world-size ${o.world.length} --verbose (seed ${o.seed} ran after ${o.world.length - 1} schedule(s) in one world; alone: --seeds ${o.seed})`;
}
