/**
 * Node's own SQLite (`node:sqlite`, unflagged since Node 22.13 and in every Node 24) behind the part of
 * better-sqlite3's interface berth uses, so a runtime that has it needs no native addon at all (issue 36: compiling
 * better-sqlite3 was three of the first run's four minutes on 2 cores, where no prebuilt addon can be fetched).
 *
 * What it keeps of better-sqlite3's behaviour, because berth relies on it:
 * - `transaction(fn)` returns a function with `.immediate`/`.deferred`/`.exclusive`; a nested call is a savepoint;
 *   a throw rolls back and rethrows.
 * - `pragma(text, { simple })`, `pluck()`, an array argument spread into positional parameters, extra named keys
 *   ignored.
 * - An error's `code` is SQLite's name (`SQLITE_BUSY`, `SQLITE_FULL`, `SQLITE_CONSTRAINT_UNIQUE`), which berth's
 *   error texts and the node daemon's full-disk reserve read; node:sqlite gives `ERR_SQLITE_ERROR` and a number.
 * Rows are null-prototype objects (node:sqlite's), integers numbers; berth stores no BLOBs.
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type Database from "better-sqlite3";

type NodeSqliteModule = typeof import("node:sqlite");

/** node:sqlite where this runtime has it without a flag, else undefined. */
export function nodeSqliteModule(): NodeSqliteModule | undefined {
  try {
    return process.getBuiltinModule?.("node:sqlite") as NodeSqliteModule | undefined;
  } catch {
    return undefined; // ERR_UNKNOWN_BUILTIN_MODULE: an older Node, or one that wants --experimental-sqlite
  }
}

/** SQLite's primary result codes by number (sqlite3.h), the names better-sqlite3 puts in an error's `code`. */
const PRIMARY: Record<number, string> = {
  1: "ERROR",
  2: "INTERNAL",
  3: "PERM",
  4: "ABORT",
  5: "BUSY",
  6: "LOCKED",
  7: "NOMEM",
  8: "READONLY",
  9: "INTERRUPT",
  10: "IOERR",
  11: "CORRUPT",
  12: "NOTFOUND",
  13: "FULL",
  14: "CANTOPEN",
  15: "PROTOCOL",
  16: "EMPTY",
  17: "SCHEMA",
  18: "TOOBIG",
  19: "CONSTRAINT",
  20: "MISMATCH",
  21: "MISUSE",
  22: "NOLFS",
  23: "AUTH",
  24: "FORMAT",
  25: "RANGE",
  26: "NOTADB",
};
/** The extended codes berth or its tests may name. */
const EXTENDED: Record<number, string> = {
  261: "BUSY_RECOVERY",
  517: "BUSY_SNAPSHOT",
  262: "LOCKED_SHAREDCACHE",
  264: "READONLY_RECOVERY",
  520: "READONLY_CANTLOCK",
  776: "READONLY_ROLLBACK",
  1032: "READONLY_DBMOVED",
  275: "CONSTRAINT_CHECK",
  531: "CONSTRAINT_COMMITHOOK",
  787: "CONSTRAINT_FOREIGNKEY",
  1043: "CONSTRAINT_FUNCTION",
  1299: "CONSTRAINT_NOTNULL",
  1555: "CONSTRAINT_PRIMARYKEY",
  1811: "CONSTRAINT_TRIGGER",
  2067: "CONSTRAINT_UNIQUE",
  2323: "CONSTRAINT_VTAB",
  2579: "CONSTRAINT_ROWID",
};

/** SQLite's name for a node:sqlite error's number, as better-sqlite3 names it. */
export function sqliteCodeName(errcode: number): string {
  const name = EXTENDED[errcode] ?? PRIMARY[errcode & 0xff];
  return name === undefined ? `SQLITE_UNKNOWN_${errcode}` : `SQLITE_${name}`;
}

function translated(error: unknown): unknown {
  if (error instanceof Error) {
    const e = error as Error & { code?: unknown; errcode?: unknown };
    if (e.code === "ERR_SQLITE_ERROR" && typeof e.errcode === "number") e.code = sqliteCodeName(e.errcode);
  }
  return error;
}

function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw translated(error);
  }
}

type Params = unknown[];
type Bindable = Parameters<StatementSync["run"]>;

/** better-sqlite3 spreads an array argument into positional parameters; node:sqlite takes only single values. */
function bindable(params: Params): Bindable {
  return (params.some(Array.isArray) ? params.flat() : params) as Bindable;
}

