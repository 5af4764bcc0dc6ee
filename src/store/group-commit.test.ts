import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { StoreEngine, TransactionOptions, Tx } from "./engine.js";
import { GroupCommit } from "./group-commit.js";
import { RidingEngine } from "./riding-engine.js";
import { SqliteEngine } from "./sqlite-engine.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A SQLite engine with one table, counting the write transactions it is asked for. */
async function counted(): Promise<{ engine: StoreEngine; transactions: () => number; rows: () => Promise<string[]> }> {
  const dir = mkdtempSync(join(tmpdir(), "berth-group-commit-"));
  dirs.push(dir);
  const inner = SqliteEngine.open(join(dir, "s.db"));
  await inner.transaction((tx) => tx.exec("CREATE TABLE t (v TEXT NOT NULL)"));
  let n = 0;
  const engine: StoreEngine = Object.assign(Object.create(inner) as StoreEngine, {
    transaction: <T>(fn: (tx: Tx) => Promise<T>, o?: TransactionOptions) => {
      n++;
      return inner.transaction(fn, o);
    },
  });
  return {
    engine,
    transactions: () => n,
    rows: async () => (await inner.read((q) => q.all<{ v: string }>("SELECT v FROM t ORDER BY rowid"))).map((r) => r.v),
  };
}

const insert = async (tx: Tx, items: readonly string[]) => {
  for (const v of items) await tx.run("INSERT INTO t (v) VALUES (?)", [v]);
};

describe("group commit", () => {
  it("commits writes made together in one transaction, each caller resolved once its row is committed", async () => {
    const { engine, transactions, rows } = await counted();
    const group = new GroupCommit(engine, insert);
    const seen: string[][] = [];
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        await group.add(`v${i}`);
        seen.push(await rows());
      }),
    );
    expect(transactions()).toBe(1);
    expect(await rows()).toEqual(Array.from({ length: 100 }, (_, i) => `v${i}`));
    for (const s of seen) expect(s).toHaveLength(100);
  });

  it("rejects every caller of a group whose transaction failed, and commits the next group", async () => {
    const { engine, rows } = await counted();
    const group = new GroupCommit(engine, async (tx, items: readonly string[]) => {
      if (items.includes("bad")) throw new Error("refused");
      await insert(tx, items);
    });
    const first = await Promise.allSettled([group.add("a"), group.add("bad")]);
    expect(first.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    await group.add("c");
    expect(await rows()).toEqual(["c"]);
  });

  it("commits a write made inside a riding flow alone, in that flow's own transaction", async () => {
    const { engine, transactions, rows } = await counted();
    const riding = new RidingEngine(engine);
    const group = new GroupCommit(riding, insert, undefined, () => riding.flows.getStore() !== undefined);
    const ride = riding.ride((tx) => tx.run("INSERT INTO t (v) VALUES ('record')").then(() => undefined));
    await Promise.all([ride.run(() => group.add("in-flow")), group.add("outside-1"), group.add("outside-2")]);
    expect(transactions()).toBe(2);
    expect(await rows()).toEqual(["record", "in-flow", "outside-1", "outside-2"]);
  });
});
