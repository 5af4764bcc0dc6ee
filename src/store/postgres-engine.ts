/**
 * The shared engine (issue 20): the controller's state in PostgreSQL behind the same asynchronous interface
 * (engine.ts), through `pg`'s pool.
 *
 * - A transaction is SERIALIZABLE on one pooled connection, retried from the start when PostgreSQL reports a
 *   serialisation failure or a deadlock (40001, 40P01), or schema DDL another opener ran at the same moment
 *   (`createdConcurrently`), so its callback must touch only `tx` and its closure (a retry runs it again). Anything two writers read and wrote crosswise is a serialisation failure, retried, never a fork.
 * - Writers of one chain take turns on a write lock (`tx.writeLock`, engine-chain.ts), an advisory lock. Taken inside
 *   a SERIALIZABLE transaction it cannot help that transaction see the commit it waited for: the snapshot was taken by
 *   the transaction's first statement, before the wait. So every writer that waited lost the race (40001) and retried,
 *   and with twenty writers at once the last ones ran out of attempts (the PostgreSQL tier's "two stores writing one
 *   chain" failed so in CI). An attempt that lost while holding a write lock therefore takes that lock on its
 *   connection before BEGIN on the retry: its snapshot then follows every commit of the writers before it.
 * - A read is one READ ONLY REPEATABLE READ transaction: a consistent snapshot, never another's uncommitted writes.
 * - SQL is written with `?` placeholders (engine.ts); they are numbered here. BIGINT comes back as a number (berth's
 *   values are milliseconds and counters, far below 2^53).
 * - A transaction opened inside another in the same flow is refused, as on SQLite: it would take a second
 *   connection and could wait on the first's locks for ever.
 * - A session idle inside a transaction for `IDLE_IN_TRANSACTION_MS` is ended by the server (issue 37): a process
 *   frozen mid-transaction (SIGSTOP, a VM pause, a host cut off after BEGIN) would otherwise hold its row locks for
 *   as long as it is frozen — the leader row, so no follower could take over, or the chain's row, so no other server
 *   could write at all. Its transaction is rolled back; woken, it finds its connection gone and its write failed.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import pg from "pg";
import { type EngineKind, NestedTransaction, type Query, type SqlValue, type StoreEngine, type Tx } from "./engine.js";
import { redactedUrl } from "./redact.js";
import { LATE, within } from "./within.js";

export { redactedUrl };

const RETRYABLE = new Set(["40001", "40P01"]);

/**
 * Another transaction created the same table, type or function at the same moment: two processes opening a fresh
 * store at once each run its schema's DDL, and the later one fails on the catalog's unique index (23505 on a `pg_`
 * constraint) or finds the object its snapshot did not show (42P07, 42710, 42723). Retried, it reads the schema the
 * other committed and creates nothing.
 */
function createdConcurrently(error: unknown): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  if (code === "42P07" || code === "42710" || code === "42723") return true;
  return code === "23505" && typeof constraint === "string" && constraint.startsWith("pg_");
}
const MAX_ATTEMPTS = 20;
const INT8_OID = 20;

/**
 * Issue 37: how long a session may sit idle inside a transaction before PostgreSQL ends it and releases its locks.
 * berth's transaction callbacks touch only the transaction (engine.ts), so between two statements a live process only
 * computes; two seconds of that is a frozen process. At most the default leader TTL's act-for window (2.5 s − 0.5 s,
 * src/core/mesh/leader-lease.ts), so a leader frozen inside its own renewal has let the leader row go by the time a
 * follower may take it, and a failover stays within its bound.
 */
export const IDLE_IN_TRANSACTION_MS = 2_000;

/** `?` → `$1, $2…`, outside quoted strings and identifiers. */
export function numberPlaceholders(sql: string): string {
  let out = "";
  let n = 0;
  let quote: string | null = null;
  for (const c of sql) {
    if (quote !== null) {
      if (c === quote) quote = null;
      out += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      out += c;
    } else if (c === "?") {
      n += 1;
      out += `$${n}`;
    } else out += c;
  }
  return out;
}

/** A write lock's advisory-lock key: the first 8 bytes of the SHA-256 of its name, as PostgreSQL's signed BIGINT. */
function advisoryKey(name: string): string {
  return createHash("sha256").update(`berth write lock ${name}`).digest().readBigInt64BE(0).toString();
}

const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? "text")) as typeof pg.types.getTypeParser,
};

export class PostgresEngine implements StoreEngine {
  readonly kind: EngineKind = "postgres";
  readonly location: string;
  private readonly pool: pg.Pool;
  private readonly scope = new AsyncLocalStorage<Query>();
  private ended = false;

