import { describe, expect, it } from "vitest";
import { DatabaseAddressError, parseDatabaseAddress } from "./open.js";
import { redactedUrl } from "./redact.js";

describe("which store an address names (--database, BERTH_DATABASE_URL)", () => {
  it("absent or blank is the home's SQLite file; sqlite:PATH and an absolute path are that file", () => {
    expect(parseDatabaseAddress(undefined, "/h/controller.db")).toEqual({ kind: "sqlite", path: "/h/controller.db" });
    expect(parseDatabaseAddress("  ", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/h/controller.db" });
    expect(parseDatabaseAddress("sqlite:/srv/c.db", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/srv/c.db" });
    expect(parseDatabaseAddress("/srv/c.db", "/h/controller.db")).toEqual({ kind: "sqlite", path: "/srv/c.db" });
  });

  it("postgres:// and postgresql:// are PostgreSQL, kept whole for the driver", () => {
    expect(parseDatabaseAddress("postgres://u:p@db:5432/berth", "")).toEqual({ kind: "postgres", url: "postgres://u:p@db:5432/berth" });
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
