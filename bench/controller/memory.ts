/**
 * Controller memory with 10,000 placement records (issue 8 benchmark): the RSS and heap of a process holding an
 * open MeshController whose SQLite file holds N placements, after a forced GC, and the cost of the reads the API
 * makes at that size (`placements()`, `targets()`, `unsettled()`, and `placementHistory()`, which every `place()`
 * reads to build the engine's cluster state: the per-node totals and the instances its constraints name, issue 19). The baselines are measured in the same run: the same controller with
 * no placement records and with 100. Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/controller/memory.js [--records 10000] [--targets 10]
 *
 * About three minutes on a shared 2-core machine: most of it is the probe's `open()` at 10,000 records, which
 * verifies the whole chain (120,000 events with 10 targets), and the fill (sealing the same events).
 *
 * The records are written the way a placement writes them, through the store's own commit functions: per
 * placement, one chained `workload.place` gate verdict per target (the real gate, real permits file), the decision
 * event carrying a real engine decision over those targets, the `sending` attempt, and the placement with its
 * `placed` event, each its own transaction as in a real place; the filling connection skips the fsync of each commit
 * (synchronous = OFF) so that filling takes seconds instead of one fsync per step; rows and events are the same.
 *
 * Each size is measured in a fresh child process (`--probe`, with --expose-gc), so one size's garbage or allocator
 * high-water mark never shows up in another's figures.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { EventDraft } from "../../src/core/chain/event.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { decide, type PlacementDecision, parsePlacementInput } from "../../src/core/placement/index.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { consult, contextOf, DEFAULT_GATE, gatePolicyOf } from "../../src/mesh/controller/gate.js";
import { PolicyFiles } from "../../src/mesh/controller/policy.js";
import type { DecisionId, PlacementRecord, WorkloadRecord } from "../../src/mesh/controller/store.js";
import { TcpConnector } from "../../src/mesh/transport/tcp.js";
import { SqliteEngine } from "../../src/store/sqlite-engine.js";
import { benchId, rawInput } from "../placement/support/cluster.js";
import { numberFlag } from "../support.js";

const argv = process.argv.slice(2);
const RECORDS = numberFlag("--records", 10_000);
const TARGETS = numberFlag("--targets", 10);
/** A fixed controller key, so the probe process opens the chain the filling process wrote. */
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(7));
const SIGNER = "5".repeat(64);
const FILE_HASH = "6".repeat(64);

// ---- the probe: one fresh process per size ------------------------------------------------------------------

interface Probe {
  readonly records: number;
  readonly before_open: Memory;
  readonly open_ms: number;
  readonly after_open: Memory;
  readonly calls: Record<string, Call>;
  readonly after_calls: Memory;
  readonly max_rss_mb: number;
}

interface Call {
  readonly ms: number;
  readonly rows: number;
  /** Heap held by one answer while the caller keeps it (what an API response is built from). */
  readonly answer_mb: number;
}

interface Memory {
  readonly rss_mb: number;
  readonly heap_mb: number;
  readonly external_mb: number;
}

function collectedMemory(): Memory {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the probe needs --expose-gc");
  gc();
  gc();
  const m = process.memoryUsage();
  const mb = (bytes: number) => bytes / 2 ** 20;
  return { rss_mb: mb(m.rss), heap_mb: mb(m.heapUsed), external_mb: mb(m.external + m.arrayBuffers) };
}

/**
 * Milliseconds per call: at least 3 calls and 0.3 s, the first one (statement preparation, JIT) not counted; and
 * the heap one answer holds, measured between two forced collections while the answer is still referenced.
 */
