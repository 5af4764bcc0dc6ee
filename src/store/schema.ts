/**
 * Schema versions per component on either engine (the asynchronous twin of `ensureSchema` in sqlite.ts, which the
 * node daemon's synchronous store keeps): an older berth refuses tables written by a newer one instead of
 * misreading them, and a migration runs in the same transaction as the version it records.
 */
import type { Query, Tx } from "./engine.js";
import { SchemaError } from "./sqlite.js";

function newerText(component: string, found: number, version: number): string {
  return `the ${component} tables in this database are schema version ${found}, newer than this berth understands (${version}); upgrade berth or use a database written by this version`;
}

export async function ensureSchemaOn(
  tx: Tx,
  component: string,
  version: number,
  migrate: (from: number) => Promise<void>,
): Promise<void> {
  await tx.exec("CREATE TABLE IF NOT EXISTS berth_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)");
  const row = await tx.get<{ version: number }>("SELECT version FROM berth_schema WHERE component = ?", [component]);
  const found = row?.version ?? 0;
  if (found > version) throw new SchemaError(newerText(component, found, version));
  if (found < version) {
    await migrate(found);
    await tx.run(
      "INSERT INTO berth_schema (component, version) VALUES (?, ?) ON CONFLICT (component) DO UPDATE SET version = excluded.version",
      [component, version],
    );
  }
}

/** The version a component's tables are at (0: none yet), read without migrating (issue 35: the read-only lists). */
export async function schemaVersionOf(q: Query, component: string): Promise<number> {
  const table =
    q.kind === "sqlite"
      ? await q.get("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'berth_schema'")
      : await q.get(
          "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'berth_schema'",
        );
  if (!table) return 0;
  return (
    (await q.get<{ version: number }>("SELECT version FROM berth_schema WHERE component = ?", [component]))?.version ??
    0
  );
}
