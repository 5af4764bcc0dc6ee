/**
 * Placement engine throughput (issue 6 benchmark): engine decisions per second for 10 / 100 / 1,000 / 5,000
 * candidate nodes, on one core. Target: ≥ 10,000 decisions/s at 100 nodes.
 *
 *   npm run build:test && node dist/bench/placement/engine.js [--seconds 1] [--json]
 *
 * The cluster is a realistic mix: mostly eligible Pi and x86 boards, some suspect, discovered, denied or short of
 * memory; a workload with two variants, a common requirement, a preference, a perf metric, co-residency
 * exclusions and a preferred node; one instance per two nodes. `decide` is measured on an already validated input
 * (what the controller does after building it); `parse + decide` adds the zod validation of the whole input;
 * `views-validated + decide` parses all but the node views (the controller before the history summary, issue 19);
 * `parts-validated + decide` parses what the controller parses per decision now (src/mesh/controller/dispatch.ts):
 * the workload spec and the order's options, the clock, revocations and cordons, while the views, weights, gate
 * verdicts and placement history were validated where they entered (`ValidatedParts`, src/core/placement/decide.ts).
 *
 * Issue 35: `reference/s` is the engine before its rewrite for 1,000 nodes (test/support/placement/reference, the test
 * oracle), measured in the same run; every size first checks that both decide the same (JSON-equal decisions).
 * Target: ≥ 3,000 decisions/s at 1,000 nodes. The cost exponent is fitted over 100 / 1,000 / 5,000 nodes.
 */
import { createHash } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import {
  decide,
  parsePlacementInput,
  parsePlacementInputWithParts,
  parsePlacementInputWithViews,
} from "../../src/core/placement/decide.js";
import { placedSummary } from "../../src/core/placement/history.js";
import { type PlacementInput, placementInputSchema } from "../../src/core/placement/inputs.js";
import { decide as referenceDecide } from "../../test/support/placement/reference/decide.js";
import { rawInput } from "./support/cluster.js";

const SIZES = [10, 100, 1_000, 5_000];
const argv = process.argv.slice(2);
const seconds = Number(argv[argv.indexOf("--seconds") + 1]) || 1;
const json = argv.includes("--json");

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
  const items = Array.from({ length: 100 }, (_, i) => ({
    id: createHash("sha256").update(String(i)).digest("hex").slice(0, 32),
    v: i % 7,
  }));
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
interface Row {
  readonly nodes: number;
  readonly eligible: number;
  readonly decide_per_s: number;
  readonly decide_us: number;
  readonly reference_per_s: number;
  readonly parse_and_decide_per_s: number;
  readonly edge_and_decide_per_s: number;
  readonly parts_and_decide_per_s: number;
}
const rows: Row[] = [];
for (const n of SIZES) {
  const raw = rawInput(n);
  const input: PlacementInput = placementInputSchema.parse(raw);
  const check = decide(input);
  if (!check.ok || check.value.placement === null) throw new Error(`bench input of ${n} nodes did not place`);
  const eligible = check.value.candidates.filter((c) => c.eligible).length;
  if (JSON.stringify(referenceDecide(structuredClone(input))) !== JSON.stringify(check))
    throw new Error(`the engine and the reference decide ${n} nodes differently`);
  const engine = rate(() => decide(input));
  const reference = rate(() => referenceDecide(input));
  const full = rate(() => parsePlacementInput(raw));
  const withParse = 1 / (1 / engine.perSecond + 1 / full.perSecond);
  // Issue 19: what the controller parses per decision now: the request and cluster state, the views already validated.
  const { request, cluster } = raw as { request: unknown; cluster: unknown };
  const edge = rate(() => parsePlacementInputWithViews({ request, cluster }, input.nodes));
  const withEdge = 1 / (1 / engine.perSecond + 1 / edge.perSecond);
  // Issue 19: the controller's per-decision parse now (dispatch.ts): the request without weights and gate, the cluster
  // without its history; the parts are the already validated ones, the history as the store's summary returns it.
  const { weights: _w, gate: _g, ...order } = request as Record<string, unknown>;
  const { instances: _i, ...marks } = cluster as Record<string, unknown>;
  const parts = {
    nodes: input.nodes,
    weights: input.request.weights,
    gate: input.request.gate,
    instances: input.cluster.instances,
    placed: placedSummary(input.cluster.instances),
  };
  const partsCheck = parsePlacementInputWithParts({ request: order, cluster: marks }, parts);
  if (!partsCheck.ok || JSON.stringify(decide(partsCheck.value)) !== JSON.stringify(check))
    throw new Error(`the parts-validated input of ${n} nodes decides differently`);
  const partsRate = rate(() => parsePlacementInputWithParts({ request: order, cluster: marks }, parts));
  const withParts = 1 / (1 / engine.perSecond + 1 / partsRate.perSecond);
  rows.push({
    nodes: n,
    eligible,
    decide_per_s: Math.round(engine.perSecond),
    decide_us: engine.microseconds,
    reference_per_s: Math.round(reference.perSecond),
    parse_and_decide_per_s: Math.round(withParse),
    edge_and_decide_per_s: Math.round(withEdge),
    parts_and_decide_per_s: Math.round(withParts),
  });
}

