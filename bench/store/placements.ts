/**
 * End-to-end placements on both engines in one run (issue 20): one `berth serve` leading its store — SQLite (the
 * home's file) or PostgreSQL 15 (a throwaway server on loopback, test/support/postgres.ts, fsync off) — placing a
 * trivial workload through the HTTP API (POST /placements: refresh, gate, engine, chained decision, signed place,
 * the node's spawn and chain, the placement committed) onto the same real node daemons. Placements/s and the latency
 * distribution (p50, p99, max) per engine, in ABBA order (SQLite, PostgreSQL, PostgreSQL, SQLite) so a drift in this
 * shared machine's load hits both alike; each engine's figure is the mean of its two rounds. The node daemons
 * authorise two controller keys, one per store, so each store binds its own key (no foreign_store between them).
 * Figures, never asserted. `bash scripts/bench store/placements` [--nodes 3] [--placements 24] [--concurrency 4].
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { startPostgres } from "../../test/support/postgres.js";
import { numberFlag } from "../support.js";
import {
  BENCH_PERMITS,
  firstJsonLine,
  MAIN,
  sleepPackage,
  startNodeProcess,
  writeJson,
} from "../support/node-processes.js";

const NODES = numberFlag("--nodes", 3);
const PLACEMENTS = numberFlag("--placements", 24);
const CONCURRENCY = numberFlag("--concurrency", 4);

const root = mkdtempSync(join(tmpdir(), "berth-bench-store-placements-"));
const signer = generateSigningKey();
const keys = { sqlite: generateSigningKey(), postgres: generateSigningKey() };
const children: ChildProcess[] = [];
const nodeIds: string[] = [];

async function startNode(i: number): Promise<string> {
  const ready = await startNodeProcess({
    dataDir: join(root, `node-${i}`),
    name: `n${i}`,
    controllers: [keys.sqlite.publicKey, keys.postgres.publicKey],
    signer: signer.publicKey,
    children,
  });
  nodeIds.push(ready.nodeId);
  return ready.address;
}

interface Leader {
  readonly url: string;
  readonly token: string;
  readonly proc: ChildProcess;
}

async function serve(engine: "sqlite" | "postgres", databaseUrl: string | null): Promise<Leader> {
  const home = join(root, `home-${engine}`);
  mkdirSync(join(home, "keys"), { recursive: true, mode: 0o700 });
  saveKeyFile(join(home, "keys", "controller.key"), keys[engine]);
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(home, "permits.json"), BENCH_PERMITS);
  const env = { ...process.env, BERTH_HOME: home, ...(databaseUrl ? { BERTH_DATABASE_URL: databaseUrl } : {}) };
  const proc = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--json", "--log-level", "silent"], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(proc);
  const { url } = (await firstJsonLine(proc, "berth serve")) as { url: string };
  return { url, token: readFileSync(join(home, "api.token"), "utf8").trim(), proc };
}

async function call(
  l: Leader,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${l.url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${l.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function untilLeading(l: Leader, addr: string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    const r = await call(l, "POST", "/nodes", { addr, tier: "paired" });
    if (r.status === 201 || r.status === 200) return;
    if (Date.now() > end) throw new Error(`adding ${addr}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)] ?? 0;

async function round(l: Leader, pkg: string, tag: string): Promise<{ rate: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < PLACEMENTS) {
        const i = next++;
        const t0 = performance.now();
        const r = await call(l, "POST", "/placements", { package: pkg, name: `${tag}-${i}` });
        if (r.status !== 201)
          throw new Error(`placement ${tag}-${i}: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { rate: PLACEMENTS / ((performance.now() - start) / 1000), latencies };
}

function killInstances(): void {
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const env = readFileSync(`/proc/${p}/environ`, "utf8").split("\0");
      if (nodeIds.some((id) => env.includes(`BERTH_NODE_ID=${id}`))) process.kill(Number(p), "SIGKILL");
    } catch {
      // gone, or not ours
    }
  }
}

async function main(): Promise<void> {
  const pkg = sleepPackage(root, signer);
  const pg = await startPostgres();
  try {
    const addrs = await Promise.all(Array.from({ length: NODES }, (_, i) => startNode(i)));
    const leaders = {
      sqlite: await serve("sqlite", null),
      postgres: await serve("postgres", await pg.database("bench")),
    };
    for (const l of Object.values(leaders)) for (const a of addrs) await untilLeading(l, a);
    // Warm-up on each (package copy into the store, connections, JIT).
    for (const [engine, l] of Object.entries(leaders)) {
      const r = await call(l, "POST", "/placements", { package: pkg, name: `warm-${engine}` });
      if (r.status !== 201) throw new Error(`warm-up on ${engine}: ${JSON.stringify(r.body).slice(0, 400)}`);
    }
    const load = loadavg()[0] ?? 0;
    console.log(
      `store placements: one berth serve leading each store, ${NODES} node daemons, ${PLACEMENTS} placements per round, ${CONCURRENCY} in flight, ABBA; load ${load.toFixed(2)} on ${process.platform}`,
    );
    const results: Record<string, Array<{ rate: number; latencies: number[] }>> = { sqlite: [], postgres: [] };
    for (const [i, engine] of (["sqlite", "postgres", "postgres", "sqlite"] as const).entries()) {
      results[engine]?.push(await round(leaders[engine], pkg, `${engine}-${i}`));
    }
    const summary = (engine: string) => {
      const rounds = results[engine] ?? [];
      const rate = rounds.reduce((a, r) => a + r.rate, 0) / rounds.length;
      const all = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
      return {
        rate,
        p50: quantile(all, 0.5),
        p99: quantile(all, 0.99),
        max: all[all.length - 1] ?? 0,
        rounds: rounds.map((r) => r.rate),
      };
    };
    const s = summary("sqlite");
    const p = summary("postgres");
    for (const [label, r] of [
      ["SQLite (home file, synchronous=FULL)", s],
      ["PostgreSQL 15 (loopback, fsync off)", p],
    ] as const) {
      console.log(
        `  ${label.padEnd(40)} ${r.rate.toFixed(2).padStart(7)} placements/s (rounds ${r.rounds.map((x) => x.toFixed(2)).join(", ")})   p50 ${r.p50.toFixed(0).padStart(5)} ms   p99 ${r.p99.toFixed(0).padStart(5)} ms   max ${r.max.toFixed(0).padStart(5)} ms`,
      );
    }
    console.log(
      `  PostgreSQL / SQLite: ${((p.rate / s.rate) * 100).toFixed(0)}% of the rate, ${(p.p99 / s.p99).toFixed(2)}x the p99; load ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
    );
  } finally {
    for (const c of children.reverse()) c.kill("SIGTERM");
    await Promise.all(
      children.map((c) =>
        c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once("exit", r)) : null,
      ),
    );
    killInstances();
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