function firstValue(row: unknown): unknown {
  if (row === undefined || row === null) return undefined;
  for (const key in row as Record<string, unknown>) return (row as Record<string, unknown>)[key];
  return undefined;
}

class NodeStatement {
  private plucked = false;

  constructor(
    private readonly stmt: StatementSync,
    readonly source: string,
  ) {
    stmt.setAllowUnknownNamedParameters?.(true);
  }

  pluck(on = true): this {
    this.plucked = on;
    return this;
  }

  run(...params: Params): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return guarded(() => this.stmt.run(...bindable(params)));
  }

  get(...params: Params): unknown {
    const row = guarded(() => this.stmt.get(...bindable(params)));
    return this.plucked ? firstValue(row) : row;
  }

  all(...params: Params): unknown[] {
    const rows = guarded(() => this.stmt.all(...bindable(params)));
    return this.plucked ? rows.map(firstValue) : rows;
  }

  *iterate(...params: Params): IterableIterator<unknown> {
    const rows = guarded(() => this.stmt.iterate(...bindable(params)));
    while (true) {
      const next = guarded(() => rows.next());
      if (next.done === true) return;
      yield this.plucked ? firstValue(next.value) : next.value;
    }
  }
}

type TransactionFunction<A extends unknown[], R> = ((...args: A) => R) & {
  deferred: (...args: A) => R;
  immediate: (...args: A) => R;
  exclusive: (...args: A) => R;
};

class NodeDatabase {
  readonly memory: boolean;
  readonly readonly: boolean;
  private savepoints = 0;

  constructor(
    private readonly sqlite: NodeSqliteModule,
    private readonly db: DatabaseSync,
    readonly name: string,
    readonly_: boolean,
  ) {
    this.memory = name === ":memory:" || name === "";
    this.readonly = readonly_;
  }

  get open(): boolean {
    return this.db.isOpen;
  }

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  prepare(sql: string): NodeStatement {
    return new NodeStatement(
      guarded(() => this.db.prepare(sql)),
      sql,
    );
  }

  exec(sql: string): this {
    guarded(() => this.db.exec(sql));
    return this;
  }

  pragma(text: string, options: { simple?: boolean } = {}): unknown {
    const rows = this.prepare(`PRAGMA ${text}`).all();
    return options.simple === true ? firstValue(rows[0]) : rows;
  }

  transaction<A extends unknown[], R>(fn: (...args: A) => R): TransactionFunction<A, R> {
    const wrap =
      (begin: string) =>
      (...args: A): R => {
        if (this.db.isTransaction) return this.savepoint(() => fn(...args));
        this.exec(begin);
        let value: R;
        try {
          value = fn(...args);
        } catch (error) {
          if (this.db.isTransaction) this.exec("ROLLBACK");
          throw error;
        }
        this.exec("COMMIT");
        return value;
      };
    return Object.assign(wrap("BEGIN"), {
      deferred: wrap("BEGIN DEFERRED"),
      immediate: wrap("BEGIN IMMEDIATE"),
      exclusive: wrap("BEGIN EXCLUSIVE"),
    });
  }

  private savepoint<R>(fn: () => R): R {
    const name = `berth_sp_${++this.savepoints}`;
    this.exec(`SAVEPOINT ${name}`);
    try {
      const value = fn();
      this.exec(`RELEASE ${name}`);
      return value;
    } catch (error) {
      if (this.db.isTransaction) this.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      throw error;
    } finally {
      this.savepoints--;
    }
  }

  /** A copy of the whole database into `destination` (SQLite's online backup), as better-sqlite3's `backup`. */
  async backup(destination: string): Promise<{ totalPages: number; remainingPages: number }> {
    const totalPages = await this.sqlite.backup(this.db, destination);
    return { totalPages, remainingPages: 0 };
  }

  close(): this {
    if (this.db.isOpen) this.db.close();
    return this;
  }
}

/**
 * Opens `path` on node:sqlite with better-sqlite3's face (the subset above). `readonly` opens an existing file only,
 * as better-sqlite3's `{ readonly: true, fileMustExist: true }`.
 */
export function openNodeSqlite(
  sqlite: NodeSqliteModule,
  path: string,
  options: { readonly: boolean },
): Database.Database {
  const location = path === "" ? ":memory:" : path;
  // DEP0210: `DatabaseSync` is being renamed `Database`; the new name where the runtime has it.
  const Database = (sqlite as { Database?: typeof DatabaseSync }).Database ?? sqlite.DatabaseSync;
  const db = guarded(() => new Database(location, { readOnly: options.readonly }));
  return new NodeDatabase(sqlite, db, path, options.readonly) as unknown as Database.Database;
}
