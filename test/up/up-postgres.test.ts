/**
 * `berth up --database postgres://…` (issue 20) from outside, as a user runs it: the built `berth up` leading a session
 * of its own (setsid), its controller's state in a real PostgreSQL (a throwaway server, test/support/postgres.ts).
 * Judged from outside: no controller.db in the home, the sample agents' placements read from PostgreSQL over a
 * session of our own, their processes found in /proc, a CLI verb beside it on the same store, a terminal's Ctrl-C
 * (SIGINT to the whole process group) leaving no process of the home, and the store's chain verified by the CLI.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { berth, oneDocument } from "../cli/support.js";
import { berthBin } from "../support/built.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { processesUnder } from "../support/processes-under.js";

let server: TestPostgres;
const homes: string[] = [];
let up: ChildProcess | null = null;

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterEach(() => {
  if (up?.pid && up.exitCode === null) killQuietly(-up.pid, "SIGKILL");
  up = null;
  for (const home of homes) for (const pid of processesUnder(home)) killQuietly(pid, "SIGKILL");
});
afterAll(async () => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  await server?.stop();
});

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** The placements the store holds, read over a session of this test's own (never through berth). */
async function placementNames(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("SET default_transaction_read_only = on");
    const rows = (await client.query<{ name: string }>("SELECT name FROM mesh_placements ORDER BY name")).rows;
    return rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

describe("berth up on PostgreSQL (issue 20)", () => {
  it("keeps its controller's state in PostgreSQL, and a Ctrl-C to its process group stops every agent and daemon; the chain verifies", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-up-pg-"));
    homes.push(home);
    const url = await server.database();
    const child = spawn(
      "setsid",
      [process.execPath, berthBin(), "up", "--no-kubernetes", "--port", "0", "--data-dir", home, "--database", url],
      {
        env: { ...process.env, BERTH_HOME: home, NO_COLOR: "1", BERTH_DATABASE_URL: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    up = child;
    let out = "";
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    const deadline = Date.now() + 180_000;
    while (!out.includes("ready; press Ctrl-C")) {
      if (child.exitCode !== null)
        throw new Error(`berth up exited (${child.exitCode}) before it was ready: ${out.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`berth up not ready in time: ${out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    expect(existsSync(join(home, "controller.db")), "no SQLite store beside a PostgreSQL one").toBe(false);
    const placed = await placementNames(url);
    expect(placed, "the sample agents' placements are in PostgreSQL").toContain("heartbeat");
    // three node daemons, and at least one process per sample agent
    expect(processesUnder(home).length, out).toBeGreaterThanOrEqual(5);
    // A verb beside it, on the same store by the variable.
    const listed = await berth(home, ["instances", "--json"], { BERTH_DATABASE_URL: url });
    expect(listed.code, listed.stderr).toBe(0);
    const instances = (oneDocument(listed, "instances") as { placements: Array<{ name: string }> }).placements
      .map((p) => p.name)
      .sort();
    expect(instances).toEqual(placed);

    process.kill(-(child.pid as number), "SIGINT");
    expect(await exited, out).toBe(0);
    expect(processesUnder(home), out).toEqual([]);

    const verified = await berth(home, [
      "audit",
      "verify",
      "--database",
      url,
      "--key-file",
      join(home, "keys", "controller.key"),
      "--json",
    ]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(oneDocument(verified, "audit verify")).toMatchObject({ ok: true });
    expect(existsSync(join(home, "controller.db"))).toBe(false);
  }, 300_000);
});
