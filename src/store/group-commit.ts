/**
 * Group commit (issue 35): concurrent small writes of one kind share one transaction instead of one each. A caller
 * hands its item to `add` and is resolved only once the transaction holding it has committed (durably, when the
 * group's writes are durable), so each caller's guarantee is the one a transaction of its own gave it; only the
 * number of commits (and fsyncs) changes. Items that arrive while a group commits wait for the next group.
 *
 * Why: a keep pass stamps and records one status per node (watch-stamps.ts, targets.ts); at 1,000 nodes, with
 * the calls concurrent, that was 1,000 fsyncs in a row.
 */
import type { StoreEngine, TransactionOptions, Tx } from "./engine.js";
import { RidingEngine } from "./riding-engine.js";

/** True inside a flow whose first write carries its record (riding-engine.ts): such a write must commit alone. */
export function inRidingFlow(engine: StoreEngine): () => boolean {
  return () => engine instanceof RidingEngine && engine.flows.getStore() !== undefined;
}

interface Waiting<T> {
  readonly item: T;
  resolve(): void;
  reject(error: unknown): void;
}

export class GroupCommit<T> {
  private queue: Waiting<T>[] = [];
  private running = false;

  constructor(
    private readonly engine: StoreEngine,
    /** Writes every item of one group inside its transaction, in the order they were added. */
    private readonly write: (tx: Tx, items: readonly T[]) => Promise<void>,
    private readonly options?: TransactionOptions,
    /**
     * True when this caller's item must commit in a transaction of its own, in the caller's async context: a flow
     * whose first write carries its record (riding-engine.ts) must not have that write commit in another's group.
     */
    private readonly alone: () => boolean = () => false,
    /** The most items one transaction takes. */
    private readonly maxGroup = 512,
  ) {}

  /** Resolves once `item` is committed; rejects with the transaction's error (the whole group failed). */
  add(item: T): Promise<void> {
    if (this.alone()) return this.engine.transaction((tx) => this.write(tx, [item]), this.options);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      // One turn of the event loop first, so the calls started together (a pass's fan-out) land in one group.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.maxGroup);
        try {
          await this.engine.transaction(
            (tx) =>
              this.write(
                tx,
                group.map((w) => w.item),
              ),
            this.options,
          );
          for (const w of group) w.resolve();
        } catch (error) {
          for (const w of group) w.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
