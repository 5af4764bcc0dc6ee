/**
 * The controller store's write path on both engines in one run (issue 20): placements/s and the p99 of one
 * placement's store work (the decision with its event, the `sending` attempt, the placement with its `placed`
 * event: three transactions, as a real place commits them), on SQLite (a file, synchronous = FULL) and on PostgreSQL
 * (a throwaway local server, test/support/postgres.ts, fsync off). No node is contacted: this is the store's share
 * of a placement, the part the engine changes. Figures, never a test.
 *
 *   node dist/bench/store/engines.js [--placements 300]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EngineChain } from "../../src/chain/engine-chain.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { ControllerStore, type PlacementRecord, type WorkloadRecord } from "../../src/mesh/controller/store.js";
import type { StoreEngine } from "../../src/store/engine.js";
import { PostgresEngine } from "../../src/store/postgres-engine.js";
import { SqliteEngine } from "../../src/store/sqlite-engine.js";
import { startPostgres } from "../../test/support/postgres.js";
import { numberFlag } from "../support.js";

const PLACEMENTS = numberFlag("--placements", 300);
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(7));
const W: WorkloadRecord = {
  kind: "agent",
  network: "lan",
  secrets: false,
  cpu_millis: 250,
  memory_bytes: 2 ** 28,
  labels: [],
  excludes: [],
  package_id: "c".repeat(64),
  signer_keys: [],
  file_hashes: [],
};
const NODE = "d".repeat(32);

async function run(label: string, engine: StoreEngine): Promise<{ rate: number; p99: number }> {
  const chain = await EngineChain.open(engine, KEY, "controller");
  const store = await ControllerStore.open(engine, chain, Date.now);
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < PLACEMENTS; i++) {
    const t0 = performance.now();
    const name = `agent-${i}`;
    const id = await store.commitDecision({
      name,
      packageId: W.package_id,
      workload: W,
      dispatch: true,
      event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
      refusal: (error) => ({
        source: "placement",
        kind: "workload.refuse",
        payload: { phase: "decision", name, error },
      }),
    });
    await store.beginAttempt(id, 1, NODE, "v");
    const p: PlacementRecord = {
      instance_id: `${name}-x`,
      name,
      node_id: NODE,
      decision_id: id,
      variant: "v",
      route: "native",
      package_id: W.package_id,
      placed_ms: Date.now(),
      adopted: false,
      pending: null,
    };
    await store.commitPlaced(id, 1, p, W, {
      source: "placement",
      kind: "workload.place",
      payload: { phase: "placed", decision_id: id },
    });
    times.push(performance.now() - t0);
  }
  const seconds = (performance.now() - start) / 1000;
  times.sort((a, b) => a - b);
  const p99 = times[Math.min(times.length - 1, Math.floor(times.length * 0.99))] ?? 0;
  if (!(await chain.verifyStored()).ok) throw new Error(`${label}: the chain does not verify after the run`);
  const rate = PLACEMENTS / seconds;
  console.log(
    `  ${label.padEnd(34)} ${rate.toFixed(0).padStart(8)} placements/s   p99 ${p99.toFixed(2).padStart(7)} ms`,
  );
  return { rate, p99 };
}

async function main(): Promise<void> {
  console.log(`store engines: ${PLACEMENTS} placements each (store work only), node ${process.version}`);
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-store-"));
  const pg = await startPostgres();
  try {
    const sqlite = SqliteEngine.open(join(dir, "controller.db"));
    const s = await run("SQLite (file, synchronous=FULL)", sqlite);
    await sqlite.close();
    const postgres = await PostgresEngine.open(await pg.database("bench"));
    const p = await run("PostgreSQL 15 (loopback, fsync off)", postgres);
    await postgres.close();
    console.log(
      `  PostgreSQL / SQLite: ${(p.rate / s.rate).toFixed(2)}x the rate, ${(p.p99 / s.p99).toFixed(2)}x the p99`,
    );
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
