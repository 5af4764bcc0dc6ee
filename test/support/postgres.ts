/**
 * A throwaway PostgreSQL 15 for the tests that need the real database (issue 20): `initdb` in a temporary directory,
 * `postgres` on a free loopback port with its socket in that directory, run as an unprivileged user when the tests
 * run as root (PostgreSQL refuses root), and torn down with everything it wrote. Nothing is created on the system
 * beyond the temporary directory.
 *
 * It never skips: a machine without PostgreSQL fails the tier loudly, naming what is missing (in CI and outside it).
 * Binaries come from $BERTH_TEST_PG_BIN, else Debian's /usr/lib/postgresql/15/bin.
 *
 *   const pg = await startPostgres();           // one server per test file
 *   const url = await pg.database("case1");     // a fresh database on it, as postgres://…
 *   await pg.stop();                            // in afterAll
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export const PG_BIN = process.env.BERTH_TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const SUPERUSER = "berth";
/** The unprivileged account the server runs as when the tests run as root. */
const RUN_AS = { uid: 65534, gid: 65534 };

export interface TestPostgres {
  /** postgres://berth@127.0.0.1:PORT/postgres: the maintenance database. */
  readonly url: string;
  readonly port: number;
  /** The server's pid: a fault test may SIGSTOP or kill it (restart with `restart()`). */
  readonly pid: number;
  /** Creates a fresh database and returns its URL. */
  database(name?: string): Promise<string>;
  /** Stops the server (fast shutdown) and starts it again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const asRoot = () => process.getuid?.() === 0;
const runAs = asRoot() ? RUN_AS : undefined;

function binary(name: string): string {
  const path = join(PG_BIN, name);
  if (!existsSync(path)) {
    throw new Error(
      `PostgreSQL is required for this test tier and ${path} does not exist: install PostgreSQL 15 (Debian: apt-get install postgresql-15) or set BERTH_TEST_PG_BIN`,
    );
  }
  return path;
}

async function waitReady(url: string, child: ChildProcess, log: () => string, deadlineMs = 30_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  let last: unknown = null;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `postgres exited (${child.exitCode ?? child.signalCode}) before accepting connections:\n${log()}`,
      );
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      await client.end();
      return;
    } catch (error) {
      last = error;
      await client.end().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`postgres did not accept connections within ${deadlineMs} ms (${String(last)}):\n${log()}`);
}

export async function startPostgres(): Promise<TestPostgres> {
  const initdb = binary("initdb");
  const postgres = binary("postgres");
  const root = mkdtempSync(join(tmpdir(), "berth-pg-"));
  const data = join(root, "data");
  if (runAs) {
    chownSync(root, runAs.uid, runAs.gid);
    chmodSync(root, 0o700);
  }
  const spawnOpts = runAs ? { uid: runAs.uid, gid: runAs.gid } : {};
  try {
    execFileSync(initdb, ["-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"], {
      ...spawnOpts,
      stdio: "pipe",
      cwd: root,
    });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    const e = error as { stderr?: Buffer; message: string };
    throw new Error(`initdb failed: ${e.stderr?.toString() ?? e.message}`);
  }
  let port = await freePort();
  let output = "";
  let child: ChildProcess;
  let url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  const launch = async () => {
    output = "";
    // fsync off: a throwaway server; the tests judge berth's transactions, not the disk's durability.
    child = spawn(
      postgres,
      [
        "-D",
        data,
        "-p",
        String(port),
        "-k",
        root,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "max_connections=200",
      ],
      {
        ...spawnOpts,
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    await waitReady(url, child, () => output.slice(-4000));
  };
  const halt = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGCONT");
    child.kill("SIGINT"); // fast shutdown: roll back open transactions, close connections
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  // The port was free when asked for, not necessarily when postgres binds it (another test's server, a client's
  // source port): a server that could not bind it starts again on another.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      await halt().catch(() => undefined);
      if (
        attempt < 5 &&
        /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(String(error))
      ) {
        port = await freePort();
        url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
        continue;
      }
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
  }
  return {
    url,
    port,
    get pid() {
      return child.pid ?? -1;
    },
    async database(name) {
      const db = name ?? `t_${randomBytes(6).toString("hex")}`;
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(db))
        throw new Error(`test database name ${db} must be a plain lower-case identifier`);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${db}`);
      } finally {
        await client.end();
      }
      return `postgres://${SUPERUSER}@127.0.0.1:${port}/${db}`;
    },
    async restart() {
      await halt();
      await launch();
    },
    async stop() {
      await halt();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
