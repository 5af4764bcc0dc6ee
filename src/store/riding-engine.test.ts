import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Query, StoreEngine, Tx } from "./engine.js";
import { RidingEngine } from "./riding-engine.js";
import { SqliteEngine } from "./sqlite-engine.js";

const dirs: string[] = [];
const engines: StoreEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A SQLite engine on a fresh file with table `t`, behind a RidingEngine; `commits` counts the inner transactions and
 * `syncs` says, per inner transaction, how it was asked to commit ("sync", "nosync", or "required": synced by hand).
 */
async function riding(): Promise<{
  engine: RidingEngine;
  commits: () => number;
  syncs: string[];
  rows: () => Promise<string[]>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "berth-riding-"));
  dirs.push(dir);
  const inner = SqliteEngine.open(join(dir, "t.db"));
  engines.push(inner);
  await inner.transaction((tx) => tx.exec("CREATE TABLE t (n INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL)"));
  let commits = 0;
  const syncs: string[] = [];
  const counting: StoreEngine = {
    kind: inner.kind,
    location: inner.location,
    get closed() {
      return inner.closed;
    },
    transaction: async (fn, options) => {
      let required = false;
      const value = await inner.transaction(
        (tx) =>
          fn({
            ...tx,
            requireDurable: () => {
              required = true;
              tx.requireDurable();
            },
          } as Tx),
        options,
      );
      commits++;
      syncs.push(required ? "required" : options?.durable === false ? "nosync" : "sync");
      return value;
    },
    read: (fn) => inner.read(fn),
    checkWritable: (ms) => inner.checkWritable(ms),
    close: () => inner.close(),
  };
  return {
    engine: new RidingEngine(counting),
    commits: () => commits,
    syncs,
    rows: () => inner.read(async (q) => (await q.all<{ v: string }>("SELECT v FROM t ORDER BY n")).map((r) => r.v)),
  };
}

const insert = (v: string) => (tx: Tx) => tx.run("INSERT INTO t (v) VALUES (?)", [v]).then(() => undefined);

