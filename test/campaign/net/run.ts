/**
 * Runs network-world schedules (issue 37): per schedule, each round starts its CLI processes and strikes its faults
 * (kernel, process, database); then heal (every rule and qdisc removed, links up, clocks back, disks freed, every
 * paused process continued, every killed daemon, controller and the database started again), settle if a decision is
 * open, the user converges every agent of the world (deploy what is meant to run and does not run once, stop what is
 * meant stopped), and the judge (judge.ts, pure) looks at everything observed since the world began: /proc samples,
 * the campaign's own kills, the nodes' chains, the controller's chain. At the end of a world every chain is verified
 * with `berth audit verify`. Shell: the decisions are the judge's.
 */
import { statfsSync } from "node:fs";
import { join } from "node:path";
import type { Spawned } from "../../support/process.js";
import type { Outcome } from "../run.js";
import type { CliResult } from "../world.js";
import { WorldSetupError } from "../world.js";
import { attribute, census, type Explanation, judgeWithCounts, type LeaseCut } from "./judge.js";
import { conntrackFlush, healNet, linkSet, netem, netemClear, nftClear, nftFault, sh } from "./netns.js";
import {
  closeStoreSession,
  controllerHashes,
  NetSampler,
  nodeEndings,
  openDecisions,
  recordedPlacements,
  storeRows,
} from "./observe.js";
import { describeNetSchedule, type NetFault, type NetOperation, type NetSchedule, netScheduleFor } from "./schedule.js";
import { PostgresSlot } from "./postgres-slot.js";
import {
  LEASED_NODE,
  makeNetWorld,
  NET_LEASE_MS,
  type NetWorld,
  NODE_PORT,
  netWorldsClosing,
  startOf,
} from "./world.js";

const ROUND_DEADLINE_MS = 60_000;
const CONVERGE_WAIT_MS = 30_000;
const SETTLED_FOR_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
const bump = (c: Record<string, number>, k: string) => {
  c[k] = (c[k] ?? 0) + 1;
};

interface NetWorldState {
  readonly w: NetWorld;
  readonly sampler: NetSampler;
  readonly kills: Explanation[];
  readonly cuts: LeaseCut[];
  readonly daemonDown: LeaseCut[];
  watchdogStops: number;
  /** What the user means for every agent of the world: name → intent and spec file. */
  readonly intent: Map<string, { intent: "run" | "stopped"; spec: string }>;
  /**
   * Names whose last `agent stop` the user did not see succeed (the CLI failed or was killed: the server died under
   * it, the store restarted): berth may never have recorded that stop, so the user runs it again at converge, whether
   * or not a copy is live then (long run seed 3071: the stop died with the leader, the copy was lease-stopped when the
   * user looked, and the new leader rightly started it again, as nothing had stopped it).
   */
  readonly unconfirmedStops: Set<string>;
  readonly reported: Set<string>;
  readonly forgotten: Set<number>;
  readonly log: (s: string) => void;
}

interface St {
  readonly ws: NetWorldState;
  readonly seed: number;
  readonly faults: Record<string, number>;
  readonly ops: Record<string, number>;
  readonly notes: string[];
  readonly drained: Set<number>;
  /** What the CLIs and the converge answered: added to the notes when the judge finds a violation. */
  readonly trace: string[];
  readonly startedMs: number;
}

