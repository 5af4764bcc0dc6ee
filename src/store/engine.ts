/**
 * The one store interface both engines implement (README "Issue 20"): a controller store is a `StoreEngine`, and
 * every state change is `transaction(async tx => …)` holding the change and the chain event that records it.
 *
 * SQL is written once, in the dialect both engines accept: `?` placeholders (PostgreSQL's engine numbers them),
 * `ON CONFLICT … DO UPDATE/NOTHING`, no engine-specific functions outside a migration. Where the dialects differ
 * (DDL, JSON functions) the caller asks `kind`.
 */

/** A value a query may bind. Booleans are stored as 0/1 by the caller: SQLite has no boolean type. */
export type SqlValue = string | number | bigint | null;

export type EngineKind = "sqlite" | "postgres";

/** Reads, inside a transaction or a read. */
export interface Query {
  readonly kind: EngineKind;
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
}

declare const txBrand: unique symbol;
/** Proof that the caller is inside an open write transaction; only `StoreEngine.transaction` makes one. */
export interface Tx extends Query {
  readonly [txBrand]: true;
  /** One statement; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Several statements without parameters (DDL in a migration). */
  exec(sql: string): Promise<void>;
  /** Runs after the transaction commits; dropped if it rolls back (spec/audit-chain.md §6). */
  afterCommit(fn: () => void): void;
  /** This transaction commits durably whatever its options said (a chain checkpoint: a signed head may be handed out). */
  requireDurable(): void;
  /**
   * Holds the write lock called `name` until the transaction ends, so writers that take it take turns (the chain's
   * sequence and link). SQLite: nothing to do, BEGIN IMMEDIATE already holds the only write lock. PostgreSQL: an
   * advisory lock; an attempt that took it and then lost a serialisation race takes it before its snapshot on the
   * retry, so it sees every commit of the writer it waited for and cannot lose that race again.
   */
  writeLock(name: string): Promise<void>;
}

/**
 * `durable: false` is for a commit that a durable commit on the same store always follows before anything leaves the
 * store (a request to a node, an answer to a caller, a file): SQLite commits it without the WAL fsync. A process crash
 * loses nothing (the WAL is in the file); a power loss may lose it together with the commits after the last durable
 * one, and nothing outside the store saw their effects (docs/spec/mesh.md §14.3). PostgreSQL commits every
 * transaction durably.
 */
export interface TransactionOptions {
  /**
   * `"answer"`: durable only because a caller is answered after it. Outside an HTTP API call that is a durable
   * commit; inside one (riding-engine.ts) the call's outcome commits durably before the answer, so it need not sync.
   */
  readonly durable?: boolean | "answer";
}

export interface StoreEngine {
  readonly kind: EngineKind;
  /** Where the state lives, for messages: a file path, or a PostgreSQL address without its password. */
  readonly location: string;
  /**
   * One write transaction: committed when `fn` resolves, rolled back when it throws. SQLite: BEGIN IMMEDIATE, and
   * `fn` may await nothing but `tx` (one connection, one writer); a transaction opened inside another is refused.
   * PostgreSQL: SERIALIZABLE, retried from the start on a serialisation failure, so `fn` must only touch `tx`.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Reads outside a transaction; never sees another caller's uncommitted writes. */
  read<T>(fn: (q: Query) => Promise<T>): Promise<T>;
  /**
   * Throws unless a write could start now: the store is open, not read-only, and its write lock (SQLite) or a
   * connection and the chain's row lock (PostgreSQL) are had within `waitMs`. Writes nothing (`GET /readyz`).
   */
  checkWritable(waitMs: number): Promise<void>;
  readonly closed: boolean;
  close(): Promise<void>;
}

/** A transaction was opened inside another on an engine that has one writer (a bug in the caller). */
export class NestedTransaction extends Error {
  override name = "NestedTransaction";
}

/** A SQLite transaction's callback awaited something other than its own queries while holding the write lock. */
export class TransactionAwaitedOutside extends Error {
  override name = "TransactionAwaitedOutside";
}
