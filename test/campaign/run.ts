/**
 * Runs one seed's schedule against real processes and judges it from outside (issue 16, "berth's own fault
 * campaign"; issue 21, "Proof"). Steps: a fresh world; each round arms its faults, starts its CLI processes and
 * strikes its timed faults; then heal (every proxy disarmed and listening, every daemon restarted with its data dir),
 * `berth unsettled --settle`, the user converges (one final `berth deploy` per agent meant to run, one final
 * `berth agent stop` per agent meant to be stopped), settle again, and judge:
 * - two-live: never two live instances of one name in any /proc sample (every ~100 ms, the whole run);
 * - unrecorded-live: after settle, no live instance the controller does not record;
 * - killed-unasked: no instance the controller had recorded disappears unless a stop/replace/unload/place of that
 *   name was asked or the campaign itself killed it;
 * - not-converged: after heal every agent meant to run runs exactly once (recorded), every stopped one not at all;
 * - chain: `berth audit verify` of the controller's chain and of every node's chain.
 * Timing is not replayed (the machine decides it); the schedule is, from the seed. Over 200 lines: one runner, kept
 * together so the order of heal and judge reads top to bottom.
 */
import { join } from "node:path";
import type { Spawned } from "../support/process.js";
import type { HeldRequest } from "../support/tcp-proxy.js";
import { instancesByName, type LiveProcess, liveAgentProcesses, recordedPlacements } from "./observe.js";
import { describeSchedule, type Fault, type Operation, type Schedule, scheduleFor } from "./schedule.js";
import { type CliResult, makeWorld, type World } from "./world.js";