function signal(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

function alive(p: { exitCode: number | null; signalCode: NodeJS.Signals | null } | null | undefined): boolean {
  return !!p && p.exitCode === null && p.signalCode === null;
}

/** The controller that leads now (by the store's leader row), or the first live one. */
async function leaderIndex(w: NetWorld): Promise<number> {
  try {
    const [row] = await storeRows<{ pid: number | string; released_ms: unknown }>(
      w.databaseUrl,
      w.home,
      "SELECT pid, released_ms FROM berth_leader WHERE id = 1",
    );
    const at = w.controllers.findIndex((c) => row && row.released_ms === null && c.proc?.child.pid === Number(row.pid));
    if (at >= 0) return at;
  } catch {
    // the database is down or paused: the first live one
  }
  return Math.max(
    0,
    w.controllers.findIndex((c) => alive(c.proc?.child)),
  );
}

function recordKill(ws: NetWorldState, pid: number, why: string): void {
  const start = startOf(pid);
  if (start < 0) return;
  ws.kills.push({ kind: "campaign-kill", pid, start, why });
  signal(pid, "SIGKILL");
}

async function killDaemon(w: NetWorld, i: number): Promise<boolean> {
  const p = w.nodes[i]?.proc;
  if (!alive(p) || !p) return false;
  const gone = new Promise((r) => p.once("exit", r));
  if (p.pid !== undefined) w.expectedExits.add(p.pid);
  p.kill("SIGCONT");
  p.kill("SIGKILL");
  await gone;
  return true;
}

async function restartPostgres(w: NetWorld, st: St): Promise<void> {
  for (let attempt = 1; attempt <= 6; attempt++) {
    try {
      await w.pg?.restart();
      return;
    } catch (e) {
      // Backends of a killed postmaster may still hold its shared memory for a moment.
      if (attempt === 6) st.notes.push(`postgres did not restart: ${String(e).slice(0, 300)}`);
      await sleep(1_000 * attempt);
    }
  }
}

async function pgUp(w: NetWorld): Promise<boolean> {
  if (!w.databaseUrl) return true;
  try {
    await storeRows(w.databaseUrl, w.home, "SELECT 1");
    return true;
  } catch {
    return false;
  }
}

const NETEM = {
  delay: { delayMs: 400 },
  jitter: { delayMs: 150, jitterMs: 140 },
  loss: { lossPct: 35 },
  reorder: { delayMs: 60, reorderPct: 30 },
  duplicate: { duplicatePct: 40 },
  rate: { rateKbit: 48 },
} as const;

async function strike(st: St, f: NetFault, clis: Spawned[], opsDone: Promise<void>): Promise<void> {
  const { ws } = st;
  const { w } = ws;
  const node = "node" in f ? w.nodes[f.node] : undefined;
  const netNode = "node" in f ? w.net.nodes[f.node] : undefined;
  if ("node" in f && ws.forgotten.has(f.node)) {
    bump(st.faults, `${f.fault}:unstruck`);
    return;
  }
  if ("atMs" in f) await sleep(f.atMs);
  const cut = async (i: number, ms: number, make: () => Promise<void>, undo: () => Promise<void>) => {
    await make();
    const from = Date.now();
    await sleep(ms);
    await undo();
    if (i === LEASED_NODE) ws.cuts.push({ node: i, fromMs: from, toMs: Date.now() });
  };
  switch (f.fault) {
    case "nft-drop": {
      if (!netNode) return;
      bump(st.faults, `nft-drop:${f.way}`);
      const make = () => nftFault(netNode, f.way, NODE_PORT);
      // One way out (answers lost) still lets requests in: not a cut for the lease.
      if (f.way === "out") {
        await make();
        await sleep(f.forMs);
        await nftClear(netNode);
      } else await cut(f.node, f.forMs, make, () => nftClear(netNode));
      return;
    }
    case "nft-reset":
      if (!netNode) return;
      bump(st.faults, f.fault);
      await nftFault(netNode, "reset", NODE_PORT);
      await sleep(f.forMs);
      await nftClear(netNode);
      return;
    case "netem":
      if (!netNode) return;
      bump(st.faults, `netem:${f.shape}`);
      await netem(netNode, NETEM[f.shape]);
      await sleep(f.forMs);
      await netemClear(netNode);
      return;
    case "conntrack":
      if (!netNode) return;
      bump(st.faults, f.rst ? "conntrack:flush+rst" : "conntrack:flush");
      await conntrackFlush(netNode, f.rst);
      return;
    case "link-down":
      if (!netNode) return;
      bump(st.faults, f.fault);
      await cut(
        f.node,
        f.forMs,
        () => linkSet(netNode, false),
        () => linkSet(netNode, true),
      );
      return;
    case "pause-daemon": {
      const pid = node?.proc?.pid;
      if (!alive(node?.proc)) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, f.fault);
      const from = Date.now();
      signal(pid, "SIGSTOP");
      await sleep(f.forMs);
      signal(pid, "SIGCONT");
      ws.daemonDown.push({ node: f.node, fromMs: from, toMs: Date.now() });
      return;
    }
    case "kill-daemon": {
      const from = Date.now();
      if (!(await killDaemon(w, f.node))) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, f.fault);
      await sleep(f.forMs);
      await w
        .startNode(f.node)
        .catch((e: unknown) => st.notes.push(`restart of node ${f.node}: ${String(e).slice(0, 200)}`));
      ws.daemonDown.push({ node: f.node, fromMs: from, toMs: Date.now() });
      return;
    }
    case "pause-controller":
    case "kill-controller": {
      const lead = await leaderIndex(w);
      const i = f.leader ? lead : w.controllers.findIndex((c, k) => k !== lead && alive(c.proc?.child));
      const c = w.controllers[i];
      if (!c || !alive(c.proc?.child)) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, `${f.fault}:${i === lead ? "leader" : "follower"}`);
      if (f.fault === "pause-controller") {
        signal(c.proc?.child.pid, "SIGSTOP");
        await sleep(f.forMs);
        signal(c.proc?.child.pid, "SIGCONT");
      } else {
        if (c.proc?.child.pid !== undefined) w.expectedExits.add(c.proc.child.pid);
        c.proc?.child.kill("SIGKILL");
        await c.proc?.exited();
        await sleep(f.forMs);
        await w
          .startController(i)
          .catch((e: unknown) => st.notes.push(`restart of controller ${i}: ${String(e).slice(0, 200)}`));
      }
      return;
    }
    case "enospc": {
      if (!node) return;
      const s = statfsSync(node.dataDir);
      const free = Number(s.bavail) * Number(s.bsize);
      const fill = join(node.dataDir, "campaign-fill");
      try {
        await sh("fallocate", ["-l", String(free), fill]);
      } catch {
        await sh("sh", ["-c", `dd if=/dev/zero of='${fill}' bs=1M 2>/dev/null; true`]);
      }
      bump(st.faults, f.fault);
      await sleep(f.forMs);
      await sh("rm", ["-f", fill]);
      return;
    }
    case "clock-skew": {
      const n = w.nodes.find((x) => x.clockFile !== null);
      if (!n?.clockFile) return bump(st.faults, `${f.fault}:unstruck`);
      const { writeFileSync } = await import("node:fs");
      bump(st.faults, `clock-skew:${f.offsetS > 0 ? "ahead" : "behind"}`);
      writeFileSync(n.clockFile, `${f.offsetS > 0 ? "+" : ""}${f.offsetS}s\n`);
      await sleep(f.forMs);
      writeFileSync(n.clockFile, "+0\n");
      return;
    }
    case "pg-kill":
      if (!w.pg) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, f.fault);
      signal(w.pg.pid, "SIGKILL");
      await sleep(f.forMs);
      await restartPostgres(w, st);
      return;
    case "pg-restart":
      if (!w.pg) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, f.fault);
      await restartPostgres(w, st);
      return;
    case "pg-pause": {
      if (!w.pg) return bump(st.faults, `${f.fault}:unstruck`);
      const pids = w.pgPids();
      bump(st.faults, f.fault);
      for (const p of pids) signal(p, "SIGSTOP");
      await sleep(f.forMs);
      for (const p of pids) signal(p, "SIGCONT");
      return;
    }
    case "kill-agent": {
      const s = ws.sampler.sample();
      const mine = attribute(s.procs).filter(
        (a) => a.instance !== null && a.proc.node !== null && !w.daemons.some((d) => d.pid === a.proc.pid),
      );
      const instances = [...new Set(mine.map((a) => a.instance as string))].sort();
      const target = instances[f.which % Math.max(1, instances.length)];
      const victims = mine.filter(
        (a) => a.instance === target && (f.leader ? a.proc.pid === a.proc.pgid : a.proc.pid !== a.proc.pgid),
      );
      const v = victims[f.which % Math.max(1, victims.length)];
      if (!v) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, `kill-agent:${f.leader ? "leader" : v.proc.env ? "worker" : "env-less-worker"}`);
      recordKill(ws, v.proc.pid, f.fault);
      return;
    }
    case "kill-cli": {
      const c = clis[f.which % Math.max(1, clis.length)];
      if (!c || !alive(c.child)) return bump(st.faults, `${f.fault}:unstruck`);
      c.child.kill("SIGKILL");
      bump(st.faults, f.fault);
      return;
    }
    case "drop-answer": {
      const before = w.proxy.dropped;
      w.proxy.dropNextPlaceAnswer();
      await opsDone;
      bump(st.faults, w.proxy.dropped > before ? f.fault : `${f.fault}:unstruck`);
      return;
    }
    case "cut-lease": {
      const nn = w.net.nodes[LEASED_NODE];
      if (!nn || ws.forgotten.has(LEASED_NODE)) return bump(st.faults, `${f.fault}:unstruck`);
      bump(st.faults, f.fault);
      await cut(
        LEASED_NODE,
        NET_LEASE_MS + f.overMs,
        () => nftFault(nn, "both", NODE_PORT),
        () => nftClear(nn),
      );
      return;
    }
  }
}

