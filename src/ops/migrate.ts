/**
 * `berth migrate --from sqlite:PATH --to postgres://…` (issue 20), the shell: moves an existing controller store from
 * its SQLite file into an empty PostgreSQL database, whole, in one PostgreSQL transaction. The decisions are pure
 * (src/core/store/migrate-plan.ts); this reads, copies and checks.
 *
 *   SQLite source (BEGIN IMMEDIATE held throughout: nobody opens a lease or changes a row meanwhile)
 *     ├─ owners and leader judged (judgeSource): a live holder refuses, named
 *     ├─ its own chain verified, owned by the key given
 *     └─ every table's shape, rows and schema versions
 *   PostgreSQL target, one transaction:
 *     ├─ its contents judged (judgeTarget): anything beyond schema seeds refuses
 *     ├─ the store's schema made (the same DDL `berth serve --database` runs)
 *     ├─ planCopy; every row copied column for column, in key order; each table read back and compared (judgeCopied)
 *     ├─ `controller.migrate` appended to the copied chain, signed with the controller key (who, why, what)
 *     └─ the chain verified from genesis to that event, then COMMIT
 *   then the source file is set aside (controller.db.migrated-<time>), so no berth opens the old home as this store.
 *
 * The store id (`berth_store`), the leader row and the epoch counter are rows like the others: the migrated
 * controller is the same store to every node (no `foreign_store`), and its next leader's epoch is above all they saw.
 *
 * (About 430 lines, one concept: one move of a store, read, copy and check in one transaction each side.)
 */
import { createHash } from "node:crypto";
import { existsSync, renameSync } from "node:fs";
import { hostname } from "node:os";
import { verifyStoredChain } from "../chain/chain.js";
import { tipOn, verifyStoredOn } from "../chain/engine-chain.js";
import { ownChain } from "../chain/read.js";
import { ensureChainSchemaOn } from "../chain/schema.js";
import { sealEvent } from "../core/chain/event.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import type { SigningKey } from "../core/crypto/ed25519.js";
import { needsPidProbe, type OwnerLease } from "../core/mesh/owner-liveness.js";
import {
  judgeCopied,
  judgeSource,
  judgeTarget,
  planCopy,
  type SourceLeader,
  type SourceOwner,
  type TableCopy,
  type TableShape,
} from "../core/store/migrate-plan.js";
import { ensureControllerSchema } from "../mesh/controller/store-schema.js";
import type { SqlValue, StoreEngine, Tx } from "../store/engine.js";
import { ensureAuthorityTables } from "../store/leader-authority.js";
import { bootId, processStartTime } from "../store/lease.js";
import { type Db, openDatabase } from "../store/sqlite.js";

export interface MigrateRequest {
  /** The SQLite controller store (a home's controller.db). */
  readonly sourcePath: string;
  /** The PostgreSQL store, opened (PostgresEngine); `location` is its address without the password. */
  readonly target: StoreEngine;
  /** The controller's identity key: it must own the source's chain, and signs the migration event. */
  readonly key: SigningKey;
  readonly operator: JsonObject;
  readonly reason: string;
  readonly clock: () => number;
}

export type MigrateResult =
  | {
      readonly kind: "migrated";
      readonly store_id: string;
      readonly chain_id: string;
      /** Rows copied per table. */
      readonly tables: Readonly<Record<string, number>>;
      /** The migration's own event on the new store's chain. */
      readonly event: { readonly seq: number; readonly hash: string };
      readonly notes: readonly string[];
      /** Where the SQLite file was set aside, or why it could not be. */
      readonly source_moved_to: string | null;
      readonly source_move_error: string | null;
    }
  | { readonly kind: "refused"; readonly reason: string };

/** A refusal found inside the target transaction: rolls it back and becomes the answer. */
class Refused extends Error {
  override name = "Refused";
}

const PAGE = 200;

/**
 * A table's digest: the sorted hashes of its rows, so it does not depend on how each engine orders text (SQLite by
 * bytes, PostgreSQL by the database's collation).
 */
class TableDigest {
  private readonly rows: string[] = [];
  add(row: Record<string, unknown>, columns: readonly string[]): void {
    this.rows.push(createHash("sha256").update(rowKey(row, columns)).digest("hex"));
  }
  get count(): number {
    return this.rows.length;
  }
  digest(): string {
    return createHash("sha256").update(this.rows.sort().join("\n")).digest("hex");
  }
}

