/**
 * A campaign schedule, chosen from a seed (pure: no I/O, no clock). A schedule is a few rounds; each round runs one
 * or two operations as a user would (berth CLI processes, concurrently) while faults are armed on the proxies in
 * front of the node daemons or struck at an offset into the round. Operations of one round touch distinct agents
 * (except the concurrent deploys of one name, which is the point), so the intent of every agent after the schedule
 * ("deployed" or "stopped") is well defined.
 */
import { mulberry32, type Rng } from "./prng.js";

export type Operation =
  | { readonly op: "deploy"; readonly agent: number }
  | { readonly op: "deploy-twice"; readonly agent: number }
  | { readonly op: "place"; readonly workload: number }
  | { readonly op: "settle" }
  | { readonly op: "stop"; readonly agent: number }
  | { readonly op: "replace"; readonly agent: number }
  | { readonly op: "unload"; readonly agent: number }
  /**
   * Issue 16's `berth node drain NODE --reason`: every agent moved off a live node, one at a time (its stops are
   * asked for); the node is uncordoned after the judge.
   */
  | { readonly op: "node-drain"; readonly node: number }
  /**
   * Issue 16's `berth node forget NODE --reason` after the node lost power: its daemon and every process of its
   * instances are killed -9 first, then the operator forgets it; the user's converge deploys its agents elsewhere.
   * Always a schedule's last round, alone: the node is gone for good, so its world closes after the schedule.
   */
  | { readonly op: "node-forget"; readonly node: number };

/** Methods of the control protocol a fault may single out. */
export const HELD_METHODS = ["place", "unload", "stop", "start", "status"] as const;
export const DELAYED_METHODS = ["place", "describe", "status", "unload", "stop"] as const;

export type Fault =
  /** The node carries the place out; its answer is dropped and both sockets destroyed. */
  | { readonly fault: "drop-answer"; readonly node: number }
  /** The next request for `method` is held before the node sees it, then delivered late or the link reset. */
  | {
      readonly fault: "hold-request";
      readonly node: number;
      readonly method: string;
      readonly forMs: number;
      readonly ending: "release" | "reset";
    }
  /** The node answers at once; the controller hears it `forMs` later (past the 5 s describe timeout at the top). */
  | { readonly fault: "delay-answer"; readonly node: number; readonly method: string; readonly forMs: number }
  /** The proxy stops listening and destroys its sockets at `atMs`, and listens again `forMs` later. */
  | { readonly fault: "partition"; readonly node: number; readonly atMs: number; readonly forMs: number }
  /** Open connections are destroyed at `atMs` (a reset); new ones are accepted at once. */
  | { readonly fault: "reset"; readonly node: number; readonly atMs: number }
  /** kill -9 of a node daemon at `atMs`, restarted with its data dir `forMs` later. */
  | { readonly fault: "kill-daemon"; readonly node: number; readonly atMs: number; readonly forMs: number }
  /** kill -9 of one of the round's CLI processes (the `which`-th, modulo their number) at `atMs`. */
  | { readonly fault: "kill-cli"; readonly which: number; readonly atMs: number }
  /** kill -9 of a live agent's worker process (not its group leader) at `atMs`; `which` picks among live ones. */
  | { readonly fault: "kill-agent"; readonly which: number; readonly atMs: number }
  /** kill -9 of a live instance's group leader at `atMs` (its worker child lives on in the group). */
  | { readonly fault: "kill-leader"; readonly which: number; readonly atMs: number }
  /**
   * Issue 16's held lease renewal: every request to the leased node is held from the round's start for its lease
   * plus `overMs`, then delivered (late): none may renew the lease or run, and the node's copies stop on time.
   */
  | { readonly fault: "hold-lease"; readonly overMs: number }
  /** Issue 16's dead node: kill -9 of a daemon at `atMs`, not restarted until the schedule has been judged. */
  | { readonly fault: "dead-node"; readonly node: number; readonly atMs: number };

export interface Round {
  readonly ops: readonly Operation[];
  readonly faults: readonly Fault[];
}

export interface Schedule {
  readonly seed: number;
  readonly nodes: number;
  readonly agents: number;
  readonly workloads: number;
  readonly rounds: readonly Round[];
}

export const NODES = 3;

function operation(rng: Rng, agents: number, workloads: number, deployed: Set<number>): Operation {
  const agent = rng.int(0, agents - 1);
  const kinds = ["deploy", "deploy", "deploy-twice", "place", "settle", "stop", "replace", "unload"] as const;
  const kind = deployed.size === 0 ? rng.pick(["deploy", "deploy-twice"] as const) : rng.pick(kinds);
  switch (kind) {
    case "deploy":
    case "deploy-twice":
      deployed.add(agent);
      return { op: kind, agent };
    case "place":
      return { op: "place", workload: rng.int(0, workloads - 1) };
    case "settle":
      return { op: "settle" };
    default: {
      const target = rng.pick([...deployed].sort((a, b) => a - b));
      return { op: kind, agent: target };
    }
  }
}

export const FAULT_KINDS = [
  "drop-answer",
  "hold-request",
  "delay-answer",
  "partition",
  "reset",
  "kill-daemon",
  "kill-cli",
  "kill-agent",
  "kill-leader",
  "hold-lease",
  "dead-node",
] as const;