if (json) {
  console.log(
    JSON.stringify({
      bench: "placement.engine",
      node: process.version,
      seconds,
      cpus: availableParallelism(),
      loadavg1: loadavg()[0],
      calibration_us: calibrationUs,
      rows,
    }),
  );
} else {
  console.log(
    `placement engine, one core, node ${process.version}, ${seconds} CPU-s per figure (rates per CPU second)`,
  );
  console.log(
    `machine: ${availableParallelism()} cpus, load average ${loadavg()[0]?.toFixed(1)}; calibration pass ${calibrationUs.toFixed(1)} µs (lower is a faster core)`,
  );
  console.log(
    "nodes   eligible   decide/s     µs/decision   reference/s   parse+decide/s   views-validated+decide/s   parts-validated+decide/s",
  );
  for (const r of rows) {
    console.log(
      `${String(r.nodes).padStart(5)}   ${String(r.eligible).padStart(8)}   ${String(r.decide_per_s).padStart(9)}   ${r.decide_us.toFixed(1).padStart(11)}   ${String(r.reference_per_s).padStart(11)}   ${String(r.parse_and_decide_per_s).padStart(14)}   ${String(r.edge_and_decide_per_s).padStart(24)}   ${String(r.parts_and_decide_per_s).padStart(24)}`,
    );
  }
  const at = (n: number) => rows.find((r) => r.nodes === n);
  const [small, mid, large] = [at(100), at(1_000), at(5_000)];
  if (small && mid && large) {
    // Cost per decision ∝ nodes^k, fitted by least squares on the logs of 100 / 1,000 / 5,000 nodes.
    const points = [small, mid, large].map((r) => [Math.log(r.nodes), Math.log(r.decide_us)] as const);
    const mx = points.reduce((s, p) => s + p[0], 0) / points.length;
    const my = points.reduce((s, p) => s + p[1], 0) / points.length;
    const k =
      points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0) / points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
    console.log(
      `issue 35 target ≥ 3,000 decisions/s at 1,000 nodes: ${mid.decide_per_s >= 3_000 ? "met" : "NOT met"} (${mid.decide_per_s}/s, ${(mid.decide_per_s / mid.reference_per_s).toFixed(2)}× the reference's ${mid.reference_per_s}/s); cost exponent over 100 / 1,000 / 5,000 nodes ${k.toFixed(2)}`,
    );
  }
  const at100 = rows.find((r) => r.nodes === 100);
  if (at100)
    console.log(
      `target ≥ 10,000 decisions/s at 100 nodes: ${at100.decide_per_s >= 10_000 ? "met" : "NOT met"} (${at100.decide_per_s}/s)`,
    );
  if (at100) {
    const met = at100.parts_and_decide_per_s >= 5_000 ? "met" : "NOT met";
    const ratio = (at100.parts_and_decide_per_s / at100.decide_per_s) * 100;
    console.log(
      `issue 19 target ≥ 5,000/s validated + decide at 100 nodes (what the controller parses per decision): ${met} (${at100.parts_and_decide_per_s}/s, ${ratio.toFixed(0)}% of decide alone; views validated only: ${at100.edge_and_decide_per_s}/s; the whole input parsed: ${at100.parse_and_decide_per_s}/s)`,
    );
  }
}