async function perCall(fn: () => unknown): Promise<Call> {
  const before = collectedMemory().heap_mb;
  const first = await fn();
  const answer_mb = collectedMemory().heap_mb - before;
  const rows = Array.isArray(first) ? first.length : 0;
  let calls = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (calls < 3 || elapsed < 0.3) {
    await fn();
    calls += 1;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return { ms: (elapsed * 1000) / calls, rows, answer_mb };
}

async function probe(dataDir: string, records: number): Promise<Probe> {
  const before_open = collectedMemory();
  const t0 = process.hrtime.bigint();
  const controller = await MeshController.open({ dataDir, key: KEY, connector: new TcpConnector() });
  const open_ms = Number(process.hrtime.bigint() - t0) / 1e6;
  try {
    const after_open = collectedMemory();
    const calls = {
      "placements()": await perCall(() => controller.placements()),
      "targets()": await perCall(() => controller.targets()),
      "unsettled()": await perCall(() => controller.unsettled()),
      "store.placedWorkloads() (every stored workload)": await perCall(() => controller.store.placedWorkloads()),
      "store.placementHistory() (read by every place)": await perCall(() =>
        controller.store.placementHistory(BENCH_READS),
      ),
    };
    const after_calls = collectedMemory();
    const max_rss_mb = process.resourceUsage().maxRSS / 1024;
    return { records, before_open, open_ms, after_open, calls, after_calls, max_rss_mb };
  } finally {
    await controller.close();
  }
}

/** What a place of the bench workload (it excludes "gpu-heavy", declares memory) reads of the history. */
const BENCH_READS = {
  carrying: ["gpu-heavy"],
  excluding: [],
  placedAfter: new Map(Array.from({ length: TARGETS }, (_, i) => [benchId(i + 1) as string, Date.now()])),
};

// ---- filling, the way placements write ----------------------------------------------------------------------

const WORKLOAD: WorkloadRecord = {
  kind: "agent",
  network: "lan",
  secrets: false,
  cpu_millis: 250,
  memory_bytes: 256 * 2 ** 20,
  labels: [],
  excludes: [],
  package_id: "3f9c2a".padEnd(64, "0"),
  signer_keys: [SIGNER],
  file_hashes: [FILE_HASH],
};

/** A real engine decision over the benchmark cluster of `targets` nodes (bench/placement/support/cluster.ts). */
function engineDecision(targets: number): PlacementDecision {
  const parsed = parsePlacementInput(rawInput(targets));
  if (!parsed.ok) throw new Error(parsed.error.message);
  const result = decide(parsed.value);
  if (!result.ok || result.value.placement === null)
    throw new Error(`the bench cluster of ${targets} nodes did not place`);
  return result.value;
}

function writePolicy(dataDir: string): void {
  const permits = [{ id: "bench", actions: ["workload.*"], kinds: ["agent"], max_network: "egress" }];
  writeFileSync(join(dataDir, "permits.json"), JSON.stringify(permits), { mode: 0o600 });
  writeFileSync(join(dataDir, "signers.json"), JSON.stringify([{ key: SIGNER, name: "bench" }]), { mode: 0o600 });
}

async function addTargets(controller: MeshController, targets: number): Promise<void> {
  for (let i = 1; i <= targets; i++) {
    const node = benchId(i);
    const addr = `127.0.0.1:${7000 + i}`;
    const key = node.padEnd(64, "0");
    await controller.store.learnTarget(
      { addr, node_id: node, key, tier: "paired", tier_source: "api", learned_ms: Date.now() },
      { source: "trust", kind: "peer.add", payload: { node, addr, key, tier: "paired", how: "tofu" } },
    );
  }
}

/** Placements `from` … `to - 1`, each with the rows and events of one successful `place()` (see the header). */
async function fill(
  controller: MeshController,
  dataDir: string,
  decision: PlacementDecision,
  from: number,
  to: number,
): Promise<void> {
  const { store } = controller;
  const gatePolicy = gatePolicyOf((await new PolicyFiles(dataDir).read()).policy, DEFAULT_GATE);
  const eligible = decision.candidates.filter((c) => c.eligible && c.variant !== null);
  const nodes = decision.candidates.map((c) => c.node_id);
  // The fill's own commits need not survive a power cut: this connection skips the fsync of each (the probe, a fresh
  // process, reads what was written).
  if (store.engine instanceof SqliteEngine) store.engine.db.pragma("synchronous = OFF");
  for (let i = from; i < to; i++) {
    const name = `agent-${i}`;
    const verdicts: EventDraft[] = [];
    for (const node of nodes) {
      const { event } = consult(
        "workload.place",
        contextOf(WORKLOAD, "paired", controller.controllerId, false),
        gatePolicy,
        node,
      );
      if (event) verdicts.push(event);
    }
    await store.appendAll(verdicts);
    const decisionPayload = { ...decision, name } as unknown as JsonObject;
    const decisionId: DecisionId = await store.commitDecision({
      name,
      packageId: WORKLOAD.package_id,
      workload: WORKLOAD,
      dispatch: true,
      event: {
        source: "placement",
        kind: "workload.place",
        payload: {
          phase: "decision",
          backend: "mesh",
          controller: controller.controllerId,
          dry_run: false,
          name,
          package_id: WORKLOAD.package_id,
          decision: decisionPayload,
        },
      },
      refusal: (error) => ({
        source: "placement",
        kind: "workload.refuse",
        payload: { phase: "decision", name, error },
      }),
    });
    const winner = eligible[i % eligible.length];
    if (winner?.variant == null) throw new Error("bug: the bench decision has no eligible candidate");
    await store.beginAttempt(decisionId, 1, winner.node_id, winner.variant);
    const instanceId = `${name}-${decisionId.slice(0, 12)}`;
    const placement: PlacementRecord = {
      instance_id: instanceId,
      name,
      node_id: winner.node_id,
      decision_id: decisionId,
      variant: winner.variant,
      route: "native",
      package_id: WORKLOAD.package_id,
      placed_ms: Date.now(),
      adopted: false,
      pending: null,
    };
    const targetResult = {
      instance_id: instanceId,
      name,
      variant: winner.variant,
      route: "native",
      package_id: WORKLOAD.package_id,
      state: "running",
      pid: 40_000 + i,
      node_id: winner.node_id,
      generation: 1,
    };
    await store.commitPlaced(decisionId, 1, placement, WORKLOAD, {
      source: "placement",
      kind: "workload.place",
      payload: {
        phase: "placed",
        decision_id: decisionId,
        node: winner.node_id,
        variant: winner.variant,
        route: "native",
        instance_id: instanceId,
        attempts: 1,
        target_result: targetResult,
      },
    });
  }
}

function runProbe(dataDir: string, records: number): Probe {
  const out = execFileSync(
    process.execPath,
    ["--expose-gc", fileURLToPath(import.meta.url), "--probe", dataDir, "--records", String(records)],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return JSON.parse(out) as Probe;
}

function fileMb(path: string): number {
  let total = 0;
  for (const suffix of ["", "-wal"]) {
    try {
      total += statSync(path + suffix).size;
    } catch {
      // no WAL file after a clean close
    }
  }
  return total / 2 ** 20;
}

function report(rows: Array<{ probe: Probe; events: number; db_mb: number; fill_s: number }>): void {
  const f = (n: number, width = 9, digits = 1) => n.toFixed(digits).padStart(width);
  console.log(
    "records    events    db MB   fill s    open ms   rss MB  heap MB +heap MB   ext MB | after calls: rss MB  max rss MB",
  );
  for (const { probe: p, events, db_mb, fill_s } of rows) {
    const held = p.after_open.heap_mb - p.before_open.heap_mb;
    console.log(
      `${String(p.records).padStart(7)} ${String(events).padStart(9)}${f(db_mb)}${f(fill_s)}${f(p.open_ms, 11, 0)}${f(p.after_open.rss_mb)}${f(p.after_open.heap_mb)}${f(held)}${f(p.after_open.external_mb)}${f(p.after_calls.rss_mb, 21)}${f(p.max_rss_mb, 12)}`,
    );
  }
  console.log(
    "  after a forced GC, with the controller open; +heap MB: heap the open controller holds; max rss: peak of the probe",
  );
  const names = Object.keys(rows[0]?.probe.calls ?? {});
  const sizes = rows.map((r) => String(r.probe.records).padStart(10)).join("");
  console.log(`\n${"call".padEnd(48)}  ms per call at${sizes}   |  MB one answer holds at${sizes}`);
  for (const name of names) {
    const ms = rows.map((r) => f(r.probe.calls[name]?.ms ?? 0, 10, 3)).join("");
    const held = rows.map((r) => f(r.probe.calls[name]?.answer_mb ?? 0, 10, 2)).join("");
    console.log(`  ${name.padEnd(46)}${"".padStart(16)}${ms}   |${"".padStart(23)}${held}`);
  }
  const base = rows.find((r) => r.probe.records === 100)?.probe;
  const empty = rows[0]?.probe;
  const full = rows[rows.length - 1]?.probe;
  if (!base || !empty || !full) return;
  console.log(`\nratios, ${full.records} records against the same controller with fewer, in the same run`);
  const line = (label: string, value: string) => console.log(`  ${label.padEnd(48)} ${value.padStart(12)}`);
  const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(1)}%`;
  line("rss after open vs 0 records", pct(full.after_open.rss_mb, empty.after_open.rss_mb));
  line("rss after open vs 100 records", pct(full.after_open.rss_mb, base.after_open.rss_mb));
  line("heap after open vs 100 records", pct(full.after_open.heap_mb, base.after_open.heap_mb));
  line("open time vs 100 records", `${(full.open_ms / base.open_ms).toFixed(1)}×`);
  for (const name of names) {
    const a = full.calls[name]?.ms ?? 0;
    const b = base.calls[name]?.ms ?? 1;
    line(`${name.replace(/ \(.*\)/, "")} time vs 100 records`, `${(a / b).toFixed(1)}×`);
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "berth-bench-controller-memory-"));
  try {
    const dataDir = join(root, "controller");
    mkdirSync(dataDir, { mode: 0o700 });
    writePolicy(dataDir);
    const decision = engineDecision(TARGETS);
    const dbPath = join(dataDir, "controller.db");
    console.log(`controller memory: ${TARGETS} targets, up to ${RECORDS} placement records, node ${process.version}`);
    const rows: Array<{ probe: Probe; events: number; db_mb: number; fill_s: number }> = [];
    let filled = 0;
    for (const size of [0, 100, RECORDS]) {
      const controller = await MeshController.open({ dataDir, key: KEY, connector: new TcpConnector() });
      const t0 = process.hrtime.bigint();
      if (filled === 0 && size === 0) await addTargets(controller, TARGETS);
      await fill(controller, dataDir, decision, filled, size);
      const fill_s = Number(process.hrtime.bigint() - t0) / 1e9;
      const events = (await controller.store.chain.tip()).seq + 1;
      await controller.close();
      filled = size;
      rows.push({ probe: runProbe(dataDir, size), events, db_mb: fileMb(dbPath), fill_s });
    }
    report(rows);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const probeDir = argv.indexOf("--probe");
if (probeDir >= 0) {
  const dir = argv[probeDir + 1];
  if (dir === undefined) throw new Error("--probe needs the controller's data directory");
  console.log(JSON.stringify(await probe(dir, RECORDS)));
} else {
  await main();
}