function commands(st: St, s: NetSchedule, op: NetOperation): string[][] {
  const { w } = st.ws;
  const spec = (a: number) => w.specFile(st.seed, a);
  const name = (a: number) => w.agentName(st.seed, a);
  switch (op.op) {
    case "deploy":
      return [["deploy", spec(op.agent), "--json"]];
    case "deploy-twice":
      return [
        ["deploy", spec(op.agent), "--json"],
        ["deploy", spec(op.agent), "--json"],
      ];
    case "stop":
      return [["agent", "stop", name(op.agent), "--json"]];
    case "replace":
      return [["agent", "replace", name(op.agent), "--json"]];
    case "settle":
      return [["unsettled", "--settle", "--json"]];
    case "node-drain":
      return [["node", "drain", w.nodes[op.node]?.nodeId ?? "", "--reason", `campaign seed ${s.seed}`, "--json"]];
    case "node-forget":
      return [
        ["node", "forget", w.nodes[op.node]?.nodeId ?? "", "--reason", `campaign seed ${s.seed}: power lost`, "--json"],
      ];
  }
}

function noteIntent(st: St, op: NetOperation): void {
  const { w } = st.ws;
  if (!("agent" in op)) return;
  const name = w.agentName(st.seed, op.agent);
  const spec = w.specFile(st.seed, op.agent);
  if (op.op === "stop") st.ws.intent.set(name, { intent: "stopped", spec });
  else {
    st.ws.intent.set(name, { intent: "run", spec });
    st.ws.unconfirmedStops.delete(name);
  }
}

