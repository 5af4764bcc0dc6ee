/**
 * The network world's PostgreSQL (issue 37): one throwaway server (test/support/postgres.ts) per campaign slot, reused
 * by the slot's worlds one after another, each on a database of its own; the process tree a `pg-pause` stops; a
 * world's database dropped at its teardown.
 */
import { readFileSync } from "node:fs";
import pgLib from "pg";
import { startPostgres, type TestPostgres } from "../../support/postgres.js";

const openSlots = new Set<PostgresSlot>();

/** Stops every slot's server (the campaign closing on a signal). */
export async function closeOpenSlots(): Promise<void> {
  for (const s of [...openSlots]) await s.stop();
}

/** The postmaster and every backend it forked (what `pg-pause` stops and heal continues). */
export function postgresTree(server: TestPostgres | null): number[] {
  if (!server || server.pid <= 0) return [];
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    let kids: number[] = [];
    try {
      kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").split(" ").filter(Boolean).map(Number);
    } catch {
      // gone
    }
    for (const k of kids) walk(k);
  };
  walk(server.pid);
  return out;
}

async function answers(url: string): Promise<boolean> {
  const client = new pgLib.Client({ connectionString: url, connectionTimeoutMillis: 3_000, query_timeout: 5_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * One PostgreSQL server per campaign slot, reused by the slot's worlds one after another, each world on a database
 * of its own (dropped at its teardown): initdb and a server start (seconds of CPU at load 30) are paid once per slot,
 * not once per world. Only one world uses a slot's server at a time, so its faults (kill -9, restart, SIGSTOP of
 * every PostgreSQL process) strike that world alone, as with a server per world. A world that leaves it paused or
 * dead (a teardown on an error) hands it on continued, or restarted.
 */
export class PostgresSlot {
  private server: TestPostgres | null = null;
  /** A start in flight: a signal that closes the campaign meanwhile stops the server once it is up, never orphans it. */
  private starting: Promise<TestPostgres> | null = null;

  async take(): Promise<TestPostgres> {
    if (this.server === null) {
      openSlots.add(this);
      this.starting = startPostgres();
      try {
        this.server = await this.starting;
      } finally {
        this.starting = null;
      }
      return this.server;
    }
    for (const pid of postgresTree(this.server)) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone
      }
    }
    if (!(await answers(this.server.url))) await this.server.restart();
    return this.server;
  }

  async stop(): Promise<void> {
    openSlots.delete(this);
    const pending = this.starting;
    const s = this.server ?? (pending ? await pending.catch(() => null) : null);
    this.server = null;
    await s?.stop().catch(() => undefined);
  }
}

/** Drops a world's database on its slot's server (best-effort: a throwaway server keeps what it could not drop). */
export async function dropDatabase(server: TestPostgres, databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) return;
  const client = new pgLib.Client({
    connectionString: server.url,
    connectionTimeoutMillis: 5_000,
    query_timeout: 15_000,
  });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } catch {
    // left on the throwaway server
  } finally {
    await client.end().catch(() => undefined);
  }
}
