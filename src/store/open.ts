/**
 * Which engine a controller store is on (issue 20): `--database` / `$BERTH_DATABASE_URL` name it, the home's SQLite
 * file is the default. The address is validated here, once, for every caller (`berth serve`, `berth up`, each verb):
 *
 * - `postgres://…` or `postgresql://…`: the PostgreSQL engine (postgres-engine.ts);
 * - `sqlite:PATH` or an absolute path: that SQLite file;
 * - absent or empty: the SQLite file in the home.
 *
 * A PostgreSQL address may hold a password: only `redactedUrl` of it is ever printed or stored (`location`).
 */
import { isAbsolute } from "node:path";
import type { StoreEngine } from "./engine.js";
import { redactedUrl } from "./redact.js";
import { SqliteEngine } from "./sqlite-engine.js";

export class DatabaseAddressError extends Error {
  override name = "DatabaseAddressError";
}

export type DatabaseAddress =
  | { readonly kind: "sqlite"; readonly path: string }
  | { readonly kind: "postgres"; readonly url: string };

/** Parses a `--database` value; `fallbackPath` is the home's SQLite file. Throws naming the setting, never the password. */
export function parseDatabaseAddress(raw: string | undefined, fallbackPath: string): DatabaseAddress {
  const value = raw?.trim() ?? "";
  if (value === "") return { kind: "sqlite", path: fallbackPath };
  if (/^postgres(ql)?:\/\//i.test(value)) {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      throw new DatabaseAddressError(
        "database: not a valid postgres:// address (postgres://USER:PASSWORD@HOST:PORT/DATABASE)",
      );
    }
    if (u.hostname === "" && !u.searchParams.has("host"))
      throw new DatabaseAddressError(`database: ${redactedUrl(value)} names no host`);
    return { kind: "postgres", url: value };
  }
  if (value.startsWith("sqlite:")) {
    const path = value.slice("sqlite:".length);
    if (path === "") throw new DatabaseAddressError("database: sqlite: names no file (sqlite:/path/to/controller.db)");
    return { kind: "sqlite", path };
  }
  if (isAbsolute(value)) return { kind: "sqlite", path: value };
  // The value is not repeated: it may hold a password in a form this parser does not know.
  throw new DatabaseAddressError(
    "database: expected postgres://… or sqlite:PATH (or an absolute path to a SQLite file)",
  );
}

/** Opens the engine the address names (PostgreSQL: connects once, so a wrong address fails here). */
export async function openStoreEngine(o: {
  readonly database: string | undefined;
  readonly sqlitePath: string;
}): Promise<StoreEngine> {
  const address = parseDatabaseAddress(o.database, o.sqlitePath);
  if (address.kind === "sqlite") return SqliteEngine.open(address.path);
  // Loaded only for a PostgreSQL store: a SQLite user's verbs never load `pg`.
  const { PostgresEngine } = await import("./postgres-engine.js");
  return PostgresEngine.open(address.url);
}

/**
 * Issue 37 (campaign seed 2189): whether a failure to open or use the PostgreSQL store is the server being away (not
 * listening yet, restarting, shutting down, unreachable) rather than a wrong address, a refused password or a missing
 * database. A long-running controller waits out the first kind and fails fast on the second. Judged on the message,
 * which keeps the driver's words through `cannot open the PostgreSQL store at …: …`.
 */
export function isStoreAway(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && STORE_AWAY_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : String(error);
  return STORE_AWAY_TEXT.test(message);
}

/**
 * Network errors; PostgreSQL's 57P01–57P03 (admin shutdown, crash shutdown, cannot connect now) and class 08, the
 * connection exceptions (08000, 08003 no connection, 08006 connection failure, 08001/08004 could not establish).
 */
const STORE_AWAY_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "EPIPE",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);
const STORE_AWAY_TEXT =
  /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|EPIPE)\b|the database system is (starting up|shutting down|in recovery mode)|Connection terminated|terminating connection due to administrator command|timeout expired|timeout exceeded when trying to connect|is not queryable|no PostgreSQL connection within the wait/;