/** A node's power is lost: its daemon and every process in its namespace killed -9 (each kill recorded), for good. */
async function powerLoss(st: St, i: number): Promise<number> {
  const { ws } = st;
  const { w } = ws;
  // Never the last node that can take agents.
  const usable = (k: number) => !ws.forgotten.has(k) && !st.drained.has(k);
  const target = usable(i) && w.nodes.some((_, k) => k !== i && usable(k)) ? i : -1;
  if (target < 0) {
    st.notes.push(`node-forget of node ${i} skipped: it is the last usable node`);
    return -1;
  }
  const n = w.nodes[target];
  if (!n) return -1;
  await killDaemon(w, target);
  const pids = (await sh("ip", ["netns", "pids", n.ns]).catch(() => "")).split("\n").filter(Boolean).map(Number);
  for (const pid of pids) recordKill(ws, pid, `power lost on node ${target}`);
  ws.forgotten.add(target);
  bump(st.faults, "power-loss");
  return target;
}

async function heal(st: St): Promise<void> {
  const { w } = st.ws;
  await Promise.all(w.net.nodes.map((nn, i) => (st.ws.forgotten.has(i) ? undefined : healNet(nn))));
  for (const n of w.nodes) {
    if (n.clockFile) (await import("node:fs")).writeFileSync(n.clockFile, "+0\n");
    await sh("rm", ["-f", join(n.dataDir, "campaign-fill")]).catch(() => undefined);
    signal(n.proc?.pid, "SIGCONT");
  }
  for (const c of w.controllers) signal(c.proc?.child.pid, "SIGCONT");
  for (const p of w.pgPids()) signal(p, "SIGCONT");
  w.proxy.disarm();
  if (w.databaseUrl && !(await pgUp(w))) {
    const until = Date.now() + 5_000;
    while (Date.now() < until && !(await pgUp(w))) await sleep(250);
    if (!(await pgUp(w))) await restartPostgres(w, st);
  }
  for (const n of w.nodes)
    if (!st.ws.forgotten.has(n.index) && !alive(n.proc))
      st.ws.daemonDown.push({ node: n.index, fromMs: st.startedMs, toMs: Date.now() + 5_000 });
  for (const n of w.nodes)
    if (!st.ws.forgotten.has(n.index) && !alive(n.proc))
      await w
        .startNode(n.index)
        .catch((e: unknown) => st.notes.push(`heal: node ${n.index}: ${String(e).slice(0, 200)}`));
  for (const c of w.controllers)
    if (!alive(c.proc?.child))
      await w
        .startController(c.index)
        .catch((e: unknown) => st.notes.push(`heal: controller ${c.index}: ${String(e).slice(0, 200)}`));
}

/** Instance → name of every agent instance the world has seen (from the environment of its processes, and the store). */
function names(ws: NetWorldState, recorded: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map(recorded);
  for (const s of ws.sampler.samples.slice(-40))
    for (const p of s.procs) if (p.env) out.set(p.env.instance, p.env.name);
  return out;
}

