/**
 * `berth migrate --from sqlite:PATH --to postgres://…` (issue 20; docs/ha.md "Moving an existing controller"): the
 * decisions, pure. The shell (src/cli/migrate.ts) reads both stores' tables, the owner leases and the clocks, and
 * asks this module three questions: may the source be moved now (nobody live holds it), is the target empty, and
 * which rows go where.
 *
 * Structural rules:
 * - **everything or nothing**: every table of the source with rows has a place in the target with every one of its
 *   columns, or the plan is refused before a row is written; a table of the source the target's schema does not
 *   know is never silently left behind;
 * - **the same store**: `berth_store` (the store id every node bound the controller key to), `berth_leader` and the
 *   epoch counter are copied like any other row, so the nodes accept the migrated controller and the next leader's
 *   epoch is above every epoch they have seen; nothing here makes a new id or a new epoch;
 * - **the same schema versions**: a store moves only at the version this berth writes on both engines (its tables
 *   then have the same columns), so rows are copied column for column, never converted;
 * - **an empty target**: a database that holds any berth row beyond what schema creation seeds (the epoch counter at
 *   0, the schema versions) is refused, naming what it holds: it is another store, or half of one;
 * - **no live holder**: a source with a live owner lease (a `berth serve`, a CLI verb in flight, the leader) is
 *   refused, naming the holder; judged like crash recovery judges owners (src/core/mesh/owner-liveness.ts).
 */
import { err, ok, type Result } from "../../kit/result.js";
import { type HereFacts, judgeOwner, type OwnerLease } from "../mesh/owner-liveness.js";

export interface ColumnShape {
  readonly name: string;
  /** A generated column (audit_event.phase): computed by each engine, never copied. */
  readonly generated: boolean;
}

export interface TableShape {
  readonly name: string;
  readonly columns: readonly ColumnShape[];
  /** Primary-key columns in key order; empty when the table has none (rows are then copied in storage order). */
  readonly primaryKey: readonly string[];
  readonly rows: number;
}

/** Tables the store's schema creation fills with a seed row; the copy replaces the seed with the source's row. */
export const SEEDED_TABLES: ReadonlySet<string> = new Set(["berth_lease_epoch", "berth_store"]);
/** Schema bookkeeping: compared (versions must match), never copied. */
export const SCHEMA_TABLE = "berth_schema";

export type Verdict = Result<void>;

// ─── the source ──────────────────────────────────────────────────────────────────────────────────────────────────

export interface SourceOwner {
  readonly lease: OwnerLease;
  /** The start time of the owner's pid on this machine now, when the shell probed it (same host and boot); else null. */
  readonly pidStartTime: string | null;
}

export interface SourceLeader {
  readonly owner_id: string;
  readonly epoch: number;
  readonly pid: number;
  readonly host: string;
  readonly released_ms: number | null;
}

/** Who still holds the source, in words (empty when nobody does). */
export function liveHolders(
  owners: readonly SourceOwner[],
  leader: SourceLeader | null,
  here: Omit<HereFacts, "pid_start_time">,
): string[] {
  const held: string[] = [];
  for (const { lease, pidStartTime } of owners) {
    const verdict = judgeOwner(lease, { ...here, pid_start_time: pidStartTime });
    if (!verdict.alive) continue;
    const leads = leader !== null && leader.released_ms === null && leader.owner_id === lease.owner_id;
    const role = leads ? `the leader (epoch ${leader.epoch}), ` : "";
    held.push(
      `${role}pid ${lease.pid} on ${lease.host}, owner ${lease.owner_id} since ${new Date(lease.renewed_ms).toISOString()} (${verdict.why.replace(/^its owner \(.*?\) /, "")})`,
    );
  }
  return held;
}

export function judgeSource(
  owners: readonly SourceOwner[],
  leader: SourceLeader | null,
  here: Omit<HereFacts, "pid_start_time">,
): Verdict {
  const held = liveHolders(owners, leader, here);
  if (held.length === 0) return ok();
  return err(
    `the source store is in use by ${held.join("; ")}: stop every berth serve and CLI verb on it first (a store moves only while nobody acts on it), then run berth migrate again`,
  );
}

// ─── the target ──────────────────────────────────────────────────────────────────────────────────────────────────

export interface TargetContents {
  /** Every table in the target's schema with its row count, before anything is created. */
  readonly tables: readonly { readonly name: string; readonly rows: number }[];
  /** `berth_lease_epoch.epoch` when that table has its row. */
  readonly leaseEpoch: number | null;
  /** `berth_store.store_id` when the target already has one. */
  readonly storeId: string | null;
}

