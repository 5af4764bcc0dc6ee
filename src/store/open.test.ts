import { describe, expect, it } from "vitest";
import { DatabaseAddressError, isStoreAway, parseDatabaseAddress } from "./open.js";
import { redactedUrl } from "./redact.js";

describe("which store an address names (--database, BERTH_DATABASE_URL)", () => {
  it("absent or blank is the home's SQLite file; sqlite:PATH and an absolute path are that file", () => {
    expect(parseDatabaseAddress(undefined, "/h/controller.db")).toEqual({ kind: "sqlite", path: "/h/controller.db" });
    expect(parseDatabaseAddress("  ", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/h/controller.db" });
    expect(parseDatabaseAddress("sqlite:/srv/c.db", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/srv/c.db" });
    expect(parseDatabaseAddress("/srv/c.db", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/srv/c.db" });
  });

  it("postgres:// and postgresql:// are PostgreSQL, kept whole for the driver", () => {
    expect(parseDatabaseAddress("postgres://u:p@db:5432/berth", "")).toEqual({
      kind: "postgres",
      url: "postgres://u:p@db:5432/berth",
    });
    expect(parseDatabaseAddress("postgresql://u@db/berth", "").kind).toBe("postgres");
  });

  it("anything else is refused without repeating the value (it may hold a password)", () => {
    for (const bad of ["mysql://root:hunter2@db/x", "relative/path.db", "sqlite:", "postgres://:hunter2@/x"]) {
      expect(() => parseDatabaseAddress(bad, "")).toThrow(DatabaseAddressError);
      try {
        parseDatabaseAddress(bad, "");
      } catch (error) {
        expect((error as Error).message).not.toContain("hunter2");
      }
    }
  });

  it("a printed address never carries its password, in the userinfo or the query", () => {
    expect(redactedUrl("postgres://berth:hunter2@db:5432/b")).toBe("postgres://berth:***@db:5432/b");
    expect(redactedUrl("postgres://berth@db/b?password=hunter2&sslmode=require")).not.toContain("hunter2");
    expect(redactedUrl("postgres://berth@db/b")).toBe("postgres://berth@db/b");
    expect(redactedUrl("::not a url::")).not.toContain("not a url");
  });
});

describe("a store that is away, told from a store that is wrongly named (issue 37, campaign seed 2189)", () => {
  it("a refused or reset connection, a restarting or shutting-down server and a connect timeout are the store being away", () => {
    for (const text of [
      "cannot open the PostgreSQL store at postgres://berth@127.0.0.1:38897/t: connect ECONNREFUSED 127.0.0.1:38897",
      "cannot open the PostgreSQL store at postgres://berth@db/t: the database system is starting up",
      "cannot open the PostgreSQL store at postgres://berth@db/t: the database system is shutting down",
      "terminating connection due to administrator command",
      "Connection terminated unexpectedly",
      "cannot open the PostgreSQL store at postgres://berth@db/t: timeout expired",
      // pg-pool's connect timeout, and a pooled client whose connection broke under it (node-postgres' own words).
      "timeout exceeded when trying to connect",
      "Client has encountered a connection error and is not queryable",
    ]) {
      expect(isStoreAway(new Error(text)), text).toBe(true);
    }
    expect(isStoreAway(Object.assign(new Error("x"), { code: "57P03" }))).toBe(true);
    expect(isStoreAway(Object.assign(new Error("x"), { code: "08006" }))).toBe(true);
  });

  it("a refused password, a missing database or a bad address is not waited out", () => {
    for (const text of [
      'cannot open the PostgreSQL store at postgres://berth@db/t: password authentication failed for user "berth"',
      'cannot open the PostgreSQL store at postgres://berth@db/t: database "t" does not exist',
      "database: expected postgres://… or sqlite:PATH (or an absolute path to a SQLite file)",
    ]) {
      expect(isStoreAway(new Error(text)), text).toBe(false);
    }
  });
});
