/**
 * The copy of `berth migrate` against a real PostgreSQL 15 (test/support/postgres.ts; never skipped): a controller
 * store made on SQLite by the controller itself, moved whole, and every refusal leaves both sides as they were.
 * The verb with real processes and a node is test/mesh-controller/migrate-processes.test.ts.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startPostgres, type TestPostgres } from "../../test/support/postgres.js";
import { EngineChain } from "../chain/engine-chain.js";
import { generateSigningKey } from "../keys/key-file.js";
import { MeshController } from "../mesh/controller/index.js";
import { MemoryConnector } from "../mesh/transport/memory.js";
import { migrateSqliteToEngine } from "./migrate.js";
import { PostgresEngine } from "../store/postgres-engine.js";

let server: TestPostgres | null = null;
const dirs: string[] = [];
const engines: PostgresEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  await server?.stop();
});

async function target(): Promise<{ url: string; engine: PostgresEngine }> {
  server ??= await startPostgres();
  const url = await server.database();
  const engine = await PostgresEngine.open(url);
  engines.push(engine);
  return { url, engine };
}

/** A controller store made by the controller on SQLite, with some history. */
async function sqliteStore(key = generateSigningKey()) {
  const dir = mkdtempSync(join(tmpdir(), "berth-migrate-src-"));
  dirs.push(dir);
  const c = await MeshController.open({ dataDir: dir, key, connector: new MemoryConnector() });
  await c.store.appendAll(
    Array.from({ length: 25 }, (_, i) => ({
      source: "trust",
      kind: "policy.load",
      payload: { file: `f${i}`, sha256: null, ok: true },
    })),
  );
  await c.close();
  return { dir, file: join(dir, "controller.db"), key };
}

const sql = <T>(file: string, q: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(q).all() as T[];
  } finally {
    db.close();
  }
};

const tablesOf = async (engine: PostgresEngine) =>
  (
    await engine.read((q) =>
      q.all<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"),
    )
  ).map((t) => t.tablename);

