import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NestedTransaction, TransactionAwaitedOutside } from "./engine.js";
import { SqliteEngine } from "./sqlite-engine.js";

const dirs: string[] = [];
const engines: SqliteEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function engineOn(path?: string): SqliteEngine {
  const file =
    path ??
    (() => {
      const dir = mkdtempSync(join(tmpdir(), "berth-sqlite-engine-"));
      dirs.push(dir);
      return join(dir, "t.db");
    })();
  const e = SqliteEngine.open(file);
  engines.push(e);
  return e;
}

const count = (e: SqliteEngine) => e.read(async (q) => (await q.get<{ n: number }>("SELECT COUNT(*) AS n FROM t"))?.n);

describe("the SQLite engine behind the asynchronous store interface", () => {
  it("commits a transaction's writes together and runs after-commit callbacks only then", async () => {
    const e = engineOn();
    const seen: string[] = [];
    await e.transaction(async (tx) => {
      await tx.exec("CREATE TABLE t (v INTEGER)");
      await tx.run("INSERT INTO t (v) VALUES (?)", [1]);
      tx.afterCommit(() => seen.push("committed"));
      expect(seen).toEqual([]);
    });
    expect([seen, await count(e)]).toEqual([["committed"], 1]);
  });

  it("rolls back everything a transaction wrote when it throws, and drops its after-commit callbacks", async () => {
    const e = engineOn();
    await e.transaction((tx) => tx.exec("CREATE TABLE t (v INTEGER)"));
    const seen: string[] = [];
    await expect(
      e.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES (1)");
        tx.afterCommit(() => seen.push("committed"));
        throw new Error("half way");
      }),
    ).rejects.toThrow("half way");
    expect([seen, await count(e)]).toEqual([[], 0]);
  });

  it("refuses a transaction opened inside another (one connection, one writer)", async () => {
    const e = engineOn();
    await e.transaction((tx) => tx.exec("CREATE TABLE t (v INTEGER)"));
    await expect(
      e.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES (1)");
        await e.transaction((inner) => inner.run("INSERT INTO t (v) VALUES (2)"));
      }),
    ).rejects.toThrow(NestedTransaction);
    expect(await count(e)).toBe(0);
  });

  it("rolls back a transaction whose callback awaited something other than its queries while holding the lock", async () => {
    const e = engineOn();
    await e.transaction((tx) => tx.exec("CREATE TABLE t (v INTEGER)"));
    await expect(
      e.transaction(async (tx) => {
        await tx.run("INSERT INTO t (v) VALUES (1)");
        await new Promise((resolve) => setTimeout(resolve, 5));
      }),
    ).rejects.toThrow(TransactionAwaitedOutside);
    expect(await count(e)).toBe(0);
  });

  it("queues concurrent transactions, and those of two engines on one file, instead of interleaving them", async () => {
    const a = engineOn();
    const b = engineOn(a.location);
    await a.transaction((tx) => tx.exec("CREATE TABLE t (v INTEGER)"));
    const bump = (e: SqliteEngine) =>
      e.transaction(async (tx) => {
        const n = (await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM t"))?.n ?? 0;
        await tx.run("INSERT INTO t (v) VALUES (?)", [n]);
      });
    await Promise.all([bump(a), bump(b), bump(a), bump(b)]);
    const values = await a.read((q) => q.all<{ v: number }>("SELECT v FROM t ORDER BY v"));
    expect(values.map((r) => r.v)).toEqual([0, 1, 2, 3]);
  });

  it("a read never sees another caller's uncommitted writes", async () => {
    const e = engineOn();
    await e.transaction((tx) => tx.exec("CREATE TABLE t (v INTEGER)"));
    let during: number | undefined = -1;
    const write = e.transaction(async (tx) => {
      await tx.run("INSERT INTO t (v) VALUES (1)");
      await tx.run("INSERT INTO t (v) VALUES (2)");
      throw new Error("rolled back");
    });
    const read = count(e).then((n) => {
      during = n;
    });
    await expect(write).rejects.toThrow("rolled back");
    await read;
    expect(during).toBe(0);
  });
});
