/**
 * Placement engine throughput (issue 6 benchmark): engine decisions per second for 10 / 100 / 1,000 / 5,000
 * candidate nodes, on one core. Target: ≥ 10,000 decisions/s at 100 nodes.
 *
 *   npx tsc -p . && node dist/bench/placement/engine.js [--seconds 1] [--json]
 *
 * The cluster is a realistic mix: mostly eligible Pi and x86 boards, some suspect, discovered, denied or short of
 * memory; a workload with two variants, a common requirement, a preference, a perf metric, co-residency
 * exclusions and a preferred node; one instance per two nodes. `decide` is measured on an already validated input
 * (what the controller does after building it); `parse + decide` adds the zod validation of the whole input.
 */
import { createHash } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import type { NodeId } from "../../src/core/crypto/ed25519.js";
import { decide, parsePlacementInput } from "../../src/core/placement/decide.js";
import { NOW, PACKAGE_ID } from "../../src/core/placement/fixtures.js";
import { type PlacementInput, placementInputSchema } from "../../src/core/placement/inputs.js";

const SIZES = [10, 100, 1_000, 5_000];
const argv = process.argv.slice(2);
const seconds = Number(argv[argv.indexOf("--seconds") + 1]) || 1;
const json = argv.includes("--json");

/** A small deterministic generator, so every run measures the same cluster. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Node ids as they really are: 32 hex of a SHA-256 (§3.1), not the zero-padded ids of the unit tests. */
function benchId(i: number): NodeId {
  return createHash("sha256").update(`bench-node-${i}`).digest("hex").slice(0, 32) as NodeId;
}

function rawInput(n: number): unknown {
  const rnd = lcg(n);
  const nid = benchId;
  const nodes = [];
  const gate: Record<string, { verdict: string; reason: string }> = {};
  const instances = [];
  for (let i = 0; i < n; i++) {
    const id = nid(i + 1);
    const x86 = rnd() < 0.3;
    const roll = rnd();
    nodes.push({
      node_id: id,
      tier: roll < 0.05 ? "discovered" : "paired",
      liveness: roll > 0.95 ? "suspect" : "alive",
      facts_expire_at_ms: NOW + 300_000,
      facts: {
        node_id: id,
        issued_at_ms: NOW - 5_000,
        name: `node-${i}`,
        os: "linux",
        arch: x86 ? "x86_64" : "aarch64",
        board: x86 ? "generic" : rnd() < 0.5 ? "pi5" : "pi4",
        cpu: { count: 4, model: "bench", load1_milli: Math.floor(rnd() * 4_000) },
        memory: { total_bytes: 8 * 2 ** 30, available_bytes: Math.floor(rnd() * 4 * 2 ** 30) },
        routes: [
          { route: "native", arches: [x86 ? "x86_64" : "aarch64"] },
          ...(x86 ? [{ route: "emulated", via: "qemu-user", arches: ["aarch64"] }] : []),
        ],
        interpreters: [{ name: "python3", version: "3.11" }],
        labels: { zone: rnd() < 0.5 ? "attic" : "hall" },
        perf: [{ metric: "tokens_per_s", subject: "llama", value_milli: Math.floor(rnd() * 50_000), direction: "higher", measured_at_ms: NOW - 60_000 }],
        accelerators: rnd() < 0.1 ? [{ id: "accel.npu.hailo8", mem_bytes: 0, count: 1 }] : [],
      },
    });
    gate[id] = rnd() < 0.03 ? { verdict: "deny", reason: "default deny" } : { verdict: "permit", reason: "bench-agent" };
    if (i % 2 === 0) {
      instances.push({ node_id: id, name: `svc-${i}`, labels: rnd() < 0.1 ? ["gpu-heavy"] : [], memory_bytes: 2 ** 28, placed_at_ms: NOW - 1_000 });
    }
  }
  return {
    request: {
      spec: {
        name: "triage",
        kind: "agent",
        package_id: PACKAGE_ID,
        variants: [
          { id: "aarch64-linux", arch: "aarch64", os: "linux", entry: { program: "bin/agent-aarch64" } },
          { id: "x86_64-linux", arch: "x86_64", os: "linux", entry: { program: "bin/agent-x86_64" } },
        ],
        requirements: [{ id: "mem.system", where: [{ attr: "total_bytes", op: "gte", value: 2 ** 30 }] }],
        preferences: [{ requirement: { id: "label.zone", where: [{ attr: "value", op: "eq", value: "attic" }] }, weight: 5 }],
        memory_bytes: 512 * 2 ** 20,
        policy: { excludes: ["gpu-heavy"] },
        perf: { metric: "tokens_per_s", direction: "higher" },
        refs: [PACKAGE_ID],
      },
      prefer: [nid(3)],
      avoid: [nid(1)],
      gate,
    },
    nodes,
    cluster: { now_ms: NOW, revoked_nodes: [nid(5)], revoked_refs: [], instances },
  };
}

