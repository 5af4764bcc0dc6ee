/**
 * Failover time against the leader lease's TTL (issue 20): two real `berth serve` processes on one controller store
 * (a SQLite home on this machine), `BERTH_LEADER_TTL_MS` = 1, 2 and 4 s; the leader is killed with SIGKILL (no
 * release) and the time until the follower's pid holds `berth_leader` (read read-only from the store) is measured,
 * three times per TTL. The design bound is TTL + one renewal interval (TTL/5) + the follower's step; the ratio to the
 * TTL is printed. A clean stop (SIGTERM releases the row) is measured once per TTL for comparison. Figures only.
 * Run after `npm run build:test` (scripts/bench does).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openDatabase } from "../../src/store/sqlite.js";
import { numberFlag } from "../support.js";

const MAIN = resolve("dist/src/cli/main.js");
const TRIALS = numberFlag("--trials", 3);

function leaderPid(db: string): number | null {
  try {
    const d = openDatabase(db, { readonly: true });
    try {
      const row = d.prepare("SELECT pid, released_ms FROM berth_leader WHERE id = 1").get() as { pid: number; released_ms: number | null } | undefined;
      return row && row.released_ms === null ? row.pid : null;
    } finally {
      d.close();
    }
  } catch {
    return null;
  }
}

function serve(home: string, ttlMs: number): Promise<ReturnType<typeof spawn>> {
  const p = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data-dir", home, "--json", "--log-level", "silent"], {
    env: { ...process.env, BERTH_HOME: home, BERTH_LEADER_TTL_MS: String(ttlMs) },
    stdio: ["ignore", "pipe", "ignore"],
  });
  return new Promise((res, rej) => {
    p.stdout?.once("data", () => res(p));
    p.once("exit", (code) => rej(new Error(`berth serve exited ${code}`)));
  });
}

async function until<T>(probe: () => T | null, deadlineMs: number): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = probe();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function trial(ttlMs: number, signal: "SIGKILL" | "SIGTERM"): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), "berth-bench-failover-"));
  execFileSync(process.execPath, [MAIN, "keys", "new", "--json"], { env: { ...process.env, BERTH_HOME: home } });
  const db = join(home, "controller.db");
  const a = await serve(home, ttlMs);
  await until(() => (leaderPid(db) === a.pid ? true : null), 10_000);
  const b = await serve(home, ttlMs);
  try {
    const gone = new Promise((r) => a.once("exit", r));
    const t0 = Date.now();
    a.kill(signal);
    await gone;
    await until(() => (leaderPid(db) === b.pid ? true : null), ttlMs * 4 + 10_000);
    return Date.now() - t0;
  } finally {
    a.kill("SIGKILL");
    b.kill("SIGKILL");
    rmSync(home, { recursive: true, force: true });
  }
}

console.log(`leader failover: two berth serve on one SQLite store, ${TRIALS} SIGKILLs per TTL`);
for (const ttl of [1_000, 2_000, 4_000]) {
  const times: number[] = [];
  for (let i = 0; i < TRIALS; i++) times.push(await trial(ttl, "SIGKILL"));
  const worst = Math.max(...times);
  const bound = ttl + ttl / 5;
  console.log(
    `  TTL ${String(ttl).padStart(5)} ms: kill -9 → new leader ${times.map((t) => `${t} ms`).join(", ")}; worst ${((worst / ttl) * 100).toFixed(0)}% of TTL (bound TTL + TTL/5 = ${bound} ms + one step)`,
  );
  const clean = await trial(ttl, "SIGTERM");
  console.log(`  TTL ${String(ttl).padStart(5)} ms: clean stop (released) → new leader ${clean} ms (${((clean / ttl) * 100).toFixed(0)}% of TTL)`);
}
