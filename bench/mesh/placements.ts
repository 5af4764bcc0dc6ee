/**
 * End-to-end mesh placements (issue 6 benchmark): placements per second through the whole controller — refresh of
 * every target (signed describes), the controller's gate per target (chained), the engine, the chained decision,
 * the signed `place` with the package fetched over the request's connection, the node's verification, spawn and
 * chain, and the placement committed — across 20 real node daemons on loopback, with a trivial workload (a shell
 * script that sleeps). Printed as a ratio to the engine-only decide rate for the same 20 nodes, measured in the same
 * run. Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/mesh/placements.js [--nodes 20] [--placements 60] [--concurrency 8]
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { DEFAULT_WEIGHTS, decide, type NodeView, parsePlacementInput } from "../../src/core/placement/index.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { acceptFacts } from "../../src/mesh/controller/facts.js";
import { PolicyFiles } from "../../src/mesh/controller/policy.js";
import { preparePackage, workloadSpecOf } from "../../src/mesh/controller/prepare.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { rate } from "../support.js";
import {
  BENCH_PERMITS,
  sleepPackage,
  startNodeProcess,
  stopNodeProcesses,
  writeJson,
} from "../support/node-processes.js";

const argv = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) || fallback : fallback;
};
const NODES = arg("--nodes", 20);
const PLACEMENTS = arg("--placements", 60);
const CONCURRENCY = arg("--concurrency", 8);

const root = mkdtempSync(join(tmpdir(), "berth-bench-placements-"));
const controllerKey = generateSigningKey();
const signer = generateSigningKey();
const daemons: ChildProcess[] = [];

async function startDaemon(i: number): Promise<string> {
  const ready = await startNodeProcess({
    dataDir: join(root, `node-${i}`),
    name: `n${i}`,
    controllers: [controllerKey.publicKey],
    signer: signer.publicKey,
    board: "pi5",
    children: daemons,
  });
  return ready.address;
}

async function main(): Promise<void> {
  const pkgDir = sleepPackage(root, signer);
  const controllerDir = join(root, "controller");
  mkdirSync(controllerDir, { mode: 0o700 });
  writeJson(join(controllerDir, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(controllerDir, "permits.json"), BENCH_PERMITS);

  console.log(`mesh placements: ${NODES} node daemons on loopback, ${PLACEMENTS} placements, trivial workload`);
  const started = Date.now();
  const addrs = await Promise.all(Array.from({ length: NODES }, (_, i) => startDaemon(i)));
  console.log(`  ${"daemons started".padEnd(48)} ${String(Date.now() - started).padStart(10)} ms`);

  // Engine only: the same 20 nodes as the controller sees them (signed facts, accepted), the same workload spec.
  const client = new NodeClient({ key: controllerKey, connector: new TlsConnector({ identity: controllerKey }) });
  const views: NodeView[] = [];
  for (const addr of addrs) {
    const d = await client.describe(addr, null);
    if (d.kind !== "described") throw new Error(`describe ${addr}: ${d.reason}`);
    const f = acceptFacts(d.facts as JsonObject, null, Date.now());
    if (f.kind !== "accepted") throw new Error(`facts of ${addr} not accepted`);
    views.push({
      node_id: d.nodeId as NodeView["node_id"],
      tier: "paired",
      liveness: "alive",
      facts: f.facts,
      facts_expire_at_ms: f.expireAtMs,
    });
  }
  const prepared = preparePackage(pkgDir, controllerDir, (await new PolicyFiles(controllerDir).read()).policy);
  if (!prepared.ok) throw new Error(prepared.error);
  const parsed = parsePlacementInput({
    request: {
      spec: workloadSpecOf("bench", prepared.value),
      weights: DEFAULT_WEIGHTS,
      gate: Object.fromEntries(views.map((v) => [v.node_id, { verdict: "permit", reason: "bench" }])),
    },
    nodes: views,
    cluster: { now_ms: Date.now() },
  });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const input = parsed.value;
  const engine = rate(`engine decide, ${NODES} nodes`, 20_000, () => {
    decide(input);
  });

  const controller = await MeshController.open({
    dataDir: controllerDir,
    key: controllerKey,
    connector: new TlsConnector({ identity: controllerKey }),
  });
  for (const addr of addrs) {
    const r = await controller.addTarget(addr, "paired");
    if (!r.ok) throw new Error(r.error);
  }
  const ids: string[] = [];
  const placeOne = async (i: number) => {
    const r = await controller.place({ package: prepared.value.packageId, name: `bench-${i}` });
    if (!r.placed) throw new Error(`placement ${i} not placed:\n${r.explain}`);
    ids.push(r.placed.instance_id);
  };
  // Warm-up (package store copy, connections, JIT), then sequential and concurrent runs.
  await placeOne(0);
  // Where the time goes: the refresh every placement starts with (20 signed describes), and a dry run (refresh,
  // 20 chained gate verdicts, the engine, the chained decision; nothing sent).
  const timed = async (label: string, n: number, fn: (i: number) => Promise<unknown>) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await fn(i);
    const perSecond = n / (Number(process.hrtime.bigint() - t0) / 1e9);
    console.log(`  ${label.padEnd(48)} ${perSecond.toFixed(1).padStart(10)} /s`);
  };
  await timed(`refresh of ${NODES} targets (signed describes)`, 10, () => controller.refreshTargets());
  await timed("dry-run placements (no dispatch)", 10, (i) =>
    controller.place({ package: prepared.value.packageId, name: `dry-${i}`, dry_run: true }),
  );
  const half = Math.max(1, Math.floor(PLACEMENTS / 2));
  let t = process.hrtime.bigint();
  for (let i = 1; i <= half; i++) await placeOne(i);
  const sequential = half / (Number(process.hrtime.bigint() - t) / 1e9);
  console.log(`  ${"end-to-end placements, one at a time".padEnd(48)} ${sequential.toFixed(1).padStart(10)} /s`);
  t = process.hrtime.bigint();
  let next = half + 1;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next <= PLACEMENTS) await placeOne(next++);
    }),
  );
  const concurrent = (PLACEMENTS - half) / (Number(process.hrtime.bigint() - t) / 1e9);
  console.log(
    `  ${`end-to-end placements, ${CONCURRENCY} in flight`.padEnd(48)} ${concurrent.toFixed(1).padStart(10)} /s`,
  );
  // The ratio is tiny (a placement is I/O: ~20 signed describes, fsynced commits on both sides, a spawn), so it is
  // printed with enough digits to compare runs, and as "engine decisions per placement" as well.
  const show = (label: string, e2e: number) =>
    console.log(
      `  ${label.padEnd(48)} ${((e2e / engine) * 100).toFixed(4).padStart(9)}%  (1 placement per ${(engine / e2e).toFixed(0)} engine decisions)`,
    );
  show("one at a time / engine decide", sequential);
  show(`${CONCURRENCY} in flight / engine decide`, concurrent);

  t = process.hrtime.bigint();
  for (const id of ids) {
    const r = await controller.instance("unload", id);
    if (r.kind !== "ok") throw new Error(`unload ${id}: ${JSON.stringify(r)}`);
  }
  const unloads = ids.length / (Number(process.hrtime.bigint() - t) / 1e9);
  console.log(`  ${"unloads through the controller".padEnd(48)} ${unloads.toFixed(1).padStart(10)} /s`);
  await controller.close();
}

try {
  await main();
} finally {
  await stopNodeProcesses(daemons);
  rmSync(root, { recursive: true, force: true });
}
