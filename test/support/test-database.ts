/**
 * Which engine the controller suite runs on (issue 20): `BERTH_TEST_DATABASE=postgres` runs the controller's store on
 * a throwaway PostgreSQL 15 (postgres.ts: one server per test file, one fresh database per controller home), anything
 * else on SQLite in the home, as before. scripts/test runs the chosen files a second time with it set.
 *
 *   const database = await testDatabaseFor(home);          // undefined on SQLite
 *   MeshController.open({ dataDir: home, ..., ...databaseOption(database) });
 *   spawn(..., { env: { ...databaseEnv(database) } });     // a child process on the same store
 *
 * It never skips: with BERTH_TEST_DATABASE=postgres and no PostgreSQL the tier fails, naming what is missing.
 * Only for vitest test files and their supports (it registers an afterAll); a worker process is given the URL.
 */
import { join, resolve } from "node:path";
import pg from "pg";
import { afterAll } from "vitest";
import { numberPlaceholders } from "../../src/store/postgres-engine.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { startPostgres, type TestPostgres } from "./postgres.js";

export const TEST_ENGINE: "sqlite" | "postgres" =
  process.env.BERTH_TEST_DATABASE === "postgres" ? "postgres" : "sqlite";

let server: Promise<TestPostgres> | null = null;
const byHome = new Map<string, Promise<string>>();

// The file's server is stopped after its last test. Registered while the file is collected: a hook registered from
// inside a running test (where the first testDatabaseFor call usually is) never ran, and every file of the PostgreSQL
// tier left its server running after the suite ended.
if (TEST_ENGINE === "postgres") {
  afterAll(async () => {
    const s = server;
    server = null;
    byHome.clear();
    if (s) await (await s).stop();
  });
}

/** The store address for the controller in `home`: a database of its own on PostgreSQL, undefined on SQLite. */
export function testDatabaseFor(home: string): Promise<string | undefined> {
  if (TEST_ENGINE === "sqlite") return Promise.resolve(undefined);
  const key = resolve(home);
  let url = byHome.get(key);
  if (url === undefined) {
    server ??= startPostgres();
    const s = server;
    url = s.then((pg) => pg.database());
    byHome.set(key, url);
  }
  return url;
}

/** `{ database }` for MeshController.open / startServer, or nothing. */
export function databaseOption(database: string | undefined): { database?: string } {
  return database ? { database } : {};
}

/** The environment a child process (a CLI verb, a worker) needs to open the same store. */
export function databaseEnv(database: string | undefined): Record<string, string> {
  return database ? { BERTH_DATABASE_URL: database } : {};
}

/**
 * Rows of the controller store of `home`, read from outside and read-only, as a test judges a store: its
 * `controller.db` opened read-only on SQLite, a read-only session of the test's own on PostgreSQL.
 */
export async function readStoreRows<T>(
  database: string | null | undefined,
  home: string,
  sql: string,
  params: ReadonlyArray<string | number> = [],
): Promise<T[]> {
  if (!database) {
    const db = openDatabase(join(home, "controller.db"), { readonly: true });
    try {
      return db.prepare(sql).all(...params) as T[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({
    connectionString: database,
    options: "-c default_transaction_read_only=on",
    connectionTimeoutMillis: 5_000,
  });
  await client.connect();
  try {
    return (await client.query(numberPlaceholders(sql), [...params])).rows as T[];
  } finally {
    await client.end();
  }
}
