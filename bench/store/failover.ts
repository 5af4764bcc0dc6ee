/**
 * Failover time against the leader lease's TTL (issue 20), on both engines in one run: two real `berth serve`
 * processes on one controller store — one SQLite home on this machine, or one PostgreSQL 15 database (a throwaway
 * server on loopback, test/support/postgres.ts; each server in its own home with the same controller key, as on two
 * machines) — with `BERTH_LEADER_TTL_MS` = 1, 2 and 4 s. The leader is killed with SIGKILL (no release) and the time
 * until the follower's pid holds `berth_leader` (read read-only from the store) is measured, three times per TTL and
 * engine. The design bound is TTL + one renewal interval (TTL/5) + the follower's step; the ratio to the TTL is
 * printed. A clean stop (SIGTERM releases the row) is measured once per TTL for comparison. Figures only.
 * `bash scripts/bench store/failover` [--trials 3].
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { openDatabase } from "../../src/store/sqlite.js";
import { startPostgres, type TestPostgres } from "../../test/support/postgres.js";
import { numberFlag } from "../support.js";

const MAIN = resolve("dist/src/cli/entry/main.js");
const TRIALS = numberFlag("--trials", 3);

type Engine = "sqlite" | "postgres";

async function leaderPid(engine: Engine, where: string): Promise<number | null> {
  try {
    if (engine === "sqlite") {
      const d = openDatabase(where, { readonly: true });
      try {
        const row = d.prepare("SELECT pid, released_ms FROM berth_leader WHERE id = 1").get() as
          | { pid: number; released_ms: number | null }
          | undefined;
        return row && row.released_ms === null ? row.pid : null;
      } finally {
        d.close();
      }
    }
    const client = new pg.Client({ connectionString: where, options: "-c default_transaction_read_only=on" });
    await client.connect();
    try {
      const row = (await client.query("SELECT pid, released_ms FROM berth_leader WHERE id = 1")).rows[0] as
        | { pid: number; released_ms: string | null }
        | undefined;
      return row && row.released_ms === null ? Number(row.pid) : null;
    } finally {
      await client.end();
    }
  } catch {
    return null;
  }
}

function serve(home: string, ttlMs: number, databaseUrl: string | null): Promise<ReturnType<typeof spawn>> {
  const env = {
    ...process.env,
    BERTH_HOME: home,
    BERTH_LEADER_TTL_MS: String(ttlMs),
    ...(databaseUrl ? { BERTH_DATABASE_URL: databaseUrl } : {}),
  };
  const p = spawn(
    process.execPath,
    [MAIN, "serve", "--port", "0", "--data-dir", home, "--json", "--log-level", "silent"],
    { env, stdio: ["ignore", "pipe", "ignore"] },
  );
  return new Promise((res, rej) => {
    p.stdout?.once("data", () => res(p));
    p.once("exit", (code) => rej(new Error(`berth serve exited ${code}`)));
  });
}

async function until(probe: () => Promise<boolean>, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function trial(
  engine: Engine,
  server: TestPostgres,
  ttlMs: number,
  signal: "SIGKILL" | "SIGTERM",
): Promise<number> {
  const root = mkdtempSync(join(tmpdir(), "berth-bench-failover-"));
  const homes = [join(root, "a"), join(root, "b")];
  execFileSync(process.execPath, [MAIN, "keys", "new", "--json"], { env: { ...process.env, BERTH_HOME: homes[0] } });
  const url = engine === "postgres" ? await server.database() : null;
  if (engine === "postgres") {
    mkdirSync(join(homes[1] as string, "keys"), { recursive: true, mode: 0o700 });
    copyFileSync(
      join(homes[0] as string, "keys", "controller.key"),
      join(homes[1] as string, "keys", "controller.key"),
    );
  } else homes[1] = homes[0] as string; // one machine: one home
  const where = url ?? join(homes[0] as string, "controller.db");
  const a = await serve(homes[0] as string, ttlMs, url);
  const b = await serve(homes[1] as string, ttlMs, url);
  try {
    await until(async () => (await leaderPid(engine, where)) === a.pid, 15_000);
    const gone = new Promise((r) => a.once("exit", r));
    const t0 = Date.now();
    a.kill(signal);
    await gone;
    await until(async () => (await leaderPid(engine, where)) === b.pid, ttlMs * 4 + 10_000);
    return Date.now() - t0;
  } finally {
    a.kill("SIGKILL");
    b.kill("SIGKILL");
    await new Promise((r) => (b.exitCode === null && b.signalCode === null ? b.once("exit", r) : r(null)));
    rmSync(root, { recursive: true, force: true });
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0] ?? 0, median: s[Math.floor(s.length / 2)] ?? 0, max: s[s.length - 1] ?? 0 };
};

const server = await startPostgres();
try {
  console.log(
    `leader failover: two berth serve on one store, ${TRIALS} SIGKILLs per TTL and engine; load ${(loadavg()[0] ?? 0).toFixed(2)}`,
  );
  for (const ttl of [1_000, 2_000, 4_000]) {
    for (const engine of ["sqlite", "postgres"] as const) {
      const times: number[] = [];
      for (let i = 0; i < TRIALS; i++) times.push(await trial(engine, server, ttl, "SIGKILL"));
      const { min, median, max } = stats(times);
      const bound = ttl + ttl / 5;
      const clean = await trial(engine, server, ttl, "SIGTERM");
      console.log(
        `  TTL ${String(ttl).padStart(5)} ms ${engine.padEnd(8)} kill -9 → new leader min ${min} / median ${median} / max ${max} ms = ${((max / ttl) * 100).toFixed(0)}% of TTL at worst (bound TTL + TTL/5 = ${bound} ms + one step); clean stop → ${clean} ms`,
      );
    }
  }
  console.log(`  load ${(loadavg()[0] ?? 0).toFixed(2)} at the end`);
} finally {
  await server.stop();
}