describe("berth migrate's copy (issue 20)", { timeout: 120_000 }, () => {
  it("moves the store whole: the same store id, epoch counter and chain, plus the move itself; the controller opens it on PostgreSQL", async () => {
    const src = await sqliteStore();
    const storeId = sql<{ store_id: string }>(src.file, "SELECT store_id FROM berth_store")[0]?.store_id;
    const events = sql<{ n: number }>(src.file, "SELECT COUNT(*) AS n FROM audit_event")[0]?.n as number;
    const { url, engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: src.file,
      target: engine,
      key: src.key,
      operator: { user: "op", via: "test" },
      reason: "why",
      clock: Date.now,
    });
    expect(r.kind).toBe("migrated");
    if (r.kind !== "migrated") return;
    expect(r).toMatchObject({ store_id: storeId, event: { seq: events } });
    expect(r.tables.audit_event).toBe(events);
    expect(existsSync(src.file)).toBe(false);
    expect(
      sql<{ store_id: string }>(r.source_moved_to as string, "SELECT store_id FROM berth_store")[0]?.store_id,
    ).toBe(storeId);

    const c = await MeshController.open({
      dataDir: src.dir,
      key: src.key,
      connector: new MemoryConnector(),
      database: url,
    });
    expect(c.authority.storeId).toBe(storeId);
    await c.close();
    const chain = await EngineChain.open(engine, src.key, "controller");
    expect(await chain.verifyStored()).toMatchObject({ ok: true, events: events + 1 });
    const [moved] = await chain.find({ kind: "controller.migrate" });
    expect(moved?.payload).toMatchObject({
      from: `sqlite:${src.file}`,
      store_id: storeId,
      reason: "why",
      operator: { user: "op" },
    });
    expect(String(moved?.payload.to)).not.toContain("@127.0.0.1:0");
  });

  it("carries the agent registry, with the agents an older home's agents.db listed (taken into the store when it was last opened)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-migrate-agents-"));
    dirs.push(dir);
    const legacy = new Database(join(dir, "agents.db"));
    legacy.exec(`CREATE TABLE agents (name TEXT PRIMARY KEY, target TEXT NOT NULL, spec_path TEXT NOT NULL, spec_text TEXT NOT NULL, intent TEXT NOT NULL, deployed_ms INTEGER NOT NULL);
                 INSERT INTO agents VALUES ('scout', 'kubernetes', '/s/scout.yaml', 'kind: Agent', 'i-scout', 1767225600000)`);
    legacy.close();
    const key = generateSigningKey();
    const c = await MeshController.open({ dataDir: dir, key, connector: new MemoryConnector() });
    await c.close();
    const { url, engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: join(dir, "controller.db"),
      target: engine,
      key,
      operator: {},
      reason: "x",
      clock: Date.now,
    });
    expect(r).toMatchObject({ kind: "migrated", tables: { agent_registry: 1 } });
    expect(await engine.read((q) => q.all("SELECT name, target, intent, deployed_ms FROM agent_registry"))).toEqual([
      { name: "scout", target: "kubernetes", intent: "i-scout", deployed_ms: 1767225600000 },
    ]);
    // Opened on PostgreSQL from the same home: nothing is imported again (the file was set aside on SQLite).
    const again = await MeshController.open({ dataDir: dir, key, connector: new MemoryConnector(), database: url });
    await again.close();
    const chain = await EngineChain.open(engine, key, "controller");
    expect((await chain.find({ kind: "agent.registry.import" })).map((e) => e.payload.imported)).toEqual([
      [expect.objectContaining({ agent: "scout" })],
    ]);
    expect((await chain.verifyStored()).ok).toBe(true);
  });

  it("refuses a key that does not own the source's chain, and writes nothing anywhere", async () => {
    const src = await sqliteStore();
    const { engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: src.file,
      target: engine,
      key: generateSigningKey(),
      operator: {},
      reason: "x",
      clock: Date.now,
    });
    expect(r.kind).toBe("refused");
    if (r.kind === "refused") expect(r.reason).toMatch(/belongs to key .*--key-file/);
    expect(await tablesOf(engine)).toEqual([]);
    expect(existsSync(src.file)).toBe(true);
  });

  it("a failure in the middle of the copy rolls the whole transaction back: the target is left without a table", async () => {
    const src = await sqliteStore();
    // A value the PostgreSQL column refuses, in a table copied after the chain: the chain's rows are in by then.
    const db = new Database(src.file);
    db.prepare(
      "INSERT INTO mesh_targets (addr, tier, tier_source, learned_ms) VALUES ('h:1', 'paired', 'cli', 'not a number')",
    ).run();
    db.close();
    const { engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: src.file,
      target: engine,
      key: src.key,
      operator: {},
      reason: "x",
      clock: Date.now,
    });
    expect(r.kind).toBe("refused");
    if (r.kind === "refused")
      expect(r.reason).toMatch(/the new store refused a row of mesh_targets .*nothing was written/);
    expect(await tablesOf(engine)).toEqual([]);
    expect(existsSync(src.file)).toBe(true);
  });

  it("refuses a source whose chain does not verify", async () => {
    const src = await sqliteStore();
    const db = new Database(src.file);
    db.exec("DROP TRIGGER audit_event_no_update");
    db.prepare("UPDATE audit_event SET sig = ? WHERE seq = 5").run("0".repeat(128));
    db.close();
    const { engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: src.file,
      target: engine,
      key: src.key,
      operator: {},
      reason: "x",
      clock: Date.now,
    });
    expect(r.kind).toBe("refused");
    if (r.kind === "refused") expect(r.reason).toMatch(/does not verify at seq 5/);
    expect(await tablesOf(engine)).toEqual([]);
  });

  it("refuses a file that is not a controller store, naming what it lacks", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-migrate-x-"));
    dirs.push(dir);
    const db = new Database(join(dir, "other.db"));
    db.exec("CREATE TABLE t (x)");
    db.close();
    const { engine } = await target();
    const r = await migrateSqliteToEngine({
      sourcePath: join(dir, "other.db"),
      target: engine,
      key: generateSigningKey(),
      operator: {},
      reason: "x",
      clock: Date.now,
    });
    expect(r).toEqual({
      kind: "refused",
      reason: `${join(dir, "other.db")} is not a berth controller store (it has no berth_store table)`,
    });
  });
});