function liveNow(ws: NetWorldState, byId: ReadonlyMap<string, string>): Map<string, Set<string>> {
  const s = ws.sampler.sample();
  const daemonPids = new Set(ws.w.daemons.map((d) => d.pid));
  const by = new Map<string, Set<string>>();
  for (const { proc, instance } of attribute(s.procs)) {
    if (instance === null || daemonPids.has(proc.pid)) continue;
    const name = byId.get(instance) ?? proc.env?.name;
    if (name === undefined || !name.startsWith(ws.w.prefix)) continue;
    by.set(name, (by.get(name) ?? new Set()).add(instance));
  }
  return by;
}

async function converge(st: St): Promise<void> {
  const { ws } = st;
  const { w } = ws;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const recorded = await recordedPlacements(w.databaseUrl, w.home).catch(() => new Map<string, string>());
    const live = liveNow(ws, names(ws, recorded));
    const pending = [...ws.intent].filter(([name, { intent }]) => {
      const ids = [...(live.get(name) ?? [])];
      return intent === "run"
        ? !(ids.length === 1 && recorded.get(ids[0] ?? "") === name)
        : ids.length > 0 || ws.unconfirmedStops.has(name);
    });
    if (pending.length === 0) break;
    const results: CliResult[] = await Promise.all(
      pending.map(([name, { intent, spec }]) => {
        bump(st.ops, `converge:${intent === "run" ? "deploy" : "stop"}`);
        return intent === "run" ? w.berth("deploy", spec, "--json") : w.berth("agent", "stop", name, "--json");
      }),
    );
    for (const [k, r] of results.entries()) {
      if (r.code === 0 && pending[k]?.[1].intent === "stopped") ws.unconfirmedStops.delete(pending[k]?.[0] ?? "");
      st.trace.push(
        `converge ${attempt} ${pending[k]?.[0]}: exit ${r.code} ${r.stdout.slice(0, 300).replace(/\s+/g, " ")}`,
      );
      if (r.code !== 0)
        st.notes.push(
          `converge ${attempt} ${pending[k]?.[0]}: exit ${r.code} ${r.stdout.slice(0, 200).replace(/\s+/g, " ")} ${r.stderr.slice(0, 160).replace(/\s+/g, " ")}`,
        );
      for (const m of r.stdout.matchAll(/berth instance status ([A-Za-z0-9-]+)/g)) {
        bump(st.ops, "converge:status");
        await w.berth("instance", "status", m[1] ?? "", "--json");
      }
    }
    if (results.every((r) => r.code === 0)) break;
    await sleep(1_000);
  }
  const end = Date.now() + CONVERGE_WAIT_MS;
  let since: number | null = null;
  while (Date.now() < end) {
    const recorded = await recordedPlacements(w.databaseUrl, w.home).catch(() => new Map<string, string>());
    const live = liveNow(ws, names(ws, recorded));
    const asMeant = [...ws.intent].every(([name, { intent }]) => {
      const ids = [...(live.get(name) ?? [])];
      return intent === "run" ? ids.length === 1 && recorded.get(ids[0] ?? "") === name : ids.length === 0;
    });
    since = asMeant ? (since ?? Date.now()) : null;
    if (since !== null && Date.now() - since >= SETTLED_FOR_MS) return;
    await sleep(250);
  }
  st.notes.push(`the agents were not as meant ${CONVERGE_WAIT_MS} ms after converge`);
}

