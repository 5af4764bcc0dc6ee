/**
 * Placements through the HTTP API (issue 8 benchmark): placements per second and latency percentiles through
 * `POST /api/v1/placements` on a real listener (`startServer`), against the library call `MeshController.place` on
 * the same controller, the same node daemons and the same package, in the same run. The difference is the API's
 * cost: HTTP and JSON, the bearer check, zod parsing, and the `api.call` request/outcome pair (one more fsynced commit
 * per call since issue 19: the request rides the placement's first write transaction, the outcome commits before the
 * answer). Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/api/placements.js [--nodes 3] [--placements 30] [--concurrency 4]
 *
 * Every placement adds an instance that the next decisions take into account, so the two sides alternate in
 * rounds (library, API, library, API, …) and are summed per side: neither always meets the larger cluster. Dry
 * runs (`POST /placements/explain` against `place({dry_run: true})`: refresh, gate, engine and the chained
 * decision, nothing sent to a node) are compared the same way; without the spawn on a node the API's own share
 * shows more plainly.
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
const PLACEMENTS = numberFlag("--placements", 30);
const CONCURRENCY = numberFlag("--concurrency", 4);
const ROUNDS = 3;

/** One call of one side; `i` makes the workload name unique. */
type PlaceOne = (i: number) => Promise<void>;

interface Run {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly n: number;
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

/** `n` calls from `first` on, `concurrency` in flight; the seconds taken and each call's latency. */
async function timed(
  first: number,
  n: number,
  concurrency: number,
  placeOne: PlaceOne,
): Promise<{ seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = first;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < first + n) {
        const i = next++;
        const t = performance.now();
        await placeOne(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { seconds: (performance.now() - t0) / 1000, latencies };
}

/** `n` calls per side in alternating rounds, summed per side, printed with the ratio API / library. */
async function compare(label: string, n: number, concurrency: number, library: PlaceOne, api: PlaceOne): Promise<void> {
  const perRound = Math.max(1, Math.ceil(n / ROUNDS));
  const sides = { library: { seconds: 0, latencies: [] as number[] }, api: { seconds: 0, latencies: [] as number[] } };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [side, placeOne] of [
      ["library", library],
      ["api", api],
    ] as const) {
      const r = await timed(round * perRound, perRound, concurrency, placeOne);
      sides[side].seconds += r.seconds;
      sides[side].latencies.push(...r.latencies);
    }
  }
  const runOf = (s: { seconds: number; latencies: number[] }): Run => {
    const sorted = s.latencies.sort((a, b) => a - b);
    return {
      perSecond: sorted.length / s.seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      n: sorted.length,
    };
  };
  const lib = runOf(sides.library);
  const viaApi = runOf(sides.api);
  const line = (who: string, r: Run) =>
    console.log(
      `  ${`${label}, ${who}`.padEnd(48)} ${r.perSecond.toFixed(1).padStart(10)} /s   p50 ${r.p50.toFixed(0).padStart(5)} ms   p99 ${r.p99.toFixed(0).padStart(5)} ms   n=${r.n}`,
    );
  line("library", lib);
  line("HTTP API", viaApi);
  ratio(`${label}: API / library rate`, viaApi.perSecond, lib.perSecond);
  console.log(
    `  ${`${label}: API p99 − library p99`.padEnd(48)} ${(viaApi.p99 - lib.p99).toFixed(0).padStart(10)} ms   (${(viaApi.p99 / lib.p99).toFixed(2)}×)`,
  );
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
  const nodes = await Promise.all(
    Array.from({ length: NODES }, () =>
      NodeProcess.create({ controllers: [key.publicKey], signers: [signer.publicKey], permits: [TEST_PERMIT] }),
    ),
  );
  const server = await startServer({ dataDir: dir, port: 0 });
  try {
    const controller = server.state.controller;
    for (const n of nodes) {
      const r = await controller.addTarget(n.address, "paired");
      if (!r.ok) throw new Error(r.error);
    }
    const stored = await controller.registerPackage(pkgDir);
    if (!stored.ok) throw new Error(stored.error);
    const viaLibrary =
      (prefix: string, dryRun = false): PlaceOne =>
      async (i) => {
        const r = await controller.place({ package: packageId, name: `${prefix}-${i}`, dry_run: dryRun });
        if (!(dryRun ? r.decision.placement : r.placed))
          throw new Error(`library placement ${i} not placed:\n${r.explain}`);
      };
    const viaApi =
      (prefix: string, path = "/placements"): PlaceOne =>
      async (i) => {
        const r = await fetch(`${server.url}/api/v1${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          body: JSON.stringify({ package: packageId, name: `${prefix}-${i}` }),
        });
        const body = (await r.json()) as PlaceReport;
        const done =
          path === "/placements" ? r.status === 201 && body.placed : r.status === 200 && body.decision?.placement;
        if (!done) throw new Error(`API ${path} ${i}: ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
      };
    await viaLibrary("warm-lib")(0);
    await viaApi("warm-api")(0);

    await compare(
      "dry runs, one at a time",
      PLACEMENTS,
      1,
      viaLibrary("dry-lib", true),
      viaApi("dry-api", "/placements/explain"),
    );
    await compare("placements, one at a time", PLACEMENTS, 1, viaLibrary("lib1"), viaApi("api1"));
    await compare(`placements, ${CONCURRENCY} in flight`, PLACEMENTS, CONCURRENCY, viaLibrary("libn"), viaApi("apin"));

    for (const p of await controller.placements()) await controller.instance("unload", p.instance_id);
  } finally {
    await server.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
