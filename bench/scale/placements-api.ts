/**
 * Issue 35, placements at a scheduler's rate: concurrent `POST /api/v1/placements` on `berth serve` (in process, real
 * listener, bearer token, the real controller, store, chain and gate) onto `--nodes` simulated nodes (default 1,000,
 * bench/support/node-sim: TLS 1.3, signed and verified messages, the package fetched and verified per placement).
 * Each placement has its own name; `--concurrency` requests are in flight (default 64) for `--seconds` (default 20).
 * Printed: placements per second sustained, p50 / p99 latency, chain events per placement (constant since the gate
 * summary), the same placements through the library call (`controller.place`, same server, same concurrency) in the
 * same run as the floor the API is compared with, and the ratio to the target. Never asserted.
 *
 *   npm run build:test && node dist/bench/scale/placements-api.js [--nodes 1000] [--concurrency 64] [--seconds 20]
 *
 * Target (issue 35): ≥ 500 placements/s sustained at 1,000 nodes, never two copies of one name
 * (test/mesh-controller/same-name-concurrent-api-processes.test.ts holds the second half).
 */
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import { startServer } from "../../src/server/server.js";
import { numberFlag, ratio } from "../support.js";
import { scaleWorld } from "./support/world.js";

const NODES = numberFlag("--nodes", 1_000);
const CONCURRENCY = numberFlag("--concurrency", 64);
const SECONDS = numberFlag("--seconds", 20);
const TARGET = 500;

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

/** Calls `one(i)` with `concurrency` in flight until `seconds` have passed; rate and latencies of the calls that placed. */
async function sustained(
  one: (i: number) => Promise<boolean>,
  concurrency: number,
  seconds: number,
): Promise<{ perSecond: number; p50: number; p99: number; n: number; failed: number }> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        if (await one(next++)) latencies.push(performance.now() - t);
        else failed++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const sorted = latencies.sort((a, b) => a - b);
  return {
    perSecond: sorted.length / elapsed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    n: sorted.length,
    failed,
  };
}

const world = await scaleWorld({ nodes: NODES, agents: 0, log: (l) => console.log(l) });
// The world's controller steps aside: `berth serve` opens the same home (targets, keys, policy, package).
await world.controller.close();
world.connector.closeWarm();
const server = await startServer({ dataDir: world.home, port: 0 });
try {
  const controller = server.state.controller;
  console.log(
    `placements onto ${NODES} simulated nodes, ${CONCURRENCY} in flight for ${SECONDS} s each side, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  const tip = async () => (await controller.store.chain.tip()).seq;
  const viaApi = (prefix: string) => async (i: number) => {
    const r = await fetch(`${server.url}/api/v1/placements`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({ package: world.packageId, name: `${prefix}-${i}` }),
    });
    const body = (await r.json()) as { placed?: unknown };
    return r.status === 201 && Boolean(body.placed);
  };
  const viaLibrary = (prefix: string) => async (i: number) =>
    (await controller.place({ package: world.packageId, name: `${prefix}-${i}` })).placed !== null;
  await viaApi("warm")(0);

  const before = await tip();
  const api = await sustained(viaApi("api"), CONCURRENCY, SECONDS);
  const events = (await tip()) - before;
  const lib = await sustained(viaLibrary("lib"), CONCURRENCY, SECONDS);
  const line = (who: string, r: typeof api) =>
    console.log(
      `  ${who.padEnd(40)} ${r.perSecond.toFixed(1).padStart(8)} /s   p50 ${r.p50.toFixed(0).padStart(6)} ms   p99 ${r.p99.toFixed(0).padStart(6)} ms   placed ${r.n}, not placed ${r.failed}`,
    );
  line("POST /api/v1/placements", api);
  line("controller.place (library, the floor)", lib);
  console.log(
    `  ${"chain events per API placement".padEnd(40)} ${(events / Math.max(1, api.n + api.failed)).toFixed(1).padStart(8)}      (constant in the number of nodes since the gate summary)`,
  );
  ratio("API / library", api.perSecond, lib.perSecond);
  ratio(`API / target ${TARGET}/s`, api.perSecond, TARGET, 1);
} finally {
  await server.close();
  await world.sim.close();
  rmSync(world.root, { recursive: true, force: true });
}