async function judgeWorld(st: St): Promise<string[]> {
  const { ws } = st;
  const { w } = ws;
  const recorded = await recordedPlacements(w.databaseUrl, w.home);
  const hashes = await controllerHashes(w.databaseUrl, w.home);
  const endings = w.nodes.flatMap((n) => nodeEndings(n.index, n.dataDir));
  ws.sampler.sample();
  const { violations: verdict, watchdogStops } = judgeWithCounts({
    prefix: w.prefix,
    samples: ws.sampler.samples,
    daemons: w.daemons,
    campaignPids: [process.pid],
    explanations: [...ws.kills, ...endings],
    controllerHashes: hashes,
    leased: new Map([[LEASED_NODE, NET_LEASE_MS]]),
    cuts: ws.cuts,
    daemonDown: ws.daemonDown,
    crashes: w.crashes,
    intent: new Map([...ws.intent].map(([n, { intent }]) => [n, intent])),
    recorded,
    heldOnDeadNode: new Set(),
  });
  if (watchdogStops > ws.watchdogStops) {
    bump(st.faults, "lease-stop:watchdog:observed");
    st.notes.push(
      `${watchdogStops - ws.watchdogStops} copy(ies) on the leased node ended while its daemon was down: its lease watchdog's stop (not chained by any daemon)`,
    );
    ws.watchdogStops = watchdogStops;
  }
  const endingsOf = (kind: string) => endings.filter((e) => e.kind === "node-event" && e.event.startsWith(kind)).length;
  st.notes.push(
    `node chains so far: ${endingsOf("workload.lifecycle/lease")} lease stop(s), ${endingsOf("workload.stop")} stop(s), ${endingsOf("workload.unload")} unload(s)`,
  );
  const c = census({ samples: ws.sampler.samples, daemons: w.daemons, prefix: w.prefix });
  st.notes.push(
    `judged so far in this world: ${c.samples} samples, ${c.instances} instances, ${c.pidsJudged} processes (${c.envless} without berth's environment, found by group or ancestry), ${ws.kills.length} campaign kills, ${endings.length} node chain endings`,
  );
  // The judge sees the world's whole history: a violation is reported once, by the schedule that first saw it.
  const fresh = verdict.filter((v) => !ws.reported.has(v));
  for (const v of fresh) ws.reported.add(v);
  return fresh;
}

