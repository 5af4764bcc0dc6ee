/**
 * Issue 33 item 8: no database password in a process list. A real `berth serve` on a real PostgreSQL (trust
 * authentication: the password is carried, never checked, so the test needs no secret of its own), judged from
 * /proc/PID/cmdline, which every local user can read.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAIN, requireBuild } from "../mesh/harness.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { killAll, runNode, spawnNode } from "../support/process.js";

const PASSWORD = "pw-only-in-the-test-7f3a";
let pg: TestPostgres;
beforeAll(async () => {
  requireBuild();
  pg = await startPostgres();
}, 120_000);
afterAll(() => pg?.stop());
afterEach(() => killAll());

/** The test database's address with a password in it (trust auth accepts it). */
async function addressWithPassword(name: string): Promise<string> {
  const u = new URL(await pg.database(name));
  u.password = PASSWORD;
  return u.toString();
}

const cmdlineOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");

async function serveAndReadCmdline(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), "berth-dbpw-"));
  const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home, "--json", ...args], { env });
  await serve.waitForOutput(/\n/, 60_000);
  expect(JSON.parse(serve.output().split("\n")[0] as string)).toHaveProperty("url");
  const cmdline = cmdlineOf(serve.child.pid as number);
  serve.child.kill("SIGTERM");
  await serve.exited();
  return cmdline;
}

describe("the database password and the process list", { timeout: 120_000 }, () => {
  it("--database with a password is refused before anything opens, naming BERTH_DATABASE_URL, @FILE and PGPASSFILE", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-dbpw-"));
    const r = await runNode([
      MAIN,
      "serve",
      "--port",
      "0",
      "--data-dir",
      home,
      "--database",
      await addressWithPassword("refused"),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("BERTH_DATABASE_URL");
    expect(r.stderr).toContain("--database @FILE");
    expect(r.stderr).toContain("PGPASSFILE");
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
    // The same for a verb that opens the store.
    const verb = await runNode([
      MAIN,
      "agents",
      "--json",
      "--data-dir",
      home,
      "--database",
      await addressWithPassword("refused2"),
    ]);
    expect(verb.code).toBe(2);
    expect(verb.stderr).toContain("BERTH_DATABASE_URL");
  });

  it("BERTH_DATABASE_URL carries it: berth serve runs on PostgreSQL and its command line holds no password", async () => {
    const cmdline = await serveAndReadCmdline([], { BERTH_DATABASE_URL: await addressWithPassword("fromenv") });
    expect(cmdline).toContain(" serve ");
    expect(cmdline).not.toContain(PASSWORD);
  });

  it("--database @FILE carries it (a 0600 file): berth serve runs and its command line holds only the file's name; a file others may read is refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-dbpw-file-"));
    const file = join(dir, "database.url");
    writeFileSync(file, `${await addressWithPassword("fromfile")}\n`, { mode: 0o600 });
    const cmdline = await serveAndReadCmdline(["--database", `@${file}`]);
    expect(cmdline).toContain(`@${file}`);
    expect(cmdline).not.toContain(PASSWORD);
    chmodSync(file, 0o644);
    const r = await runNode([
      MAIN,
      "serve",
      "--port",
      "0",
      "--data-dir",
      mkdtempSync(join(tmpdir(), "berth-dbpw-")),
      "--database",
      `@${file}`,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("chmod 600");
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
  });
});
