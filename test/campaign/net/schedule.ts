/**
 * A network-world schedule, chosen from a seed (pure): 2–3 rounds, each 1–2 user operations (CLI processes, run
 * concurrently, beside one to three `berth serve`) and 0–2 faults made by the kernel, the processes or the database.
 * What each fault stands for in the real world: test/campaign/README.md ("The network world").
 */
import { mulberry32, type Rng } from "../prng.js";

export type NetOperation =
  | { readonly op: "deploy"; readonly agent: number }
  | { readonly op: "deploy-twice"; readonly agent: number }
  | { readonly op: "stop"; readonly agent: number }
  | { readonly op: "replace"; readonly agent: number }
  | { readonly op: "settle" }
  | { readonly op: "node-drain"; readonly node: number }
  | { readonly op: "node-forget"; readonly node: number };

export type NetFault =
  | {
      readonly fault: "nft-drop";
      readonly node: number;
      readonly way: "both" | "in" | "out" | "port";
      readonly atMs: number;
      readonly forMs: number;
    }
  | { readonly fault: "nft-reset"; readonly node: number; readonly atMs: number; readonly forMs: number }
  | {
      readonly fault: "netem";
      readonly node: number;
      readonly shape: "delay" | "jitter" | "loss" | "reorder" | "duplicate" | "rate";
      readonly atMs: number;
      readonly forMs: number;
    }
  | { readonly fault: "conntrack"; readonly node: number; readonly rst: boolean; readonly atMs: number }
  | { readonly fault: "link-down"; readonly node: number; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "pause-daemon"; readonly node: number; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "kill-daemon"; readonly node: number; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "pause-controller"; readonly leader: boolean; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "kill-controller"; readonly leader: boolean; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "enospc"; readonly node: number; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "clock-skew"; readonly offsetS: number; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "pg-kill"; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "pg-restart"; readonly atMs: number }
  | { readonly fault: "pg-pause"; readonly atMs: number; readonly forMs: number }
  | { readonly fault: "kill-agent"; readonly which: number; readonly leader: boolean; readonly atMs: number }
  | { readonly fault: "kill-cli"; readonly which: number; readonly atMs: number }
  | { readonly fault: "drop-answer" }
  | { readonly fault: "cut-lease"; readonly overMs: number };

export interface NetRound {
  readonly ops: readonly NetOperation[];
  readonly faults: readonly NetFault[];
}

export interface NetSchedule {
  readonly seed: number;
  readonly agents: number;
  readonly rounds: readonly NetRound[];
}

export const NET_NODES = 3;
export const NET_FAULT_KINDS = [
  "nft-drop",
  "nft-reset",
  "netem",
  "conntrack",
  "link-down",
  "pause-daemon",
  "kill-daemon",
  "pause-controller",
  "kill-controller",
  "enospc",
  "clock-skew",
  "pg-kill",
  "pg-restart",
  "pg-pause",
  "kill-agent",
  "kill-cli",
  "drop-answer",
  "cut-lease",
] as const;
export const NET_OPERATION_KINDS = [
  "deploy",
  "deploy-twice",
  "stop",
  "replace",
  "settle",
  "node-drain",
  "node-forget",
] as const;

function operation(rng: Rng, agents: number, deployed: Set<number>): NetOperation {
  const agent = rng.int(0, agents - 1);
  const kind =
    deployed.size === 0
      ? rng.pick(["deploy", "deploy-twice"] as const)
      : rng.pick(["deploy", "deploy", "deploy-twice", "stop", "replace", "settle"] as const);
  switch (kind) {
    case "deploy":
    case "deploy-twice":
      deployed.add(agent);
      return { op: kind, agent };
    case "settle":
      return { op: "settle" };
    default:
      return { op: kind, agent: rng.pick([...deployed].sort((a, b) => a - b)) };
  }
}