/** One row's values as the digest sees them: the same on both engines (BIGINT read back as numbers). */
function rowKey(row: Record<string, unknown>, columns: readonly string[]): string {
  return JSON.stringify(
    columns.map((c) => {
      const v = row[c];
      if (typeof v === "bigint") return Number(v);
      if (Buffer.isBuffer(v)) return `hex:${v.toString("hex")}`;
      return v ?? null;
    }),
  );
}

function sqlValue(v: unknown, where: string): SqlValue {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "bigint") return v;
  throw new Refused(
    `${where} holds a ${Buffer.isBuffer(v) ? "binary" : typeof v} value, which berth's stores never write; nothing was written`,
  );
}

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Refused(`table or column name ${JSON.stringify(name)} is not one berth writes; nothing was written`);
  return `"${name}"`;
};

// ─── the source ──────────────────────────────────────────────────────────────────────────────────────────────────

function sourceTables(db: Db): TableShape[] {
  const names = (
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as Array<{ name: string }>
  ).map((r) => r.name);
  return names.map((name) => {
    // table_xinfo lists generated columns too: hidden 2 (virtual) and 3 (stored).
    const cols = db.prepare(`PRAGMA table_xinfo(${ident(name)})`).all() as Array<{
      name: string;
      pk: number;
      hidden: number;
    }>;
    const primaryKey = cols
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    const { n } = db.prepare(`SELECT COUNT(*) AS n FROM ${ident(name)}`).get() as { n: number };
    return {
      name,
      rows: n,
      primaryKey,
      columns: cols.map((c) => ({ name: c.name, generated: c.hidden === 2 || c.hidden === 3 })),
    };
  });
}

function sourceVersions(db: Db, tables: readonly TableShape[]): Map<string, number> {
  if (!tables.some((t) => t.name === "berth_schema")) return new Map();
  const rows = db.prepare("SELECT component, version FROM berth_schema").all() as Array<{
    component: string;
    version: number;
  }>;
  return new Map(rows.map((r) => [r.component, r.version]));
}

function sourceHolders(db: Db, tables: readonly TableShape[]): { owners: SourceOwner[]; leader: SourceLeader | null } {
  const has = (t: string) => tables.some((x) => x.name === t);
  const leases = has("berth_owners")
    ? (db
        .prepare(
          "SELECT owner_id, epoch, pid, start_time, boot_id, host, renewed_ms, ttl_ms, released_ms FROM berth_owners WHERE released_ms IS NULL",
        )
        .all() as OwnerLease[])
    : [];
  const leader = has("berth_leader")
    ? ((db.prepare("SELECT owner_id, epoch, pid, host, released_ms FROM berth_leader WHERE id = 1").get() as
        | SourceLeader
        | undefined) ?? null)
    : null;
  const here = { host: hostname(), boot_id: bootId() };
  return {
    owners: leases.map((lease) => ({
      lease,
      pidStartTime: needsPidProbe(lease, here) ? processStartTime(lease.pid) : null,
    })),
    leader,
  };
}

function* sourceRows(db: Db, copy: TableCopy): Iterable<Array<Record<string, unknown>>> {
  const order = copy.orderBy.length > 0 ? copy.orderBy.map(ident).join(", ") : "rowid";
  const select = db.prepare(
    `SELECT ${copy.columns.map(ident).join(", ")} FROM ${ident(copy.table)} ORDER BY ${order} LIMIT ? OFFSET ?`,
  );
  for (let offset = 0; ; offset += PAGE) {
    const page = select.all(PAGE, offset) as Array<Record<string, unknown>>;
    if (page.length === 0) return;
    yield page;
  }
}

// ─── the target ──────────────────────────────────────────────────────────────────────────────────────────────────