export interface Outcome {
  readonly seed: number;
  readonly schedule: string;
  /** Faults that struck, by type (armed faults whose request never came are counted as `<type>:unstruck`). */
  readonly faults: Record<string, number>;
  readonly ops: Record<string, number>;
  readonly violations: string[];
  readonly notes: string[];
  readonly ms: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const ROUND_DEADLINE_MS = 90_000;

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

class Sampler {
  readonly twoLive: string[] = [];
  readonly everLive = new Map<string, string>();
  readonly everRecorded = new Set<string>();
  samples = 0;
  private timer: NodeJS.Timeout | null = null;
  constructor(
    private readonly w: World,
    private readonly log: (s: string) => void,
  ) {}
  start(): void {
    this.timer = setInterval(() => this.sample(), 100);
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
  sample(): LiveProcess[] {
    this.samples++;
    const live = liveAgentProcesses(this.w.prefix);
    for (const p of live) this.everLive.set(p.instance, p.name);
    for (const [name, ids] of instancesByName(live)) {
      if (ids.size > 1) {
        const v = `two-live: ${ids.size} live instances of ${name} at sample ${this.samples}: ${[...ids].sort().join(", ")}`;
        if (!this.twoLive.some((t) => t.startsWith(`two-live: ${ids.size} live instances of ${name}`))) {
          this.twoLive.push(v);
          this.log(v);
        }
      }
    }
    for (const id of recordedPlacements(this.w.home)?.keys() ?? []) this.everRecorded.add(id);
    return live;
  }
}

interface RunState {
  readonly w: World;
  readonly s: Schedule;
  readonly faults: Record<string, number>;
  readonly ops: Record<string, number>;
  readonly notes: string[];
  readonly intent: Map<number, "run" | "stopped">;
  /** Names whose instances someone asked to go (stop, replace, unload, place). */
  readonly asked: Set<string>;
  /** Instances the campaign itself killed. */
  readonly killed: Set<string>;
  readonly log: (s: string) => void;
}

function command(st: RunState, op: Operation): string[][] {
  const { w } = st;
  switch (op.op) {
    case "deploy":
      return [["deploy", w.specFile(op.agent), "--json"]];
    case "deploy-twice":
      return [
        ["deploy", w.specFile(op.agent), "--json"],
        ["deploy", w.specFile(op.agent), "--json"],
      ];
    case "place":
      return [["place", w.pkgDir, "--name", w.workloadName(op.workload), "--json"]];
    case "settle":
      return [["unsettled", "--settle", "--json"]];
    case "stop":
      return [["agent", "stop", w.agentName(op.agent), "--json"]];
    case "replace":
      return [["agent", "replace", w.agentName(op.agent), "--json"]];
    case "unload": {
      const name = w.agentName(op.agent);
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
  if (op.op === "stop" || op.op === "replace" || op.op === "unload") st.asked.add(w.agentName(op.agent));
  if (op.op === "place") st.asked.add(w.workloadName(op.workload));
}

/** Arms or strikes one fault; resolves when the fault is over (healed, released, restarted). */
async function strike(st: RunState, f: Fault, clis: Spawned[], opsDone: Promise<void>): Promise<void> {
  const { w } = st;
  const after = (ms: number) => Promise.race([sleep(ms), opsDone.then(() => sleep(Math.min(ms, 200)))]);
  switch (f.fault) {
    case "drop-answer": {
      const p = w.proxies[f.node];
      if (!p) return;
      const before = p.dropped;
      p.dropNextPlaceAnswer();
      await opsDone;
      bump(st.faults, p.dropped > before ? f.fault : `${f.fault}:unstruck`);
      return;
    }
    case "hold-request": {
      const held: HeldRequest | undefined = w.proxies[f.node]?.holdNextRequest(f.method);
      if (!held) return;
      const came = await Promise.race([held.arrived.then(() => true), opsDone.then(() => false)]);
      if (!came) {
        bump(st.faults, `${f.fault}:unstruck`);
        return;
      }
      bump(st.faults, `${f.fault}:${f.ending}`);
      await sleep(f.forMs);
      if (f.ending === "release") held.release();
      else held.reset();
      return;
    }
    case "delay-answer": {
      const p = w.proxies[f.node];
      if (!p) return;
      const before = p.delayed;
      p.delayNextAnswer(f.method);
      for (;;) {
        if (p.delayed > before) break;
        const done = await Promise.race([sleep(20).then(() => false), opsDone.then(() => true)]);
        if (done && p.delayed === before) {
          bump(st.faults, `${f.fault}:unstruck`);
          return;
        }
      }
      bump(st.faults, f.fault);
      await sleep(f.forMs);
      p.releaseDelayed();
      return;
    }
    case "partition": {
      await sleep(f.atMs);
      await w.proxies[f.node]?.cut();
      bump(st.faults, f.fault);
      await after(f.forMs);
      await w.proxies[f.node]?.heal();
      return;
    }
    case "reset":
      await sleep(f.atMs);
      w.proxies[f.node]?.resetConnections();
      bump(st.faults, f.fault);
      return;
    case "kill-daemon": {
      await sleep(f.atMs);
      const n = w.nodes[f.node];
      if (!n?.alive) return;
      await n.kill9();
      bump(st.faults, f.fault);
      await after(f.forMs);
      await restart(w, f.node);
      return;
    }
    case "kill-cli": {
      await sleep(f.atMs);
      const c = clis[f.which % Math.max(clis.length, 1)];
      if (!c || c.child.exitCode !== null || c.child.signalCode !== null) {
        bump(st.faults, `${f.fault}:unstruck`);
        return;
      }
      c.child.kill("SIGKILL");
      bump(st.faults, f.fault);
      return;
    }
    case "kill-agent":
    case "kill-leader": {
      await sleep(f.atMs);
      const live = liveAgentProcesses(w.prefix);
      const instances = [...new Set(live.map((p) => p.instance))].sort();
      const target = instances[f.which % Math.max(instances.length, 1)];
      const victims = live.filter((p) => p.instance === target && (f.fault === "kill-leader" ? p.pid === p.pgid : p.pid !== p.pgid));
      if (target === undefined || victims.length === 0) {
        bump(st.faults, `${f.fault}:unstruck`);
        return;
      }
      for (const v of victims) {
        try {
          process.kill(v.pid, "SIGKILL");
        } catch {
          // gone already
        }
      }
      st.killed.add(target);
      bump(st.faults, f.fault);
      return;
    }
  }
}

async function finish(clis: Spawned[], notes: string[]): Promise<void> {
  const deadline = sleep(ROUND_DEADLINE_MS).then(() => "late" as const);
  const all = Promise.all(clis.map((c) => c.exited())).then(() => "done" as const);
  if ((await Promise.race([all, deadline])) === "late") {
    for (const c of clis) if (c.child.exitCode === null) c.child.kill("SIGKILL");
    notes.push(`a CLI process ran past ${ROUND_DEADLINE_MS} ms and was killed`);
    await all;
  }
}

async function heal(w: World): Promise<void> {
  for (const p of w.proxies) {
    p.disarm();
    await p.heal();
  }
  for (const [i, n] of w.nodes.entries()) if (!n.alive) await restart(w, i);
}

/**
 * Restarts a killed daemon with its data dir on its old port; if another world took that port meanwhile (seeds run
 * side by side), on a fresh one, the proxy retargeted: the controller still reaches it at the proxy's address.
 */
async function restart(w: World, i: number): Promise<void> {
  const n = w.nodes[i];
  if (!n || n.alive) return;
  try {
    await n.start();
  } catch {
    await n.start("127.0.0.1:0");
    w.proxies[i]?.retarget(n.address);
  }
}

function judge(st: RunState, sampler: Sampler, verified: CliResult[]): string[] {
  const { w, s } = st;
  const violations = [...sampler.twoLive];
  const live = sampler.sample();
  const recorded = recordedPlacements(w.home) ?? new Map<string, string>();
  const by = instancesByName(live);
  for (const [id, name] of new Set([...live.map((p) => [p.instance, p.name] as const)])) {
    if (!recorded.has(id)) violations.push(`unrecorded-live: ${name} instance ${id} runs and the controller does not record it`);
  }
  const stillLive = new Set(live.map((p) => p.instance));
  for (const [id, name] of sampler.everLive) {
    if (stillLive.has(id) || !sampler.everRecorded.has(id) || st.asked.has(name) || st.killed.has(id)) continue;
    violations.push(`killed-unasked: ${name} instance ${id} was recorded and live, and is gone though nobody asked and the campaign did not kill it`);
  }
  for (let a = 0; a < s.agents; a++) {
    const name = w.agentName(a);
    const ids = [...(by.get(name) ?? [])];
    const intent = st.intent.get(a);
    if (intent === "run" && (ids.length !== 1 || recorded.get(ids[0] ?? "") !== name)) {
      violations.push(`not-converged: ${name} should run exactly once after heal; live instances [${ids.join(", ")}], recorded ${JSON.stringify([...recorded].filter(([, n]) => n === name))}`);
    }
    if (intent === "stopped" && ids.length > 0) violations.push(`not-converged: ${name} was stopped and still runs: [${ids.join(", ")}]`);
  }
  for (const v of verified) if (v.code !== 0) violations.push(`chain: berth audit verify failed: ${v.stdout.slice(0, 400)} ${v.stderr.slice(0, 400)}`);
  return violations;
}

export async function runSeed(seed: number, opts: { verbose?: boolean; log?: (s: string) => void } = {}): Promise<Outcome> {
  const started = Date.now();
  const s = scheduleFor(seed);
  const log = opts.verbose ? (opts.log ?? ((m: string) => process.stderr.write(`[seed ${seed} +${Date.now() - started} ms] ${m}\n`))) : () => undefined;
  const w = await makeWorld(seed, s.agents, s.nodes);
  log("world up");
  const st: RunState = { w, s, faults: {}, ops: {}, notes: [], intent: new Map(), asked: new Set(), killed: new Set(), log };
  const sampler = new Sampler(w, log);
  sampler.start();
  let violations: string[] = [];
  try {
    for (const [i, round] of s.rounds.entries()) {
      log(`round ${i + 1}`);
      for (const op of round.ops) noteIntent(st, op);
      let opsDoneResolve: () => void = () => undefined;
      const opsDone = new Promise<void>((r) => {
        opsDoneResolve = r;
      });
      const clis: Spawned[] = [];
      const strikes = round.faults.map((f) => strike(st, f, clis, opsDone));
      for (const op of round.ops) {
        for (const args of command(st, op)) {
          bump(st.ops, op.op);
          clis.push(w.spawnBerth(...args));
        }
      }
      await finish(clis, st.notes);
      opsDoneResolve();
      await Promise.all(strikes);
      for (const c of clis) log(`  exit ${c.child.exitCode ?? c.child.signalCode}: ${c.output().slice(0, 300).replace(/\s+/g, " ")} ${c.errors().slice(0, 300)}`);
      for (const p of w.proxies) p.disarm();
    }
    await heal(w);
    log("healed");
    const settle = async () => {
      const r = await w.berth("unsettled", "--settle", "--json");
      if (r.code !== 0) st.notes.push(`settle exited ${r.code}: ${r.stdout.slice(0, 200)} ${r.stderr.slice(0, 200)}`);
    };
    await settle();
    // The user converges: one deploy per agent meant to run, one stop per agent meant to be stopped.
    const converge = await Promise.all(
      [...st.intent].map(([a, intent]) => (intent === "run" ? w.berth("deploy", w.specFile(a), "--json") : w.berth("agent", "stop", w.agentName(a), "--json"))),
    );
    for (const [k, r] of converge.entries()) log(`converge ${k}: exit ${r.code} ${r.stdout.slice(0, 300).replace(/\s+/g, " ")} ${r.stderr.slice(0, 200)}`);
    // Give the agents meant to run a moment to show up (generous: the machine is loaded), judged below.
    const end = Date.now() + 20_000;
    while (Date.now() < end) {
      const by = instancesByName(sampler.sample());
      const settled = [...st.intent].every(([a, intent]) => (by.get(w.agentName(a))?.size ?? 0) === (intent === "run" ? 1 : 0));
      if (settled) break;
      await sleep(200);
    }
    sampler.stop();
    log("converged; verifying chains");
    const verified = await Promise.all([
      w.berth("audit", "verify", "--db", join(w.home, "controller.db"), "--json"),
      ...w.nodes.map((n) => w.berth("audit", "verify", "--db", join(n.dataDir, "node.db"), "--pubkey", n.publicKey, "--json")),
    ]);
    violations = judge(st, sampler, verified);
  } catch (e) {
    violations.push(`campaign error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
  } finally {
    sampler.stop();
    await w.close();
  }
  return { seed, schedule: describeSchedule(s), faults: st.faults, ops: st.ops, violations, notes: st.notes, ms: Date.now() - started };
}

/** Runs `seeds` with at most `parallel` worlds at once (each seed alone in its own world, so replay is unchanged). */
export async function runSeeds(seeds: readonly number[], parallel: number, each: (o: Outcome) => void, opts: { verbose?: boolean } = {}): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < seeds.length; i = next++) {
      const o = await runSeed(seeds[i] as number, opts);
      outcomes.push(o);
      each(o);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  return outcomes.sort((a, b) => a.seed - b.seed);
}

export function replayHint(seed: number): string {
  return `replay: bash scripts/campaign --seeds ${seed} --verbose`;
}