export function judgeTarget(t: TargetContents): Verdict {
  const held = t.tables.filter((table) => {
    if (table.rows === 0 || table.name === SCHEMA_TABLE) return false;
    // The counter's seed row (epoch 0) is what schema creation leaves; an epoch above it was taken by someone.
    if (table.name === "berth_lease_epoch") return !(table.rows === 1 && (t.leaseEpoch ?? 0) === 0);
    return true;
  });
  if (held.length === 0) return ok();
  const what = held.map((table) => `${table.name} (${table.rows} row${table.rows === 1 ? "" : "s"})`).join(", ");
  const store = t.storeId === null ? "" : ` It is controller store ${t.storeId}.`;
  return err(
    `the target database is not empty: it holds ${what}.${store} berth migrate writes only into an empty database (one made for it with CREATE DATABASE); nothing was written`,
  );
}

// ─── the copy ────────────────────────────────────────────────────────────────────────────────────────────────────

export interface TableCopy {
  readonly table: string;
  /** The columns copied, in this order, on both sides. */
  readonly columns: readonly string[];
  /** The source's rows in this order (the primary key, else storage order). */
  readonly orderBy: readonly string[];
  readonly rows: number;
  /** The target's schema creation seeded this table: its seed row is removed first. */
  readonly replaceSeed: boolean;
}

export interface PlannedCopy {
  readonly copies: readonly TableCopy[];
  /** Why a table was not copied (an empty table the target does not have; a target table the source lacks). */
  readonly notes: readonly string[];
}

/** The copies to make, or why the source cannot be copied as it is. */
export type CopyPlan = Result<PlannedCopy>;

/**
 * Which rows go where, once the target's schema exists (in the same transaction as the copy). `versions` are each
 * component's schema version in the source and in the target after its schema creation.
 */
export function planCopy(
  source: readonly TableShape[],
  target: readonly TableShape[],
  versions: { readonly source: ReadonlyMap<string, number>; readonly target: ReadonlyMap<string, number> },
): CopyPlan {
  const problems: string[] = [];
  for (const [component, from] of versions.source) {
    const to = versions.target.get(component);
    if (to === from) continue;
    if (to === undefined)
      problems.push(
        `the source has ${component} tables (schema version ${from}) the PostgreSQL store of this berth does not make`,
      );
    else if (from < to)
      problems.push(
        `the source's ${component} tables are schema version ${from}, the new store's ${to}: run any berth verb on the source once with this berth (it upgrades them), then migrate`,
      );
    else
      problems.push(
        `the source's ${component} tables are schema version ${from}, newer than this berth writes (${to}): migrate with the berth that wrote them`,
      );
  }
  const byName = new Map(target.map((t) => [t.name, t]));
  const copies: TableCopy[] = [];
  const notes: string[] = [];
  for (const table of [...source].sort((a, b) => a.name.localeCompare(b.name))) {
    if (table.name === SCHEMA_TABLE || table.name.startsWith("sqlite_")) continue;
    const into = byName.get(table.name);
    if (into === undefined) {
      if (table.rows === 0) notes.push(`${table.name}: empty in the source and not part of the new store; not copied`);
      else problems.push(`the source's table ${table.name} (${table.rows} rows) has no place in the new store`);
      continue;
    }
    const intoColumns = new Map(into.columns.map((c) => [c.name, c]));
    const columns: string[] = [];
    for (const column of table.columns) {
      if (column.generated) continue;
      const there = intoColumns.get(column.name);
      if (there === undefined || there.generated)
        problems.push(`${table.name}.${column.name} has no column to go to in the new store`);
      else columns.push(column.name);
    }
    if (into.rows > 0 && !SEEDED_TABLES.has(table.name))
      problems.push(`the new store's ${table.name} already holds ${into.rows} row(s) after its schema was made`);
    copies.push({
      table: table.name,
      columns,
      orderBy: table.primaryKey,
      rows: table.rows,
      replaceSeed: into.rows > 0,
    });
  }
  const sourceNames = new Set(source.map((t) => t.name));
  for (const t of target)
    if (!sourceNames.has(t.name) && t.name !== SCHEMA_TABLE)
      notes.push(`${t.name}: not in the source; left empty in the new store`);
  if (problems.length > 0)
    return err(`the source cannot be copied as it is: ${problems.join("; ")}; nothing was written`);
  return ok({ copies, notes });
}

// ─── the check after the copy ────────────────────────────────────────────────────────────────────────────────────

/** Compares what the copy read (per table: rows and a digest of them) with what the target holds afterwards. */
export function judgeCopied(
  expected: ReadonlyMap<string, { readonly rows: number; readonly digest: string }>,
  found: ReadonlyMap<string, { readonly rows: number; readonly digest: string }>,
): Verdict {
  const wrong: string[] = [];
  for (const [table, want] of expected) {
    const got = found.get(table);
    if (got === undefined) wrong.push(`${table} is missing`);
    else if (got.rows !== want.rows) wrong.push(`${table} holds ${got.rows} rows, the source ${want.rows}`);
    else if (got.digest !== want.digest) wrong.push(`${table}'s rows differ from the source's`);
  }
  return wrong.length === 0
    ? ok()
    : err(`the copy does not match the source (${wrong.join("; ")}); rolled back, nothing was written`);
}
