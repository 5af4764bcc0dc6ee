/**
 * Issue 19: a controller transaction marked `durable: false` commits without the WAL fsync (src/store/engine.ts
 * TransactionOptions). Judged from outside the process that commits: the fsyncs it makes are counted by strace, and
 * its rows are read from the file after a kill -9, read-only.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { requireBuild } from "../mesh/harness.js";

const ENGINE = resolve("dist/src/store/sqlite-engine.js");
const hasStrace = spawnSync("strace", ["-V"]).status === 0;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A child that opens `db` on the SQLite engine and runs `body` (an async function of `engine`), then prints "done". */
function script(db: string, body: string): string {
  return `import { SqliteEngine } from ${JSON.stringify(ENGINE)};
const engine = SqliteEngine.open(${JSON.stringify(db)});
await engine.transaction((tx) => tx.exec("CREATE TABLE IF NOT EXISTS t (n INTEGER)"));
// A write before "ready", so the WAL's header (synced once when a WAL starts) is written before the counting.
await engine.transaction((tx) => tx.run("INSERT INTO t VALUES (0)"));
console.log("ready");
await (${body})(engine);
console.log("done");
${"await new Promise((r) => setTimeout(r, 60_000));"}`;
}

/** fsyncs of the database's WAL the child made between printing "ready" and "done", counted by strace from outside. */
function walSyncsAfterReady(db: string, body: string): number {
  const dir = mkdtempSync(join(tmpdir(), "berth-strace-"));
  dirs.push(dir);
  const trace = join(dir, "trace");
  const r = spawnSync(
    "strace",
    [
      "-f",
      "-qq",
      "-y",
      "-e",
      "trace=fsync,fdatasync,write",
      "-o",
      trace,
      process.execPath,
      "--input-type=module",
      "-e",
      script(db, body).replace("await new Promise((r) => setTimeout(r, 60_000));", ""),
    ],
    {
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(r.status, r.stderr).toBe(0);
  const lines = readFileSync(trace, "utf8").split("\n");
  const ready = lines.findIndex((l) => l.includes('"ready\\n"'));
  const done = lines.findIndex((l) => l.includes('"done\\n"'));
  expect(ready, "the child's ready line is in the trace").toBeGreaterThan(0);
  expect(done, "the child's done line is in the trace").toBeGreaterThan(ready);
  // Closing the connection at exit checkpoints (and syncs) the WAL: that comes after "done" and is not counted.
  return lines.slice(ready, done).filter((l) => /sync\(\d+<[^>]*-wal>/.test(l)).length;
}

describe("commits that skip the fsync (issue 19)", { timeout: 60_000 }, () => {
  it.skipIf(!hasStrace && process.env.CI !== "true")(
    "durable: false commits make no WAL fsync; a durable commit, or one that requires it, makes one",
    () => {
      requireBuild();
      const dir = mkdtempSync(join(tmpdir(), "berth-unsynced-"));
      dirs.push(dir);
      const db = join(dir, "store.db");
      const insert = (durable: boolean, require = false) =>
        `await engine.transaction(async (tx) => { await tx.run("INSERT INTO t VALUES (1)"); ${require ? "tx.requireDurable();" : ""} }, { durable: ${durable} });`;
      expect(
        walSyncsAfterReady(db, `async (engine) => { for (let i = 0; i < 5; i++) { ${insert(false)} } }`),
        "five unsynced commits",
      ).toBe(0);
      expect(walSyncsAfterReady(db, `async (engine) => { ${insert(true)} }`), "one durable commit").toBe(1);
      expect(
        walSyncsAfterReady(db, `async (engine) => { ${insert(false, true)} }`),
        "an unsynced commit that requires durability",
      ).toBe(1);
      // After an unsynced commit the connection is back at synchronous=FULL: the next default commit syncs.
      expect(
        walSyncsAfterReady(db, `async (engine) => { ${insert(false)} ${insert(true)} }`),
        "unsynced, then durable",
      ).toBe(1);
    },
  );

  it("an unsynced commit survives kill -9 of the process that made it", async () => {
    requireBuild();
    const dir = mkdtempSync(join(tmpdir(), "berth-unsynced-kill-"));
    dirs.push(dir);
    const db = join(dir, "store.db");
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        script(
          db,
          `async (engine) => { for (let i = 10; i < 20; i++) await engine.transaction((tx) => tx.run("INSERT INTO t VALUES (?)", [i]), { durable: false }); }`,
        ),
      ],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let out = "";
    await new Promise<void>((done) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("done")) done();
      });
    });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const read = new Database(db, { readonly: true });
    try {
      expect(
        (read.prepare("SELECT COUNT(*) AS n FROM t WHERE n >= 10").get() as { n: number }).n,
        "rows 10..19, unsynced",
      ).toBe(10);
    } finally {
      read.close();
    }
  });
});