function fault(rng: Rng): NetFault {
  const node = rng.int(0, NET_NODES - 1);
  const atMs = rng.int(0, 2_000);
  const forMs = rng.int(300, 5_000);
  switch (rng.pick(NET_FAULT_KINDS)) {
    case "nft-drop":
      return { fault: "nft-drop", node, way: rng.pick(["both", "in", "out", "port"] as const), atMs, forMs };
    case "nft-reset":
      return { fault: "nft-reset", node, atMs, forMs };
    case "netem":
      return {
        fault: "netem",
        node,
        shape: rng.pick(["delay", "jitter", "loss", "reorder", "duplicate", "rate"] as const),
        atMs,
        forMs,
      };
    case "conntrack":
      return { fault: "conntrack", node, rst: rng.chance(0.5), atMs };
    case "link-down":
      return { fault: "link-down", node, atMs, forMs };
    case "pause-daemon":
      return { fault: "pause-daemon", node, atMs, forMs };
    case "kill-daemon":
      return { fault: "kill-daemon", node, atMs, forMs };
    case "pause-controller":
      return { fault: "pause-controller", leader: rng.chance(0.7), atMs, forMs: rng.int(300, 8_000) };
    case "kill-controller":
      return { fault: "kill-controller", leader: rng.chance(0.7), atMs, forMs };
    case "enospc":
      return { fault: "enospc", node, atMs, forMs };
    case "clock-skew":
      return { fault: "clock-skew", offsetS: rng.pick([-3600, -120, -30, 30, 120, 3600] as const), atMs, forMs };
    case "pg-kill":
      return { fault: "pg-kill", atMs, forMs };
    case "pg-restart":
      return { fault: "pg-restart", atMs };
    case "pg-pause":
      return { fault: "pg-pause", atMs, forMs };
    case "kill-agent":
      return { fault: "kill-agent", which: rng.int(0, 7), leader: rng.chance(0.5), atMs };
    case "kill-cli":
      return { fault: "kill-cli", which: rng.int(0, 3), atMs: rng.int(50, 2_500) };
    case "drop-answer":
      return { fault: "drop-answer" };
    case "cut-lease":
      return { fault: "cut-lease", overMs: rng.int(300, 3_000) };
  }
}

export const NET_DRAIN_CHANCE = 0.12;
export const NET_FORGET_CHANCE = 0.04;

export function netScheduleFor(seed: number): NetSchedule {
  const rng = mulberry32((seed ^ 0x5eed0037) >>> 0);
  const agents = rng.int(2, 3);
  const deployed = new Set<number>();
  const rounds: NetRound[] = [];
  const count = rng.int(2, 3);
  for (let r = 0; r < count; r++) {
    const ops: NetOperation[] = [operation(rng, agents, deployed)];
    if (rng.chance(0.5)) {
      const second = operation(rng, agents, deployed);
      const a = "agent" in second ? second.agent : null;
      if (a === null || !ops.some((o) => "agent" in o && o.agent === a)) ops.push(second);
    }
    if (r > 0 && rng.chance(NET_DRAIN_CHANCE)) ops.push({ op: "node-drain", node: rng.int(0, NET_NODES - 1) });
    const faults: NetFault[] = [];
    const n = rng.int(0, 2);
    for (let i = 0; i < n; i++) faults.push(fault(rng));
    rounds.push({ ops, faults });
  }
  if (rng.chance(NET_FORGET_CHANCE))
    rounds.push({ ops: [{ op: "node-forget", node: rng.int(0, NET_NODES - 1) }], faults: [] });
  return { seed, agents, rounds };
}

export function describeNetSchedule(s: NetSchedule): string {
  const lines = [`seed ${s.seed} (net): ${NET_NODES} nodes, ${s.agents} agents`];
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

export function netCoverage(schedules: readonly NetSchedule[]): {
  ops: Record<string, number>;
  faults: Record<string, number>;
} {
  const ops: Record<string, number> = Object.fromEntries(NET_OPERATION_KINDS.map((k) => [k, 0]));
  const faults: Record<string, number> = Object.fromEntries(NET_FAULT_KINDS.map((k) => [k, 0]));
  for (const s of schedules) {
    for (const r of s.rounds) {
      for (const o of r.ops) ops[o.op] = (ops[o.op] ?? 0) + 1;
      for (const f of r.faults) faults[f.fault] = (faults[f.fault] ?? 0) + 1;
    }
  }
  return { ops, faults };
}
