/**
 * The embedded engine: one better-sqlite3 connection behind the asynchronous store interface (engine.ts).
 *
 * better-sqlite3 is synchronous, so every query here resolves at once; what the asynchronous shape must not change is
 * SQLite's one-writer rule. A transaction is BEGIN IMMEDIATE … COMMIT on the one connection, so:
 * - in this process, transactions and reads queue behind the open transaction (a read never sees another caller's
 *   uncommitted writes on the shared connection), and one opened inside another is refused (`NestedTransaction`);
 * - its callback may await nothing but its own queries: the write lock is held for the whole transaction, against
 *   every other process on the file too. A callback that yields to the event loop (a network call, a timer) is
 *   rolled back with `TransactionAwaitedOutside` instead of committing late;
 * - two engines on one file in one process (a test's two owners, the server and a CLI verb beside it) share one
 *   queue: the second's BEGIN IMMEDIATE would otherwise block the thread the first needs to finish.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, existsSync, fdatasyncSync, openSync, realpathSync } from "node:fs";
import type Database from "better-sqlite3";
import {
  type EngineKind,
  NestedTransaction,
  type Query,
  type SqlValue,
  type StoreEngine,
  TransactionAwaitedOutside,
  type TransactionOptions,
  type Tx,
} from "./engine.js";
import { type Db, openDatabase } from "./sqlite.js";

/** Distinct SQL texts kept prepared; the store's statements are a fixed set, so this bound is never reached in use. */
const STATEMENT_CACHE = 512;

/** The queue of every engine on one file in this process, by the file's real path. */
const queues = new Map<string, { tail: Promise<void> }>();

function queueFor(path: string): { tail: Promise<void> } {
  const onDisk = path !== "" && path !== ":memory:" && !path.startsWith("file:") && existsSync(path);
  if (!onDisk) return { tail: Promise.resolve() };
  const key = realpathSync(path);
  let queue = queues.get(key);
  if (queue === undefined) {
    queue = { tail: Promise.resolve() };
    queues.set(key, queue);
  }
  return queue;
}

interface Scope {
  readonly mode: "transaction" | "read";
  readonly q: Query;
}

/** fdatasync of the database's WAL (journal_mode=WAL: every commit is in it until a checkpoint, which syncs itself). */
function syncWal(db: Db): void {
  const wal = `${db.name}-wal`;
  if (db.memory || !existsSync(wal)) return;
  const fd = openSync(wal, "r");
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class SqliteEngine implements StoreEngine {
  readonly kind: EngineKind = "sqlite";
  private readonly statements = new Map<string, Database.Statement>();
  private readonly scope = new AsyncLocalStorage<Scope>();
  private readonly queue: { tail: Promise<void> };
  private readonly query: Query;

  constructor(
    /** The connection: the node daemon and the synchronous chain use it directly, outside this interface. */
    readonly db: Db,
    readonly location: string = db.name,
  ) {
    this.queue = queueFor(db.name);
    this.query = {
      kind: "sqlite",
      get: async <T>(sql: string, params: readonly SqlValue[] = []) =>
        this.prepared(sql).get(...params) as T | undefined,
      all: async <T>(sql: string, params: readonly SqlValue[] = []) => this.prepared(sql).all(...params) as T[],
    };
  }

  static open(path: string, options: { readonly?: boolean } = {}): SqliteEngine {
    return new SqliteEngine(openDatabase(path, options), path);
  }

  get closed(): boolean {
    return !this.db.open;
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (this.scope.getStore())
      throw new NestedTransaction(
        "a SQLite transaction was opened inside another transaction or read on the same connection",
      );
    const release = await this.turn();
    try {
      return await this.runTransaction(fn, options.durable !== false);
    } finally {
      release();
    }
  }

  private async runTransaction<T>(fn: (tx: Tx) => Promise<T>, durable: boolean): Promise<T> {
    const callbacks: Array<() => void> = [];
    let open = true;
    let durableRequired = false;
    /** The statement for `sql`, refused once the transaction has ended (a tx kept past its callback). */
    const live = (sql: string) => {
      if (!open) throw new Error("this transaction has ended; its tx cannot be used any more");
      return this.prepared(sql);
    };
    const tx = {
      kind: "sqlite",
      get: async (sql: string, params: readonly SqlValue[] = []) => live(sql).get(...params),
      all: async (sql: string, params: readonly SqlValue[] = []) => live(sql).all(...params),
      run: async (sql: string, params: readonly SqlValue[] = []) => live(sql).run(...params).changes,
      exec: async (sql: string) => {
        if (!open) throw new Error("this transaction has ended; its tx cannot be used any more");
        this.db.exec(sql);
      },
      afterCommit: (cb: () => void) => callbacks.push(cb),
      requireDurable: () => {
        durableRequired = true;
      },
      // BEGIN IMMEDIATE holds the database's one write lock already.
      writeLock: async () => undefined,
    } as unknown as Tx;
    // SQLite refuses to change the safety level inside a transaction: it is set for this one before BEGIN.
    if (!durable) this.db.pragma("synchronous = NORMAL");
    try {
      this.db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      if (!durable) this.db.pragma("synchronous = FULL");
      throw error;
    }
    // Every query resolves at once, so a callback that awaits only `tx` finishes before the event loop turns.
    let yielded = false;
    const turn = setImmediate(() => {
      yielded = true;
    });
    let value: T;
    try {
      value = await this.scope.run({ mode: "transaction", q: tx }, () => fn(tx));
      if (yielded) {
        throw new TransactionAwaitedOutside(
          "a SQLite transaction awaited something other than its own queries while holding the write lock; it was rolled back",
        );
      }
      this.db.exec("COMMIT");
      // What SQLite's FULL does at commit, by hand: the WAL, which holds this commit and every one before it.
      if (!durable && durableRequired) syncWal(this.db);
    } catch (error) {
      if (this.db.open && this.db.inTransaction) this.db.exec("ROLLBACK");
      throw error;
    } finally {
      open = false;
      clearImmediate(turn);
      if (!durable && this.db.open) this.db.pragma("synchronous = FULL");
    }
    for (const cb of callbacks) cb();
    return value;
  }

  async read<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    const inside = this.scope.getStore();
    if (inside) return fn(inside.q);
    const release = await this.turn();
    try {
      return await this.scope.run({ mode: "read", q: this.query }, () => fn(this.query));
    } finally {
      release();
    }
  }

  async checkWritable(waitMs: number): Promise<void> {
    const release = await this.turn();
    try {
      if (!this.db.open) throw new Error("the controller database is closed");
      if (this.db.readonly) throw new Error("the controller database is open read-only");
      const wait = this.db.pragma("busy_timeout", { simple: true }) as number;
      // Synchronous: nothing else runs on this handle between these statements.
      this.db.pragma(`busy_timeout = ${waitMs}`);
      try {
        this.db.exec("BEGIN IMMEDIATE");
        this.db.exec("ROLLBACK");
      } finally {
        this.db.pragma(`busy_timeout = ${wait}`);
      }
    } finally {
      release();
    }
  }

  async close(): Promise<void> {
    this.statements.clear();
    if (this.db.open) this.db.close();
  }

  /** Waits for the transactions and reads queued before this one; resolves to the function that lets the next go. */
  private turn(): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = this.queue.tail;
    this.queue.tail = before.then(() => mine);
    return before.then(() => release);
  }

  private prepared(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      if (this.statements.size >= STATEMENT_CACHE) this.statements.clear();
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }
}