async function runNetSchedule(ws: NetWorldState, seed: number, world: readonly number[]): Promise<Outcome> {
  const started = Date.now();
  const s = netScheduleFor(seed);
  const { w, log } = ws;
  w.writeAgents(seed, s.agents);
  const st: St = { ws, seed, faults: {}, ops: {}, notes: [], drained: new Set(), trace: [], startedMs: started };
  let violations: string[] = [];
  let forgot = false;
  const phases: Record<string, number> = {};
  let lapFrom = Date.now();
  const lap = (phase: string) => {
    const now = Date.now();
    phases[phase] = (phases[phase] ?? 0) + now - lapFrom;
    lapFrom = now;
  };
  try {
    for (const [r, round] of s.rounds.entries()) {
      log(`seed ${seed} round ${r + 1}`);
      let release: () => void = () => undefined;
      const opsDone = new Promise<void>((res) => {
        release = res;
      });
      const clis: Spawned[] = [];
      const strikes = round.faults.map((f) =>
        strike(st, f, clis, opsDone).catch((e: unknown) =>
          st.notes.push(`fault ${f.fault}: ${String(e).slice(0, 300)}`),
        ),
      );
      for (const op of round.ops) {
        noteIntent(st, op);
        if (op.op === "node-forget") {
          const i = await powerLoss(st, op.node);
          if (i < 0) continue;
          forgot = true;
          bump(st.ops, op.op);
          clis.push(w.spawnBerth(...(commands(st, s, { op: "node-forget", node: i })[0] as string[])));
          continue;
        }
        if (op.op === "node-drain") {
          if (ws.forgotten.has(op.node)) continue;
          st.drained.add(op.node);
        }
        for (const args of commands(st, s, op)) {
          bump(st.ops, op.op);
          clis.push(w.spawnBerth(...args));
        }
      }
      const deadline = sleep(ROUND_DEADLINE_MS).then(() => "late" as const);
      if (
        (await Promise.race([Promise.all(clis.map((c) => c.exited())).then(() => "done" as const), deadline])) ===
        "late"
      ) {
        for (const c of clis) if (alive(c.child)) c.child.kill("SIGKILL");
        bump(st.faults, "kill-cli:deadline");
        st.notes.push(`a CLI ran past ${ROUND_DEADLINE_MS} ms and was killed`);
      }
      release();
      await Promise.all(strikes);
      for (const c of clis) {
        const [verb, sub, stopped] = c.child.spawnargs.slice(2, 5);
        if (
          verb === "agent" &&
          sub === "stop" &&
          stopped !== undefined &&
          ws.intent.get(stopped)?.intent === "stopped"
        ) {
          if (c.child.exitCode === 0) ws.unconfirmedStops.delete(stopped);
          else ws.unconfirmedStops.add(stopped);
        }
        const line = `round ${r + 1} ${c.child.spawnargs.slice(2, 5).join(" ")}: exit ${c.child.exitCode ?? c.child.signalCode}: ${c.output().slice(0, 300).replace(/\s+/g, " ")} ${c.errors().slice(0, 200).replace(/\s+/g, " ")}`;
        st.trace.push(line);
        log(line);
      }
    }
    lap("rounds");
    await heal(st);
    lap("heal");
    if ((await openDecisions(w.databaseUrl, w.home).catch(() => 1)) > 0) {
      bump(st.ops, "settle:heal");
      const r = await w.berth("unsettled", "--settle", "--json");
      if (r.code !== 0) st.notes.push(`settle exited ${r.code}: ${r.stdout.slice(0, 200)} ${r.stderr.slice(0, 200)}`);
    }
    lap("settle");
    await converge(st);
    lap("converge");
    violations = await judgeWorld(st);
    lap("judge");
    if (violations.length > 0) {
      st.notes.push(...st.trace);
      for (const n of w.nodes)
        if (n.stderrTail.trim() !== "")
          st.notes.push(`node ${n.index} stderr (end): ${n.stderrTail.slice(-2500).replace(/\s+/g, " ")}`);
      const names = [...new Set(violations.flatMap((v) => v.match(new RegExp(`${w.prefix}s\\d+a\\d+`, "g")) ?? []))];
      for (const name of names) {
        const rows = await storeRows<Record<string, unknown>>(
          w.databaseUrl,
          w.home,
          `SELECT id, state, node_id, created_ms FROM mesh_decisions WHERE name = '${name}'`,
        ).catch((e: unknown) => [{ error: String(e) }]);
        st.notes.push(`decisions of ${name}: ${JSON.stringify(rows).slice(0, 1200)}`);
        // What the controller chained about the name (decisions, attempts, verbs, moves, reconcile), for the diagnosis.
        const events = await storeRows<{ seq: number; ts: number; kind: string; payload: string }>(
          w.databaseUrl,
          w.home,
          `SELECT seq, ts, kind, CAST(payload AS TEXT) AS payload FROM audit_event WHERE CAST(payload AS TEXT) LIKE '%${name}%' ORDER BY ts, seq LIMIT 60`,
        ).catch((e: unknown) => [{ seq: -1, ts: 0, kind: "error", payload: String(e) }]);
        for (const e of events)
          st.notes.push(
            `chain ${name} #${e.seq} ${new Date(Number(e.ts)).toISOString().slice(11, 23)} ${e.kind}: ${String(e.payload).slice(0, 400)}`,
          );
      }
      for (const c of w.controllers) {
        const tail = c.proc?.errors() ?? "";
        if (tail.trim() !== "")
          st.notes.push(`serve ${c.index} stderr (end): ${tail.slice(-3000).replace(/\s+/g, " ")}`);
      }
    }
  } catch (e) {
    violations.push(`campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  } finally {
    for (const i of st.drained) {
      if (ws.forgotten.has(i)) continue;
      const r = await w.berth(
        "node",
        "uncordon",
        w.nodes[i]?.nodeId ?? "",
        "--reason",
        `campaign seed ${seed}: judged`,
        "--json",
      );
      if (r.code !== 0) st.notes.push(`uncordon of node ${i} exited ${r.code}: ${r.stdout.slice(0, 200)}`);
    }
  }
  lap("uncordon");
  return {
    seed,
    schedule: describeNetSchedule(s),
    faults: st.faults,
    ops: st.ops,
    violations,
    notes: st.notes,
    ms: Date.now() - started,
    world,
    phases,
    ...(forgot ? { closedWorld: true } : {}),
  };
}

/** `berth audit verify` of the controller's chain (on its store) and of every node's chain; failures go to the last outcome. */
async function verifyChains(w: NetWorld, outcomes: Outcome[]): Promise<void> {
  const results = await Promise.all([
    w.berth(
      "audit",
      "verify",
      "--key-file",
      join(w.home, "keys", "controller.key"),
      "--json",
      ...(w.databaseUrl ? [] : ["--db", join(w.home, "controller.db")]),
    ),
    ...w.nodes.map((n) =>
      w.berth("audit", "verify", "--db", join(n.dataDir, "node.db"), "--pubkey", n.publicKey, "--json"),
    ),
  ]);
  for (const [k, r] of results.entries()) {
    if (r.code === 0) continue;
    outcomes
      .at(-1)
      ?.violations.push(
        `chain: berth audit verify of ${k === 0 ? "the controller store" : `node ${k - 1}'s chain`} failed: ${r.stdout.slice(0, 400)} ${r.stderr.slice(0, 300)}`,
      );
  }
}

export interface NetOptions {
  readonly controllers?: number;
  readonly engine?: "postgres" | "sqlite";
  readonly verbose?: boolean;
  /** The slot's PostgreSQL server, reused world after world (a database each); absent: the world starts its own. */
  readonly postgres?: PostgresSlot;
}

/** One world, a chunk of seeds in order, until one finds a violation or forgets a node; then its chains are verified. */
export async function runNetWorld(
  seeds: readonly number[],
  opts: NetOptions = {},
): Promise<{ outcomes: Outcome[]; rest: number[] }> {
  const t0 = Date.now();
  const log = opts.verbose
    ? (m: string) => process.stderr.write(`[net ${seeds[0]}… +${Date.now() - t0} ms] ${m}\n`)
    : () => undefined;
  const controllers = opts.controllers ?? 2 + ((seeds[0] ?? 0) % 2);
  const w = await makeNetWorld({
    controllers,
    engine: opts.engine ?? "postgres",
    ...(opts.postgres ? { postgres: opts.postgres } : {}),
  });
  const sampler = new NetSampler(w.prefix, new Map(w.nodes.map((n) => [n.nsInode, n.index])));
  const ws: NetWorldState = {
    w,
    sampler,
    kills: [],
    cuts: [],
    daemonDown: [],
    watchdogStops: 0,
    intent: new Map(),
    unconfirmedStops: new Set(),
    reported: new Set(),
    forgotten: new Set(),
    log,
  };
  sampler.start();
  log(`world ${w.tag} up: ${controllers} controller(s) on ${w.engine}`);
  const outcomes: Outcome[] = [];
  let ran = 0;
  try {
    for (const seed of seeds) {
      const o = await runNetSchedule(ws, seed, seeds.slice(0, ran + 1));
      ran++;
      o.notes.unshift(`world ${w.tag}: ${controllers} controller(s) on ${w.engine}`);
      outcomes.push(o);
      if (o.violations.length > 0 || o.closedWorld === true) break;
    }
    sampler.stop();
    const verifyFrom = Date.now();
    await verifyChains(w, outcomes);
    const last = outcomes.at(-1);
    if (last?.phases) last.phases.verify = Date.now() - verifyFrom;
  } finally {
    sampler.stop();
    const closeFrom = Date.now();
    closeStoreSession(w.databaseUrl);
    await w.close();
    const last = outcomes.at(-1);
    if (last?.phases) last.phases.teardown = Date.now() - closeFrom;
  }
  const first = outcomes[0];
  if (first?.phases) Object.assign(first.phases, w.setupPhases);
  return { outcomes, rest: seeds.slice(ran) };
}

export async function runNetSeeds(
  seeds: readonly number[],
  parallel: number,
  each: (o: Outcome) => void,
  opts: NetOptions & { worldSize?: number } = {},
): Promise<Outcome[]> {
  const size = Math.max(1, opts.worldSize ?? 6);
  const queue: number[][] = [];
  for (let i = 0; i < seeds.length; i += size) queue.push(seeds.slice(i, i + size));
  const outcomes: Outcome[] = [];
  const failures = new Map<number, number>();
  const worker = async (postgres: PostgresSlot) => {
    for (let chunk = queue.shift(); chunk && !netWorldsClosing(); chunk = queue.shift()) {
      let result: { outcomes: Outcome[]; rest: number[] };
      try {
        result = await runNetWorld(chunk, { ...opts, postgres });
      } catch (e) {
        if (netWorldsClosing()) return;
        const first = chunk[0] as number;
        if (e instanceof WorldSetupError && (failures.get(first) ?? 0) < 3) {
          failures.set(first, (failures.get(first) ?? 0) + 1);
          process.stderr.write(
            `net world for seeds ${first}… could not be set up (${e.message.slice(0, 300)}); queued again\n`,
          );
          queue.push(chunk);
          continue;
        }
        result = {
          outcomes: [
            {
              seed: first,
              schedule: describeNetSchedule(netScheduleFor(first)),
              faults: {},
              ops: {},
              violations: [`campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`],
              notes: [],
              ms: 0,
              world: [first],
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
  // One PostgreSQL server per slot, for the slot's worlds one after another (postgres-slot.ts).
  const slots = Array.from({ length: Math.max(1, parallel) }, () => new PostgresSlot());
  try {
    await Promise.all(slots.map(worker));
  } finally {
    await Promise.all(slots.map((s) => s.stop()));
  }
  return outcomes.sort((a, b) => a.seed - b.seed);
}