describe("a write that rides a flow's first transaction", () => {
  it("is written at the start of the flow's first write transaction, in that one commit, and never again", async () => {
    const { engine, commits, rows } = await riding();
    const ride = engine.ride(insert("record"));
    await ride.run(async () => {
      await engine.read(async (q) => q.get("SELECT 1"));
      expect(await rows(), "a read carries nothing").toEqual([]);
      await engine.transaction(insert("first"));
      await engine.transaction(insert("second"));
    });
    expect([await rows(), commits(), ride.committed]).toEqual([["record", "first", "second"], 2, true]);
    await ride.commit();
    expect([await rows(), commits()], "commit() after it rode: nothing more").toEqual([
      ["record", "first", "second"],
      2,
    ]);
  });

  it("stays pending when the transaction carrying it rolls back, and the flow's next transaction carries it", async () => {
    const { engine, rows } = await riding();
    const ride = engine.ride(insert("record"));
    await ride.run(async () => {
      await expect(
        engine.transaction(async (tx) => {
          await insert("rolled back")(tx);
          throw new Error("the caller's own failure");
        }),
      ).rejects.toThrow("the caller's own failure");
      expect([await rows(), ride.committed]).toEqual([[], false]);
      await engine.transaction(insert("next"));
    });
    expect([await rows(), ride.committed]).toEqual([["record", "next"], true]);
  });

  it("is never carried by a transaction outside the flow; commit() writes it alone when the flow wrote nothing", async () => {
    const { engine, commits, rows } = await riding();
    const ride = engine.ride(insert("record"));
    await Promise.all([
      ride.run(async () => engine.read(async (q) => q.get("SELECT 1"))),
      engine.transaction(insert("someone else")),
    ]);
    expect([await rows(), ride.committed]).toEqual([["someone else"], false]);
    await ride.commit();
    expect([await rows(), commits(), ride.committed]).toEqual([["someone else", "record"], 2, true]);
  });

  it("once closed, is carried by nothing: a timer the flow left behind does not write it late", async () => {
    const { engine, rows } = await riding();
    const ride = engine.ride(insert("record"));
    let late: Promise<void> = Promise.resolve();
    await ride.run(async () => {
      late = new Promise((resolve, reject) =>
        setTimeout(() => engine.transaction(insert("late")).then(resolve, reject), 20),
      );
    });
    ride.close();
    await late;
    expect([await rows(), ride.committed]).toEqual([["late"], false]);
    await ride.commit();
    expect(await rows(), "commit() after close: nothing").toEqual(["late"]);
  });

  it("fails the transaction carrying it when it cannot be written, and keeps that error as the ride's failure", async () => {
    const { engine, rows } = await riding();
    const ride = engine.ride(async (tx) => {
      await tx.run("INSERT INTO missing_table (v) VALUES ('x')");
    });
    await expect(ride.run(() => engine.transaction(insert("state")))).rejects.toThrow(/missing_table/);
    expect([await rows(), ride.committed, String(ride.failure)]).toEqual([
      [],
      false,
      expect.stringContaining("missing_table"),
    ]);
    await expect(ride.commit()).rejects.toThrow(/missing_table/);
  });

  it("on an engine that runs transactions side by side, one of the flow's carries it and the others wait for that one", async () => {
    // PostgreSQL runs a flow's concurrent transactions on several connections; this engine does the same in memory.
    const log: string[] = [];
    const concurrent: StoreEngine = {
      kind: "postgres",
      location: "memory",
      closed: false,
      transaction: async <T>(fn: (tx: Tx) => Promise<T>) => {
        const rows: string[] = [];
        const callbacks: Array<() => void> = [];
        const tx = {
          kind: "postgres",
          get: async () => undefined,
          all: async () => [],
          run: async (_sql: string, params: readonly unknown[] = []) => {
            rows.push(String(params[0]));
            await new Promise((r) => setTimeout(r, 5));
            return 1;
          },
          exec: async () => undefined,
          afterCommit: (cb: () => void) => callbacks.push(cb),
        } as unknown as Tx;
        const value = await fn(tx);
        if (rows.includes("fail")) throw new Error("rolled back");
        log.push(...rows);
        for (const cb of callbacks) cb();
        return value;
      },
      read: <T>(fn: (q: Query) => Promise<T>) =>
        fn({ kind: "postgres", get: async () => undefined, all: async () => [] }),
      checkWritable: async () => undefined,
      close: async () => undefined,
    };
    const engine = new RidingEngine(concurrent);
    const ride = engine.ride(insert("record"));
    await ride.run(async () => {
      const failing = engine.transaction(insert("fail")).catch(() => "failed");
      await Promise.all([failing, engine.transaction(insert("a")), engine.transaction(insert("b"))]);
    });
    // The first carried it and rolled back; the next carried it and committed; the last came after, without it.
    expect(log).toEqual(["record", "a", "b"]);
  });

  it("inside a flow passes on a commit durable only for the answer unsynced, and finish syncs when nothing durable followed", async () => {
    const { engine, syncs, rows } = await riding();
    const ride = engine.ride(insert("record"));
    await ride.run(() => engine.transaction(insert("placed"), { durable: "answer" }));
    expect([...syncs], "the answer's commit, in the flow").toEqual(["nosync"]);
    // The outcome could not commit: the answer still waits for the disk.
    await ride.finish();
    expect([[...syncs], await rows()]).toEqual([
      ["nosync", "required"],
      ["record", "placed"],
    ]);
  });

  it("finish does not sync again when a durable commit (the outcome) followed the unsynced ones", async () => {
    const { engine, syncs } = await riding();
    const ride = engine.ride(insert("record"));
    await ride.run(() => engine.transaction(insert("placed"), { durable: "answer" }));
    await ride.run(() => engine.transaction(insert("outcome")));
    await ride.finish();
    expect([...syncs]).toEqual(["nosync", "sync"]);
  });

  it("outside a flow a commit durable only for the answer is durable", async () => {
    const { engine, syncs } = await riding();
    await engine.transaction(insert("placed"), { durable: "answer" });
    expect([...syncs]).toEqual(["sync"]);
  });
});
