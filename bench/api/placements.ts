/**
 * Placements through the HTTP API (issue 8 benchmark): placements per second and latency percentiles through
 * `POST /api/v1/placements` on a real listener (`startServer`), against the library call `MeshController.place` on
 * the same controller, the same node daemons and the same package, in the same run. The difference is the API's
 * cost: HTTP and JSON, the bearer check, zod parsing, and the `api.call` request/outcome pair (two more fsynced
 * commits per call). Figures are printed, never asserted.
 *
 *   npx tsc -p . && node dist/bench/api/placements.js [--nodes 3] [--placements 20] [--concurrency 4]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import type { PlaceReport } from "../../src/mesh/controller/index.js";
import { startServer } from "../../src/server/server.js";
import { controllerKeyPath } from "../../src/server/state.js";
import { cleanup, NodeProcess, requireBuild } from "../../test/mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../../test/mesh-controller/support/package.js";
import { numberFlag, ratio } from "../support.js";

const NODES = numberFlag("--nodes", 3);
const PLACEMENTS = numberFlag("--placements", 20);
const CONCURRENCY = numberFlag("--concurrency", 4);

interface Run {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

/** `n` placements, `concurrency` in flight, each timed from call to answer. */
async function measure(label: string, n: number, concurrency: number, placeOne: (i: number) => Promise<void>): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await placeOne(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const perSecond = n / ((performance.now() - t0) / 1000);
  latencies.sort((a, b) => a - b);
  const run = { perSecond, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  console.log(`  ${label.padEnd(48)} ${perSecond.toFixed(1).padStart(10)} /s   p50 ${run.p50.toFixed(0).padStart(5)} ms   p99 ${run.p99.toFixed(0).padStart(5)} ms`);
  return run;
}

async function main(): Promise<void> {
  requireBuild();
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-api-"));
  const key = generateSigningKey();
  const signer = generateSigningKey();
  saveKeyFile(controllerKeyPath(dir), key);
  const pkgDir = join(dir, "pkg");
  const packageId = probePackage(pkgDir, signer);
  writeJson(join(dir, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(dir, "permits.json"), [TEST_PERMIT]);
  console.log(`API placements: ${NODES} node daemons on loopback, ${PLACEMENTS} placements per run, trivial workload`);
  const nodes = await Promise.all(Array.from({ length: NODES }, () => NodeProcess.create({ controllers: [key.publicKey], signers: [signer.publicKey], permits: [TEST_PERMIT] })));
  const server = await startServer({ dataDir: dir, port: 0 });
  try {
    const controller = server.state.controller;
    for (const n of nodes) {
      const r = await controller.addTarget(n.address, "paired");
      if (!r.ok) throw new Error(r.error);
    }
    const stored = await controller.registerPackage(pkgDir);
    if (!stored.ok) throw new Error(stored.error);
    const viaLibrary = (prefix: string) => async (i: number) => {
      const r = await controller.place({ package: packageId, name: `${prefix}-${i}` });
      if (!r.placed) throw new Error(`library placement ${i} not placed:\n${r.explain}`);
    };
    const viaApi = (prefix: string) => async (i: number) => {
      const r = await fetch(`${server.url}/api/v1/placements`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ package: packageId, name: `${prefix}-${i}` }),
      });
      const body = (await r.json()) as PlaceReport;
      if (r.status !== 201 || !body.placed) throw new Error(`API placement ${i}: ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
    };
    await viaLibrary("warm-lib")(0);
    await viaApi("warm-api")(0);

    const lib1 = await measure("library place(), one at a time", PLACEMENTS, 1, viaLibrary("lib1"));
    const api1 = await measure("POST /placements, one at a time", PLACEMENTS, 1, viaApi("api1"));
    const libN = await measure(`library place(), ${CONCURRENCY} in flight`, PLACEMENTS, CONCURRENCY, viaLibrary("libn"));
    const apiN = await measure(`POST /placements, ${CONCURRENCY} in flight`, PLACEMENTS, CONCURRENCY, viaApi("apin"));
    ratio("API / library, one at a time", api1.perSecond, lib1.perSecond);
    ratio(`API / library, ${CONCURRENCY} in flight`, apiN.perSecond, libN.perSecond);
    console.log(`  ${"added p99 latency, one at a time".padEnd(48)} ${(api1.p99 - lib1.p99).toFixed(0).padStart(10)} ms`);

    for (const p of controller.placements()) await controller.instance("unload", p.instance_id);
  } finally {
    await server.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