function fault(rng: Rng): Fault {
  const node = rng.int(0, NODES - 1);
  const atMs = rng.int(0, 2_500);
  switch (rng.pick(FAULT_KINDS)) {
    case "drop-answer":
      return { fault: "drop-answer", node };
    case "hold-request":
      return {
        fault: "hold-request",
        node,
        method: rng.pick(HELD_METHODS),
        forMs: rng.int(200, 4_000),
        ending: rng.chance(0.5) ? "release" : "reset",
      };
    case "delay-answer":
      return { fault: "delay-answer", node, method: rng.pick(DELAYED_METHODS), forMs: rng.int(200, 7_000) };
    case "partition":
      return { fault: "partition", node, atMs, forMs: rng.int(300, 4_000) };
    case "reset":
      return { fault: "reset", node, atMs };
    case "kill-daemon":
      return { fault: "kill-daemon", node, atMs, forMs: rng.int(200, 3_000) };
    case "kill-cli":
      return { fault: "kill-cli", which: rng.int(0, 3), atMs: rng.int(50, 3_000) };
    case "kill-agent":
      return { fault: "kill-agent", which: rng.int(0, 7), atMs };
    case "kill-leader":
      return { fault: "kill-leader", which: rng.int(0, 7), atMs };
    case "hold-lease":
      return { fault: "hold-lease", overMs: rng.int(300, 3_000) };
    case "dead-node":
      return { fault: "dead-node", node, atMs };
  }
}

function agentOf(op: Operation): number | null {
  return "agent" in op ? op.agent : null;
}

/** The second stream's constant: the node operations are drawn apart so the first stream's schedules stay as they were. */
const NODE_OPS_STREAM = 0x9e3779b9;
export const DRAIN_CHANCE = 0.2;
export const FORGET_CHANCE = 0.12;

/**
 * Issue 16's node operations, drawn from a second stream of the seed (so every schedule of the first stream, as an
 * earlier build drew it, is unchanged; a seed only gains them): a drain added to one round as its last operation
 * (drain touches no agent of its own choosing, so it may share a round with anything), and a forget appended as a
 * last round of its own.
 */
function withNodeOps(seed: number, rounds: Round[]): Round[] {
  const rng = mulberry32((seed ^ NODE_OPS_STREAM) >>> 0);
  const out = [...rounds];
  if (rng.chance(DRAIN_CHANCE)) {
    // Not the first round: nothing is deployed before it.
    const r = rng.int(1, out.length - 1);
    const round = out[r] as Round;
    out[r] = { ops: [...round.ops, { op: "node-drain", node: rng.int(0, NODES - 1) }], faults: round.faults };
  }
  if (rng.chance(FORGET_CHANCE)) out.push({ ops: [{ op: "node-forget", node: rng.int(0, NODES - 1) }], faults: [] });
  return out;
}

/**
 * The schedule a seed picks: 2 or 3 agents, one placed workload name, 3 to 5 rounds of 1–2 operations and 0–2 faults,
 * and from a second stream a node drain in one of them and a node forget after them (withNodeOps).
 */
export function scheduleFor(seed: number): Schedule {
  const rng = mulberry32(seed);
  const agents = rng.int(2, 3);
  const workloads = 1;
  const deployed = new Set<number>();
  const rounds: Round[] = [];
  const count = rng.int(3, 5);
  for (let r = 0; r < count; r++) {
    const ops: Operation[] = [operation(rng, agents, workloads, deployed)];
    if (rng.chance(0.5)) {
      const second = operation(rng, agents, workloads, deployed);
      const a = agentOf(second);
      if (a === null || !ops.some((o) => agentOf(o) === a)) ops.push(second);
    }
    const faults: Fault[] = [];
    const n = rng.int(0, 2);
    for (let i = 0; i < n; i++) faults.push(fault(rng));
    rounds.push({ ops, faults });
  }
  return { seed, nodes: NODES, agents, workloads, rounds: withNodeOps(seed, rounds) };
}

/** One line per round, for the replay message. */
export function describeSchedule(s: Schedule): string {
  const lines = [`seed ${s.seed}: ${s.nodes} nodes, ${s.agents} agents, ${s.workloads} placed workload(s)`];
  s.rounds.forEach((r, i) => {
    const ops = r.ops
      .map((o) =>
        Object.entries(o)
          .map(([k, v]) => (k === "op" ? v : `${k}=${v}`))
          .join(" "),
      )
      .join(" ‖ ");
    const faults = r.faults
      .map((f) =>
        Object.entries(f)
          .map(([k, v]) => (k === "fault" ? v : `${k}=${v}`))
          .join(" "),
      )
      .join("; ");
    lines.push(`  round ${i + 1}: ${ops}${faults ? `   faults: ${faults}` : ""}`);
  });
  return lines.join("\n");
}

export const OPERATION_KINDS = [
  "deploy",
  "deploy-twice",
  "place",
  "settle",
  "stop",
  "replace",
  "unload",
  "node-drain",
  "node-forget",
] as const;

/** How many of each operation and fault the schedules plan (every kind listed, zero or not): the fixed seeds' coverage. */
export function coverage(schedules: readonly Schedule[]): {
  readonly ops: Record<string, number>;
  readonly faults: Record<string, number>;
} {
  const ops: Record<string, number> = Object.fromEntries(OPERATION_KINDS.map((k) => [k, 0]));
  const faults: Record<string, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0]));
  for (const s of schedules) {
    for (const r of s.rounds) {
      for (const o of r.ops) ops[o.op] = (ops[o.op] ?? 0) + 1;
      for (const f of r.faults) faults[f.fault] = (faults[f.fault] ?? 0) + 1;
    }
  }
  return { ops, faults };
}