/** CPU seconds of this process: the machine may be shared, and a decision runs on one core either way. */
function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function rate(fn: () => unknown): { perSecond: number; microseconds: number } {
  const warmUntil = cpuSeconds() + Math.min(0.3, seconds * 0.3);
  while (cpuSeconds() < warmUntil) fn();
  let count = 0;
  const start = cpuSeconds();
  const end = start + seconds;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 4; i++) fn();
    count += 4;
    now = cpuSeconds();
  }
  const elapsed = now - start;
  return { perSecond: count / elapsed, microseconds: (elapsed * 1e6) / count };
}

/**
 * A fixed synthetic pass (100 small records: a few allocations each, then a sort), so figures from a busy or slow
 * machine can be compared with figures from another one: report both, or their ratio.
 */
function calibration(): number {
  const items = Array.from({ length: 100 }, (_, i) => ({ id: createHash("sha256").update(String(i)).digest("hex").slice(0, 32), v: i % 7 }));
  return rate(() => {
    const out = [];
    for (const it of items) {
      const score = { a: it.v * 100, b: 0 };
      out.push({ id: it.id, score, total: score.a + score.b, flags: [] as string[] });
    }
    return out.sort((a, b) => b.total - a.total || (a.id < b.id ? -1 : 1));
  }).microseconds;
}

const calibrationUs = calibration();
const rows = [];
for (const n of SIZES) {
  const raw = rawInput(n);
  const input: PlacementInput = placementInputSchema.parse(raw);
  const check = decide(input);
  if (!check.ok || check.decision.placement === null) throw new Error(`bench input of ${n} nodes did not place`);
  const eligible = check.decision.candidates.filter((c) => c.eligible).length;
  const engine = rate(() => decide(input));
  const full = rate(() => parsePlacementInput(raw));
  const withParse = 1 / (1 / engine.perSecond + 1 / full.perSecond);
  rows.push({ nodes: n, eligible, decide_per_s: Math.round(engine.perSecond), decide_us: engine.microseconds, parse_and_decide_per_s: Math.round(withParse) });
}

if (json) {
  console.log(
    JSON.stringify({ bench: "placement.engine", node: process.version, seconds, cpus: availableParallelism(), loadavg1: loadavg()[0], calibration_us: calibrationUs, rows }),
  );
} else {
  console.log(`placement engine, one core, node ${process.version}, ${seconds} CPU-s per figure (rates per CPU second)`);
  console.log(
    `machine: ${availableParallelism()} cpus, load average ${loadavg()[0]?.toFixed(1)}; calibration pass ${calibrationUs.toFixed(1)} µs (lower is a faster core)`,
  );
  console.log("nodes   eligible   decide/s     µs/decision   parse+decide/s");
  for (const r of rows) {
    console.log(
      `${String(r.nodes).padStart(5)}   ${String(r.eligible).padStart(8)}   ${String(r.decide_per_s).padStart(9)}   ${r.decide_us.toFixed(1).padStart(11)}   ${String(r.parse_and_decide_per_s).padStart(14)}`,
    );
  }
  const at100 = rows.find((r) => r.nodes === 100);
  if (at100) console.log(`target ≥ 10,000 decisions/s at 100 nodes: ${at100.decide_per_s >= 10_000 ? "met" : "NOT met"} (${at100.decide_per_s}/s)`);
}
