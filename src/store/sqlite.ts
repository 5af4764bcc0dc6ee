/**
 * SQLite behind one small interface: open with the pragmas every berth database needs, and run write
 * transactions that begin IMMEDIATE (so a tip read and its insert are serialised across processes) and notify
 * listeners only after the commit (spec/audit-chain.md §6: nobody observes an event that may still roll back).
 */
import { chmodSync, closeSync, existsSync, openSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { nodeSqliteModule, openNodeSqlite } from "./node-sqlite.js";

export type Db = Database.Database;

declare const writeTxBrand: unique symbol;
/** Proof that the caller is inside an open write transaction; only `withWriteTx` makes one. */
export interface WriteTx {
  readonly [writeTxBrand]: true;
  readonly db: Db;
  /** Runs after the transaction commits; dropped if it rolls back. */
  afterCommit(fn: () => void): void;
}

/**
 * Opens (creating if needed) a database. A writable database on disk is the owner's alone (issue 12): the file is
 * created 0600 before SQLite opens it, so it is never readable by others even for an instant, and it and its -wal
 * and -shm files are tightened to 0600 after the open (SQLite gives those the main file's mode; an older berth's
 * 0644 file is tightened here too).
 */
export function openDatabase(path: string, options: { readonly?: boolean } = {}): Db {
  const writable = !(options.readonly ?? false);
  const onDisk = path !== "" && path !== ":memory:" && !path.startsWith("file:");
  if (writable && onDisk) closeSync(openSync(path, "a", 0o600));
  const db = openWithDriver(path, options.readonly ?? false);
  db.pragma("busy_timeout = 10000");
  if (writable) {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
  }
  db.pragma("foreign_keys = ON");
  if (writable && onDisk) for (const file of [path, `${path}-wal`, `${path}-shm`]) keepPrivate(file);
  return db;
}

/**
 * Which SQLite binding this process uses (issue 36): better-sqlite3 where its compiled addon loads (every install that
 * ran its install script), else Node's own `node:sqlite` (Node 24, 22.13+), so `scripts/up` compiles nothing where the
 * runtime has it. `BERTH_SQLITE_DRIVER=node|better-sqlite3` chooses (the Node 24 test tier runs both).
 */
type SqliteDriver = "better-sqlite3" | "node:sqlite";
let chosen: SqliteDriver | undefined;

function sqliteDriver(): SqliteDriver {
  if (chosen !== undefined) return chosen;
  const wanted = process.env.BERTH_SQLITE_DRIVER;
  if (wanted === "node") {
    if (nodeSqliteModule() === undefined)
      throw new Error(`BERTH_SQLITE_DRIVER=node: this Node (${process.version}) has no node:sqlite (Node 22.13+ has)`);
    chosen = "node:sqlite";
  } else if (wanted === "better-sqlite3" || nodeSqliteModule() === undefined) {
    chosen = "better-sqlite3";
  } else {
    try {
      new Database(":memory:").close();
      chosen = "better-sqlite3";
    } catch {
      chosen = "node:sqlite"; // its addon is not built for this Node (scripts/up installs without compiling it)
    }
  }
  return chosen;
}

function openWithDriver(path: string, readonly: boolean): Db {
  const sqlite = sqliteDriver() === "node:sqlite" ? nodeSqliteModule() : undefined;
  if (sqlite !== undefined) return openNodeSqlite(sqlite, path, { readonly });
  return new Database(path, { readonly, fileMustExist: readonly });
}

function keepPrivate(file: string): void {
  if (!existsSync(file) || (statSync(file).mode & 0o077) === 0) return;
  try {
    chmodSync(file, 0o600);
  } catch {
    // not ours to change (another user's database opened for writing): SQLite's own permission checks apply
  }
}

const depth = new WeakMap<Db, WriteTx>();

/**
 * Runs `fn` inside BEGIN IMMEDIATE … COMMIT. Nested calls join the outer transaction. Synchronous by design:
 * better-sqlite3 transactions cannot span an await, which is exactly the guarantee we want.
 */
export function withWriteTx<T>(db: Db, fn: (tx: WriteTx) => T): T {
  const outer = depth.get(db);
  if (outer) return fn(outer);
  const callbacks: Array<() => void> = [];
  const tx = { db, afterCommit: (cb: () => void) => callbacks.push(cb) } as unknown as WriteTx;
  const run = db.transaction(() => {
    depth.set(db, tx);
    try {
      return fn(tx);
    } finally {
      depth.delete(db);
    }
  });
  const value = run.immediate();
  for (const cb of callbacks) cb();
  return value;
}

export class SchemaError extends Error {
  override name = "SchemaError";
}

/** Read-only check for verbs that only read: refuse tables written by a newer berth. */
export function assertSchemaNotNewer(db: Db, component: string, version: number): void {
  const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'berth_schema'").get();
  if (!table) return;
  const row = db.prepare("SELECT version FROM berth_schema WHERE component = ?").get(component) as
    | { version: number }
    | undefined;
  if (row && row.version > version) {
    throw new SchemaError(
      `the ${component} tables in this database are schema version ${row.version}, newer than this berth understands (${version}); upgrade berth or use a database written by this version`,
    );
  }
}

/**
 * Records and checks each component's schema version, so an older berth refuses a database written by a newer
 * one instead of misreading it.
 */
export function ensureSchema(tx: WriteTx, component: string, version: number, migrate: (from: number) => void): void {
  tx.db.exec("CREATE TABLE IF NOT EXISTS berth_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)");
  const row = tx.db.prepare("SELECT version FROM berth_schema WHERE component = ?").get(component) as
    | { version: number }
    | undefined;
  const found = row?.version ?? 0;
  if (found > version) {
    throw new SchemaError(
      `the ${component} tables in this database are schema version ${found}, newer than this berth understands (${version}); upgrade berth or use a database written by this version`,
    );
  }
  if (found < version) {
    migrate(found);
    tx.db
      .prepare(
        "INSERT INTO berth_schema (component, version) VALUES (?, ?) ON CONFLICT(component) DO UPDATE SET version = excluded.version",
      )
      .run(component, version);
  }
}