async function targetTables(tx: Tx): Promise<TableShape[]> {
  const cols = await tx.all<{ table_name: string; column_name: string; is_generated: string }>(
    "SELECT table_name, column_name, is_generated FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
  );
  const keys = await tx.all<{ table_name: string; column_name: string; ordinal_position: number }>(
    `SELECT k.table_name, k.column_name, k.ordinal_position FROM information_schema.table_constraints c
       JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
      WHERE c.table_schema = current_schema() AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.table_name, k.ordinal_position`,
  );
  const names = [...new Set(cols.map((c) => c.table_name))];
  const out: TableShape[] = [];
  for (const name of names) {
    const counted = await tx.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${ident(name)}`);
    out.push({
      name,
      rows: Number(counted?.n ?? 0),
      primaryKey: keys.filter((k) => k.table_name === name).map((k) => k.column_name),
      columns: cols
        .filter((c) => c.table_name === name)
        .map((c) => ({ name: c.column_name, generated: c.is_generated === "ALWAYS" })),
    });
  }
  return out;
}

/** The controller store's whole schema, as `berth serve --database` makes it, inside the migration's transaction. */
async function createStoreSchema(tx: Tx, nowMs: number): Promise<void> {
  await ensureChainSchemaOn(tx);
  await ensureControllerSchema(tx);
  await ensureAuthorityTables(tx, nowMs);
}

async function copyTable(tx: Tx, db: Db, copy: TableCopy): Promise<{ rows: number; digest: string }> {
  if (copy.replaceSeed) await tx.run(`DELETE FROM ${ident(copy.table)}`);
  const digest = new TableDigest();
  let rows = 0;
  const columns = copy.columns.map(ident).join(", ");
  const one = `(${copy.columns.map(() => "?").join(", ")})`;
  for (const page of sourceRows(db, copy)) {
    const params: SqlValue[] = [];
    for (const row of page) {
      digest.add(row, copy.columns);
      for (const c of copy.columns) params.push(sqlValue(row[c], `${copy.table}.${c}`));
    }
    try {
      await tx.run(`INSERT INTO ${ident(copy.table)} (${columns}) VALUES ${page.map(() => one).join(", ")}`, params);
    } catch (error) {
      // A serialisation failure is the engine's to retry (the whole transaction runs again); anything else is a row
      // the new store refuses: the answer, with the whole transaction rolled back.
      const code = (error as { code?: unknown }).code;
      if (code === "40001" || code === "40P01") throw error;
      throw new Refused(
        `the new store refused a row of ${copy.table} (rows ${rows + 1}…${rows + page.length}): ${(error as Error).message}; rolled back, nothing was written`,
      );
    }
    rows += page.length;
  }
  return { rows, digest: digest.digest() };
}

async function readBack(tx: Tx, copy: TableCopy): Promise<{ rows: number; digest: string }> {
  const order = copy.orderBy.length > 0 ? copy.orderBy.map(ident).join(", ") : copy.columns.map(ident).join(", ");
  const digest = new TableDigest();
  for (let offset = 0; ; offset += PAGE) {
    const page = await tx.all<Record<string, unknown>>(
      `SELECT ${copy.columns.map(ident).join(", ")} FROM ${ident(copy.table)} ORDER BY ${order} LIMIT ? OFFSET ?`,
      [PAGE, offset],
    );
    for (const row of page) digest.add(row, copy.columns);
    if (page.length < PAGE) return { rows: digest.count, digest: digest.digest() };
  }
}

async function verifyTargetChain(tx: Tx, chainId: string, key: string): Promise<void> {
  const v = await verifyStoredOn(tx, chainId, { key });
  if (!v.ok)
    throw new Refused(
      `the copied chain does not verify at seq ${v.failure?.seq} (${v.failure?.code}: ${v.failure?.detail}); rolled back, nothing was written`,
    );
}

// ─── the migration ───────────────────────────────────────────────────────────────────────────────────────────────

export async function migrateSqliteToEngine(r: MigrateRequest): Promise<MigrateResult> {
  if (!existsSync(r.sourcePath))
    return { kind: "refused", reason: `${r.sourcePath} does not exist: --from names a home's controller.db` };
  const db = openDatabase(r.sourcePath);
  let migrated: Omit<Extract<MigrateResult, { kind: "migrated" }>, "source_moved_to" | "source_move_error">;
  try {
    // Held until the copy committed: no CLI verb or server takes a lease or moves a row of the source meanwhile.
    db.exec("BEGIN IMMEDIATE");
    try {
      const tables = sourceTables(db);
      for (const needed of ["berth_store", "audit_chain", "audit_event"]) {
        if (!tables.some((t) => t.name === needed))
          return {
            kind: "refused",
            reason: `${r.sourcePath} is not a berth controller store (it has no ${needed} table)`,
          };
      }
      const { owners, leader } = sourceHolders(db, tables);
      const free = judgeSource(owners, leader, { host: hostname(), boot_id: bootId(), now_ms: r.clock() });
      if (!free.ok) return { kind: "refused", reason: free.error };
      const own = ownChain(db);
      if (own === undefined) return { kind: "refused", reason: `${r.sourcePath} has no controller chain of its own` };
      if (own.owner_key !== r.key.publicKey) {
        return {
          kind: "refused",
          reason: `the source's chain ${own.chain_id} belongs to key ${own.owner_key}, not ${r.key.publicKey}: give the controller key that made it (--key-file)`,
        };
      }
      const before = verifyStoredChain(db, own.chain_id, { key: own.owner_key });
      if (!before.ok) {
        return {
          kind: "refused",
          reason: `the source's chain does not verify at seq ${before.failure?.seq} (${before.failure?.code}); a broken chain is not moved: see \`berth audit verify\``,
        };
      }
      const storeRow = db.prepare("SELECT store_id FROM berth_store WHERE id = 1").get() as
        | { store_id: string }
        | undefined;
      if (storeRow === undefined)
        return { kind: "refused", reason: `${r.sourcePath} has no store id (berth_store is empty)` };
      const versions = sourceVersions(db, tables);

      migrated = await r.target.transaction(async (tx) => {
        const present = await targetTables(tx);
        const has = (t: string) => present.some((x) => x.name === t);
        const leaseEpoch = has("berth_lease_epoch")
          ? Number((await tx.get<{ epoch: number }>("SELECT epoch FROM berth_lease_epoch WHERE id = 1"))?.epoch ?? 0)
          : null;
        const storeId = has("berth_store")
          ? ((await tx.get<{ store_id: string }>("SELECT store_id FROM berth_store WHERE id = 1"))?.store_id ?? null)
          : null;
        const empty = judgeTarget({
          tables: present.map((t) => ({ name: t.name, rows: t.rows })),
          leaseEpoch,
          storeId,
        });
        if (!empty.ok) throw new Refused(empty.error);

        await createStoreSchema(tx, r.clock());
        const made = await targetTables(tx);
        const targetVersions = new Map(
          (await tx.all<{ component: string; version: number }>("SELECT component, version FROM berth_schema")).map(
            (v) => [v.component, Number(v.version)],
          ),
        );
        const plan = planCopy(tables, made, { source: versions, target: targetVersions });
        if (!plan.ok) throw new Refused(plan.error);

        const expected = new Map<string, { rows: number; digest: string }>();
        for (const copy of plan.value.copies) expected.set(copy.table, await copyTable(tx, db, copy));
        const found = new Map<string, { rows: number; digest: string }>();
        for (const copy of plan.value.copies) found.set(copy.table, await readBack(tx, copy));
        const same = judgeCopied(expected, found);
        if (!same.ok) throw new Refused(same.error);

        const tip = await tipOn(tx, own.chain_id);
        if (tip === undefined) throw new Refused("the copied chain has no events");
        const copied = Object.fromEntries([...expected].map(([t, v]) => [t, v.rows]));
        const { event, canonicalPayload } = sealEvent({
          chainId: own.chain_id,
          tip,
          nowMs: r.clock(),
          key: r.key,
          draft: {
            source: "trust",
            kind: "controller.migrate",
            payload: {
              from: `sqlite:${r.sourcePath}`,
              to: r.target.location,
              store_id: storeRow.store_id,
              tables: copied,
              head_before: { seq: tip.seq, hash: tip.hash },
              reason: r.reason,
              operator: r.operator,
            },
          },
        });
        await tx.run(
          "INSERT INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
          [
            event.chain_id,
            event.seq,
            event.ts,
            event.prev_hash,
            event.source,
            event.kind,
            canonicalPayload,
            event.payload_hash,
            event.hash,
            event.sig,
          ],
        );
        await verifyTargetChain(tx, own.chain_id, own.owner_key);
        return {
          kind: "migrated" as const,
          store_id: storeRow.store_id,
          chain_id: own.chain_id,
          tables: copied,
          event: { seq: event.seq, hash: event.hash },
          notes: plan.value.notes,
        };
      });
    } catch (error) {
      if (error instanceof Refused) return { kind: "refused", reason: error.message };
      throw error;
    } finally {
      if (db.inTransaction) db.exec("ROLLBACK");
    }
  } finally {
    db.close();
  }
  // Set aside, so no berth opens the old file as this store again: a fresh controller.db there is a new store (a new
  // id), which every node refuses `foreign_store`.
  const aside = `${r.sourcePath}.migrated-${new Date(r.clock()).toISOString().replace(/[:.]/g, "-")}`;
  try {
    renameSync(r.sourcePath, aside);
    for (const suffix of ["-wal", "-shm"])
      if (existsSync(`${r.sourcePath}${suffix}`)) renameSync(`${r.sourcePath}${suffix}`, `${aside}${suffix}`);
    return { ...migrated, source_moved_to: aside, source_move_error: null };
  } catch (error) {
    return { ...migrated, source_moved_to: null, source_move_error: (error as Error).message };
  }
}
