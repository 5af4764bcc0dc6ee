import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeSqliteModule, openNodeSqlite } from "./node-sqlite.js";

// node:sqlite is in Node 24 and 22.13+. vitest.config.ts collects `*.node24.test.ts` only on a runtime that has it (the
// Node 24 tier runs this file); the machine's Node 20 does not, and runs better-sqlite3 only.
const loaded = nodeSqliteModule();
if (loaded === undefined)
  throw new Error("node:sqlite is not in this runtime: this file runs on Node 24 (scripts/test-node24)");
const sqlite = loaded;
const dir = mkdtempSync(join(tmpdir(), "berth-node-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("node:sqlite with better-sqlite3's face", () => {
  const open = (name: string) => {
    const db = openNodeSqlite(sqlite, join(dir, name), { readonly: false });
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)");
    return db;
  };

  it("commits a transaction, rolls back one that throws, and a nested one is a savepoint", () => {
    const db = open("tx.db");
    const insert = db.prepare("INSERT INTO t (name) VALUES (?)");
    db.transaction(() => insert.run("a")).immediate();
    expect(() =>
      db.transaction(() => {
        insert.run("b");
        throw new Error("no");
      })(),
    ).toThrow("no");
    db.transaction(() => {
      insert.run("c");
      expect(() =>
        db.transaction(() => {
          insert.run("d");
          throw new Error("inner");
        })(),
      ).toThrow("inner");
      expect(db.inTransaction).toBe(true);
    }).immediate();
    expect(db.prepare("SELECT name FROM t ORDER BY id").pluck().all()).toEqual(["a", "c"]);
    expect(db.inTransaction).toBe(false);
    db.close();
    expect(db.open).toBe(false);
  });

  it("reads pragmas, plucks, spreads an array of parameters, ignores extra named keys, and iterates", () => {
    const db = open("read.db");
    expect(db.pragma("journal_mode = WAL", { simple: true })).toBe("wal");
    expect(db.pragma("foreign_keys")).toEqual([{ foreign_keys: 1 }]); // on by default, as in better-sqlite3
    db.prepare("INSERT INTO t (id, name) VALUES (?, ?)").run([1, "one"]);
    db.prepare("INSERT INTO t (id, name) VALUES (@id, @name)").run({ id: 2, name: "two", extra: true });
    expect(db.prepare("SELECT name FROM t WHERE id = ?").pluck().get(2)).toBe("two");
    expect(db.prepare("SELECT name FROM t WHERE id = ?").get(3)).toBeUndefined();
    expect([...db.prepare("SELECT id FROM t ORDER BY id").pluck().iterate()]).toEqual([1, 2]);
    db.close();
  });

  it("gives an error SQLite's name in its code", () => {
    const db = open("errors.db");
    db.prepare("INSERT INTO t (name) VALUES (?)").run("x");
    let caught: unknown;
    try {
      db.prepare("INSERT INTO t (name) VALUES (?)").run("x");
    } catch (error) {
      caught = error;
    }
    expect((caught as { code?: string }).code).toBe("SQLITE_CONSTRAINT_UNIQUE");
    db.close();
  });

  it("backs up the whole database into another file", async () => {
    const db = open("source.db");
    db.prepare("INSERT INTO t (name) VALUES (?)").run("kept");
    await db.backup(join(dir, "copy.db"));
    db.close();
    const copy = openNodeSqlite(sqlite, join(dir, "copy.db"), { readonly: true });
    expect(copy.prepare("SELECT name FROM t").pluck().all()).toEqual(["kept"]);
    expect(copy.readonly).toBe(true);
    copy.close();
  });
});
