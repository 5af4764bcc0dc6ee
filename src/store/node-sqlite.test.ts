import { expect, it } from "vitest";
import { sqliteCodeName } from "./node-sqlite.js";

// What runs on every runtime; node:sqlite itself is exercised in node-sqlite.node24.test.ts.
it("names SQLite's result codes as better-sqlite3 does", () => {
  expect(sqliteCodeName(5)).toBe("SQLITE_BUSY");
  expect(sqliteCodeName(13)).toBe("SQLITE_FULL");
  expect(sqliteCodeName(2067)).toBe("SQLITE_CONSTRAINT_UNIQUE");
  expect(sqliteCodeName(3338)).toBe("SQLITE_IOERR"); // an extended code berth does not name: its primary
});
