/**
 * Store engines for tests that run on both (issue 20): a fresh SQLite file in a temporary directory, or a fresh
 * database on one throwaway PostgreSQL per test file (postgres.ts; it never skips: no PostgreSQL fails the tier).
 *
 *   const engines = engineHarness();             // at module level; afterEach/afterAll are registered
 *   const e = await engines.open("postgres");    // a fresh, empty store
 *   const again = await engines.reopen(e);       // a second connection to the same store (another process)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";
import type { EngineKind, StoreEngine } from "../../src/store/engine.js";
import { PostgresEngine } from "../../src/store/postgres-engine.js";
import { SqliteEngine } from "../../src/store/sqlite-engine.js";
import { startPostgres, type TestPostgres } from "./postgres.js";

export const ENGINE_KINDS = ["sqlite", "postgres"] as const satisfies readonly EngineKind[];

export interface EngineHarness {
  open(kind: EngineKind): Promise<StoreEngine>;
  reopen(engine: StoreEngine): Promise<StoreEngine>;
}

export function engineHarness(): EngineHarness {
  const dirs: string[] = [];
  const engines: StoreEngine[] = [];
  const urls = new WeakMap<StoreEngine, string>();
  let server: TestPostgres | null = null;
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  afterAll(async () => {
    await server?.stop();
    server = null;
  });
  const keep = (e: StoreEngine, url: string) => {
    engines.push(e);
    urls.set(e, url);
    return e;
  };
  return {
    async open(kind) {
      if (kind === "postgres") {
        server ??= await startPostgres();
        const url = await server.database();
        return keep(await PostgresEngine.open(url), url);
      }
      const dir = mkdtempSync(join(tmpdir(), "berth-engine-"));
      dirs.push(dir);
      const path = join(dir, "controller.db");
      return keep(SqliteEngine.open(path), path);
    },
    async reopen(engine) {
      const where = urls.get(engine);
      if (where === undefined) throw new Error("reopen: this engine was not opened by the harness");
      return keep(engine.kind === "postgres" ? await PostgresEngine.open(where) : SqliteEngine.open(where), where);
    },
  };
}
