/**
 * A write that rides a flow's first transaction (issue 19): the `api.call` request of an HTTP call is appended at the
 * start of the first write transaction that call makes on the store, instead of in a transaction (an fsynced commit)
 * of its own before it.
 *
 *   ride.run(handler) ─▶ the handler's first engine.transaction: [ride.write(tx)] ─▶ its own writes ─▶ COMMIT
 *                                                                      └─ committed ─▶ every later transaction: as usual
 *                      ─▶ a transaction that rolls back leaves the ride pending: the next one carries it
 *   nothing written by the flow ─▶ ride.commit() (or the flow's last transaction, the call's outcome) carries it
 *
 * What the record keeps (docs/audit-chain.md "Events of the HTTP API"): it commits in the same transaction as the
 * flow's first state change, before it on the chain, so no state change of the flow commits without it and none
 * precedes it. A request to a node leaves only after its stamp is committed (watch-stamps.ts), a write like any
 * other, so none leaves before the record either. Effects that are not a write on this engine (files, another
 * database, a cluster's API) are not covered: a flow that makes one commits the ride first (`commit()`).
 *
 * The flow is the async context of `run` (AsyncLocalStorage). While one of its transactions carries the ride, its
 * other transactions wait for that one to end (PostgreSQL runs them side by side): none commits before the record
 * without carrying it. `close()` ends the ride, so a timer the flow left behind never writes the record late.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Query, StoreEngine, TransactionOptions, Tx } from "./engine.js";

export class Ride {
  /** Set by the transaction that carried the write, once it committed. */
  committed = false;
  /** The error of the last transaction that carried the write and did not commit (null: none failed). */
  failure: unknown = null;
  private closed = false;
  private carrying: Promise<void> | null = null;

  /** The flow's last commit skipped its fsync: nothing durable has followed it yet. */
  owesSync = false;

  constructor(
    private readonly engine: RidingEngine,
    /** Appends the record; only `tx`'s queries (it runs inside another caller's transaction). */
    readonly write: (tx: Tx) => Promise<void>,
  ) {}

  /** Runs `fn` as the flow: its first write transaction on the engine carries the ride. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.engine.flows.run(this, fn);
  }

  /** Commits the ride now in a transaction of its own, unless one already carried it. */
  async commit(): Promise<void> {
    if (this.committed || this.closed) return;
    await this.run(() => this.engine.transaction(async () => undefined));
  }

  /** No transaction carries it from now on. */
  close(): void {
    this.closed = true;
  }

  /**
   * Ends the ride before the caller is answered. The flow's commits that were durable only for that answer skipped
   * their fsync (TransactionOptions `"answer"`), counting on the outcome's durable commit: when the outcome could not
   * commit, the store is synced here instead, so the answer still never reports what a power loss could take back.
   */
  async finish(): Promise<void> {
    this.close();
    if (this.owesSync) await this.engine.sync();
  }

  /**
   * For the transaction about to start in the flow: null when it need not carry the write (carried, or closed), else
   * the function that ends its carrying. While another transaction carries it, this waits for that one to end. The
   * check and the claim happen in one turn, so two waiting transactions never both carry it.
   */
  async claim(): Promise<(() => void) | null> {
    while (this.carrying) await this.carrying;
    if (this.committed || this.closed) return null;
    let done!: () => void;
    this.carrying = new Promise<void>((resolve) => {
      done = resolve;
    });
    return () => {
      this.carrying = null;
      done();
    };
  }
}

/** A `StoreEngine` whose transactions carry the ride of the flow they run in (one, at most once). */
export class RidingEngine implements StoreEngine {
  readonly flows = new AsyncLocalStorage<Ride>();

  constructor(private readonly inner: StoreEngine) {}

  get kind() {
    return this.inner.kind;
  }

  get location() {
    return this.inner.location;
  }

  get closed() {
    return this.inner.closed;
  }

  /** A ride for `write`; nothing is written until a transaction of `ride.run`'s flow, or `ride.commit()`. */
  ride(write: (tx: Tx) => Promise<void>): Ride {
    return new Ride(this, write);
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    const ride = this.flows.getStore();
    if (ride === undefined) return this.inner.transaction(fn, options);
    // The call's outcome commits durably before its answer (server/app.ts), so what is durable only for that answer
    // need not sync itself; `finish` syncs when the outcome could not commit.
    const durable = options?.durable === "answer" ? false : (options?.durable ?? true);
    // `claim` hands a `done` to the one transaction that carries the ride's write (the flow's first to get there).
    const done = await ride.claim();
    const body =
      done === null
        ? fn
        : async (tx: Tx) => {
            await ride.write(tx);
            tx.afterCommit(() => {
              ride.committed = true;
            });
            return fn(tx);
          };
    try {
      const value = await this.inner.transaction(body, { ...options, durable });
      ride.owesSync = durable === false;
      return value;
    } catch (error) {
      if (done !== null && !ride.committed) ride.failure = error;
      throw error;
    } finally {
      done?.();
    }
  }

  /** Makes every commit so far durable (SQLite: the WAL synced by hand; PostgreSQL: every commit already is). */
  sync(): Promise<void> {
    return this.inner.transaction(async (tx) => tx.requireDurable(), { durable: false });
  }

  read<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    return this.inner.read(fn);
  }

  checkWritable(waitMs: number): Promise<void> {
    return this.inner.checkWritable(waitMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