  private constructor(url: string, poolSize: number) {
    this.location = redactedUrl(url);
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      types,
      connectionTimeoutMillis: 10_000,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    });
    // An idle pooled connection the server dropped (a restart) is an event, not a crash: the next query reconnects.
    this.pool.on("error", () => undefined);
    // A checked-out client whose server went away between its queries (a restart) emits "error" itself, and an
    // unhandled one ends the process: its query fails instead (found by test/mesh-controller/ha-postgres-processes).
    this.pool.on("connect", (client) => client.on("error", () => undefined));
  }

  /** Connects once, so a wrong address or credentials fail here with the server's words. */
  static async open(url: string, options: { poolSize?: number } = {}): Promise<PostgresEngine> {
    const engine = new PostgresEngine(url, options.poolSize ?? 10);
    try {
      await engine.read((q) => q.get("SELECT 1 AS ok"));
    } catch (error) {
      await engine.close();
      throw new Error(`cannot open the PostgreSQL store at ${engine.location}: ${(error as Error).message}`);
    }
    return engine;
  }

  get closed(): boolean {
    return this.ended;
  }

  private queryOn(client: pg.PoolClient): Query {
    return {
      kind: "postgres",
      get: async <T>(sql: string, params: readonly SqlValue[] = []) =>
        (await client.query(numberPlaceholders(sql), [...params])).rows[0] as T | undefined,
      all: async <T>(sql: string, params: readonly SqlValue[] = []) =>
        (await client.query(numberPlaceholders(sql), [...params])).rows as T[],
    };
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.scope.getStore())
      throw new NestedTransaction(
        "a PostgreSQL transaction was opened inside another transaction or read in the same flow",
      );
    /** The write locks an earlier attempt took: a retry takes them before its snapshot. */
    const lockFirst = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      const callbacks: Array<() => void> = [];
      /** The write locks this attempt holds on its connection (session locks, let go after COMMIT or ROLLBACK). */
      const held = new Set<string>();
      const taken = new Set<string>();
      let open = true;
      const live = () => {
        if (!open) throw new Error("this transaction has ended; its tx cannot be used any more");
      };
      const q = this.queryOn(client);
      const tx = {
        kind: "postgres",
        get: (sql: string, params?: readonly SqlValue[]) => {
          live();
          return q.get(sql, params);
        },
        all: (sql: string, params?: readonly SqlValue[]) => {
          live();
          return q.all(sql, params);
        },
        run: async (sql: string, params: readonly SqlValue[] = []) => {
          live();
          return (await client.query(numberPlaceholders(sql), [...params])).rowCount ?? 0;
        },
        exec: async (sql: string) => {
          live();
          await client.query(sql);
        },
        afterCommit: (cb: () => void) => callbacks.push(cb),
        // Every PostgreSQL commit here is durable (TransactionOptions).
        requireDurable: () => undefined,
        writeLock: async (name: string) => {
          live();
          taken.add(name);
          if (!held.has(name)) await client.query("SELECT pg_advisory_xact_lock($1)", [advisoryKey(name)]);
        },
      } as unknown as Tx;
      let broken = false;
      try {
        // Outside the transaction, so the snapshot its first statement takes comes after the lock (see the header).
        for (const name of lockFirst) {
          await client.query("SELECT pg_advisory_lock($1)", [advisoryKey(name)]);
          held.add(name);
        }
        await client.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
        const value = await this.scope.run(tx, () => fn(tx));
        await client.query("COMMIT");
        open = false;
        for (const cb of callbacks) cb();
        return value;
      } catch (error) {
        open = false;
        await client.query("ROLLBACK").catch(() => {
          broken = true;
        });
        const code = (error as { code?: unknown }).code;
        for (const name of taken) lockFirst.add(name);
        const retryable = (typeof code === "string" && RETRYABLE.has(code)) || createdConcurrently(error);
        if (!(retryable && attempt < MAX_ATTEMPTS)) throw error;
      } finally {
        // A session lock outlives the transaction: let go here, or with the connection when that fails.
        for (const name of held) {
          if (broken) break;
          await client.query("SELECT pg_advisory_unlock($1)", [advisoryKey(name)]).catch(() => {
            broken = true;
          });
        }
        client.release(broken);
      }
      // Retried: back off a little, more with each attempt (holding no lock), so contending writers stop colliding.
      await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
    }
  }

  async read<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    const inside = this.scope.getStore();
    if (inside) return fn(inside);
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const q = this.queryOn(client);
      const value = await this.scope.run(q, () => fn(q));
      await client.query("COMMIT");
      return value;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async checkWritable(waitMs: number): Promise<void> {
    if (this.ended) throw new Error("the controller store is closed");
    const connecting = this.pool.connect();
    const client = await within(connecting, waitMs);
    if (client === LATE) {
      // A connection had after the wait goes back to the pool instead of being held for ever.
      connecting.then(
        (late) => late.release(),
        () => undefined,
      );
      throw new Error("no PostgreSQL connection within the wait");
    }
    let broken = false;
    try {
      const row = (
        await client.query("SELECT current_setting('transaction_read_only') AS ro, pg_is_in_recovery() AS standby")
      ).rows[0] as { ro: string; standby: boolean };
      if (row.ro === "on" || row.standby)
        throw new Error("the PostgreSQL server is read-only (a standby, or default_transaction_read_only)");
      // Every write appends to a chain, and every append first locks its chain's row (engine-chain.ts): that lock is
      // this engine's write lock, the twin of SQLite's BEGIN IMMEDIATE. Taken and let go at once, writing nothing; a
      // writer stuck holding it fails here with 55P03 (lock_not_available) after the wait.
      await client.query("BEGIN");
      try {
        await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(waitMs))}`);
        await client.query("SELECT chain_id FROM audit_chain FOR UPDATE");
      } finally {
        await client.query("ROLLBACK").catch(() => {
          broken = true;
        });
      }
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.pool.end();
  }
}
