/**
 * The controller's tables and their migrations (spec/mesh.md §14.1), one schema version line for both engines: a
 * store at version N has the same tables and columns on SQLite and on PostgreSQL, so `berth migrate` copies rows
 * column for column. SQLite walks the history (v1 … v12) as an older file needs; PostgreSQL, which no berth before
 * issue 20 wrote, starts at version 4's layout and walks on from there.
 */
import { specDigest } from "../../core/agents/registry.js";
import { OPEN_STATES } from "../../core/mesh/decision-state.js";
import type { Tx } from "../../store/engine.js";
import { ensureLeaseTables } from "../../store/lease.js";
import { ensureSchemaOn } from "../../store/schema.js";
import { backfillPlacementSummary } from "./store-placements.js";

export const CONTROLLER_SCHEMA_VERSION = 12;

/** The open states as an SQL list: the name reservation's partial index and the holder lookup use it. */
export const OPEN_SQL = OPEN_STATES.map((s) => `'${s}'`).join(",");

export async function ensureControllerSchema(tx: Tx): Promise<void> {
  await ensureSchemaOn(tx, "mesh_controller", CONTROLLER_SCHEMA_VERSION, (from) =>
    tx.kind === "sqlite" ? migrateSqlite(tx, from) : migratePostgres(tx, from),
  );
}

async function migrateSqlite(tx: Tx, from: number): Promise<void> {
  if (from === 0) {
    await tx.exec(`
      CREATE TABLE mesh_targets (addr TEXT PRIMARY KEY, node_id TEXT UNIQUE, key TEXT, tier TEXT NOT NULL,
                                 tier_source TEXT NOT NULL, learned_ms INTEGER);
      CREATE TABLE mesh_decisions (id TEXT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL, node_id TEXT,
                                   variant TEXT, package_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
                                   workload TEXT NOT NULL);
      CREATE UNIQUE INDEX mesh_decisions_open_name ON mesh_decisions (name)
        WHERE state IN ('dispatching', 'unsettled');
      CREATE TABLE mesh_attempts (decision_id TEXT NOT NULL, n INTEGER NOT NULL, node_id TEXT NOT NULL,
                                  variant TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT, code TEXT, reason TEXT,
                                  PRIMARY KEY (decision_id, n));
      CREATE TABLE mesh_placements (instance_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, node_id TEXT NOT NULL,
                                    decision_id TEXT NOT NULL UNIQUE, variant TEXT NOT NULL, route TEXT NOT NULL,
                                    package_id TEXT NOT NULL, placed_ms INTEGER NOT NULL, adopted INTEGER NOT NULL,
                                    pending TEXT, workload TEXT NOT NULL);
    `);
  }
  // v2: the decisions by state (unsettled(), the start-up scan of `dispatching`) without a table scan.
  if (from < 2) await tx.exec("CREATE INDEX mesh_decisions_state ON mesh_decisions (state, created_ms, id)");
  // v3 (issue 21): owner leases, the owner and epoch of each decision, and the name reserved by every open state.
  if (from < 3) {
    await ensureLeaseTables(tx);
    await tx.exec(`
      ALTER TABLE mesh_decisions ADD COLUMN owner_id TEXT;
      ALTER TABLE mesh_decisions ADD COLUMN epoch INTEGER;
      DROP INDEX mesh_decisions_open_name;
      CREATE UNIQUE INDEX mesh_decisions_open_name ON mesh_decisions (name) WHERE state IN (${OPEN_SQL});
    `);
  }
  // v4 (issue 16): each target's last contacts, so liveness is the store's, not one process's memory.
  if (from < 4) {
    await tx.exec(`
      ALTER TABLE mesh_targets ADD COLUMN last_ok_ms INTEGER;
      ALTER TABLE mesh_targets ADD COLUMN unreachable_since_ms INTEGER;
      ALTER TABLE mesh_targets ADD COLUMN last_error TEXT;
      ALTER TABLE mesh_targets ADD COLUMN name TEXT;
      ALTER TABLE mesh_targets ADD COLUMN contact_ms INTEGER;
    `);
  }
  // v5 (issue 16, taken in by issue 20): the last stamped request and advertised lease per node (watch-stamps.ts).
  // IF NOT EXISTS: a store written before v5 may hold the table already (it was created outside the schema then).
  if (from < 5)
    await tx.exec(
      "CREATE TABLE IF NOT EXISTS mesh_watch_nodes (node_id TEXT PRIMARY KEY, last_sent_ms INTEGER, lease_ms INTEGER)",
    );
  if (from < 6) await tx.exec(v6Tables("INTEGER"));
  if (from < 7) await tx.exec(v7Tables("INTEGER"));
  if (from < 8) await v8Summary(tx, "INTEGER");
  if (from < 9) await v9DecisionSeq(tx, "INTEGER");
  if (from < 10) await v10Tables(tx, "INTEGER");
  if (from < 11) await v11Revisions(tx, "INTEGER");
  if (from < 12) await tx.exec(v12Observations("INTEGER"));
}

/**
 * v6 (issue 16, move-records.ts and watch-stamps.ts): the operator's node marks, the stored order per decision, moved
 * records and lineage counts, and one row per stamped request (taken back when it provably never left).
 */
function v6Tables(ms: "INTEGER" | "BIGINT"): string {
  return `
    CREATE TABLE IF NOT EXISTS mesh_node_admin (node_id TEXT PRIMARY KEY, cordoned INTEGER NOT NULL DEFAULT 0, cordon_reason TEXT,
                                                forgotten_ms ${ms}, forget_reason TEXT);
    CREATE TABLE IF NOT EXISTS mesh_orders (decision_id TEXT PRIMARY KEY, order_json TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS mesh_moved (instance_id TEXT PRIMARY KEY, name TEXT NOT NULL, node_id TEXT NOT NULL,
                                           decision_id TEXT NOT NULL, package_id TEXT NOT NULL, authority TEXT NOT NULL,
                                           moved_ms ${ms} NOT NULL, moves INTEGER NOT NULL, successor TEXT, workload TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS mesh_lineage (decision_id TEXT PRIMARY KEY, moves INTEGER NOT NULL, from_instance TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS mesh_watch_sends (id TEXT PRIMARY KEY, node_id TEXT NOT NULL, issued_at_ms ${ms} NOT NULL,
                                                 settled INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX IF NOT EXISTS mesh_watch_sends_node ON mesh_watch_sends (node_id, issued_at_ms);
  `;
}

/**
 * v7 (issue 20): the agent registry (src/agents/registry.ts), once each home's `agents.db`, so every server on one
 * store knows the agents deployed through any of them, `berth migrate` carries it, and a new leader's Kubernetes
 * keeper keeps them. Same columns as agents.db's `agents` table (registry-import.ts copies them in).
 */
function v7Tables(ms: "INTEGER" | "BIGINT"): string {
  return `
    CREATE TABLE IF NOT EXISTS agent_registry (name TEXT PRIMARY KEY, target TEXT NOT NULL, spec_path TEXT NOT NULL,
                                               spec_text TEXT NOT NULL, intent TEXT NOT NULL, deployed_ms ${ms} NOT NULL);
  `;
}

/**
 * v8 (issue 19, store-placements.ts): the placement history as the engine reads it, kept beside the rows: each
 * placement's declared memory as a column, its labels one row each (indexed by label), the totals per node, and the
 * placements by (node, placed time) for the ones placed since a node's facts were issued. Filled from the rows
 * already there, in the migration's transaction.
 */
async function v8Summary(tx: Tx, big: "INTEGER" | "BIGINT"): Promise<void> {
  await tx.exec(`
    ALTER TABLE mesh_placements ADD COLUMN memory_bytes ${big} NOT NULL DEFAULT 0;
    CREATE TABLE mesh_placement_labels (instance_id TEXT NOT NULL, role TEXT NOT NULL, pos INTEGER NOT NULL, label TEXT NOT NULL,
                                        PRIMARY KEY (instance_id, role, pos));
    CREATE INDEX mesh_placement_labels_label ON mesh_placement_labels (role, label);
    CREATE TABLE mesh_node_loads (node_id TEXT PRIMARY KEY, placements INTEGER NOT NULL, memory_bytes ${big} NOT NULL);
    CREATE INDEX mesh_placements_node_placed ON mesh_placements (node_id, placed_ms);
  `);
  await backfillPlacementSummary(tx);
}

/**
 * v9 (issue 19): where each decision's event is on the chain (chain id and seq), so it is one primary-key read now
 * that no index keys the events on their hash (chain schema v2, spec/audit-chain.md §7). Filled from the stored
 * chains, in the migration's transaction, with one pass over the `workload.place` events.
 */
async function v9DecisionSeq(tx: Tx, big: "INTEGER" | "BIGINT"): Promise<void> {
  await tx.exec(
    `ALTER TABLE mesh_decisions ADD COLUMN event_chain_id TEXT; ALTER TABLE mesh_decisions ADD COLUMN event_seq ${big};`,
  );
  const ids = new Set((await tx.all<{ id: string }>("SELECT id FROM mesh_decisions")).map((r) => r.id));
  if (ids.size === 0) return;
  const events = await tx.all<{ chain_id: string; seq: number; hash: string }>(
    "SELECT chain_id, seq, hash FROM audit_event WHERE kind = 'workload.place'",
  );
  for (const e of events) {
    if (ids.has(e.hash))
      await tx.run("UPDATE mesh_decisions SET event_chain_id = ?, event_seq = ? WHERE id = ?", [
        e.chain_id,
        Number(e.seq),
        e.hash,
      ]);
  }
}

/**
 * v10 (issue 33): what a user asked for stays asked.
 * - `mesh_stopped`: the names a person stopped (`berth agent stop`, `berth instance stop`), written in the transaction
 *   of the chained stop request and cleared by a placement of the name (a deploy) or an explicit start; the keep
 *   loop never starts, moves or places again a name listed here (core/mesh/keep.ts).
 * - `agent_registry.last_outcome`/`last_message`: how the last deploy of a remembered agent ended, so a record a
 *   deploy left after it failed says why (a deploy refused before anything was accepted leaves no record at all).
 * - `mesh_revocation_nodes`: per node, the sequence of the signed revocation list it last acknowledged, and
 *   `mesh_revocation_publications`: per generation of the controller's list, its digest and the chained event that
 *   authorises pushing it (revocation-push.ts); a node behind the controller's list gets no placement until it has it.
 */
async function v10Tables(tx: Tx, ms: "INTEGER" | "BIGINT"): Promise<void> {
  // The registry's columns only where they are missing: a store may reach v10's steps with them already there.
  const have =
    tx.kind === "sqlite"
      ? new Set((await tx.all<{ name: string }>("PRAGMA table_info(agent_registry)")).map((c) => c.name))
      : new Set(
          (
            await tx.all<{ column_name: string }>(
              "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'agent_registry'",
            )
          ).map((c) => c.column_name),
        );
  for (const column of ["last_outcome", "last_message"])
    if (!have.has(column)) await tx.exec(`ALTER TABLE agent_registry ADD COLUMN ${column} TEXT`);
  await tx.exec(`
    CREATE TABLE IF NOT EXISTS mesh_stopped (name TEXT PRIMARY KEY, instance_id TEXT NOT NULL, stopped_ms ${ms} NOT NULL,
                                             request_id TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS mesh_revocation_nodes (node_id TEXT PRIMARY KEY, seq ${ms} NOT NULL, acked_ms ${ms} NOT NULL);
    CREATE TABLE IF NOT EXISTS mesh_revocation_publications (generation ${ms} PRIMARY KEY, sha256 TEXT NOT NULL,
                                                             decision_id TEXT NOT NULL, published_ms ${ms} NOT NULL);
  `);
}

/**
 * v11 (issue 36, `berth agent history|rollback NAME`): every spec text an agent was deployed with, by name and digest.
 * The chain's `agent.remember` events name each revision by its `spec_sha256` (the text is not chained: it may name
 * secret files); this is where a revision's text is found again for a diff or a rollback. Filled from the registry's
 * current specs, in the migration's transaction.
 */
async function v11Revisions(tx: Tx, ms: "INTEGER" | "BIGINT"): Promise<void> {
  await tx.exec(`
    CREATE TABLE IF NOT EXISTS agent_revisions (name TEXT NOT NULL, spec_sha256 TEXT NOT NULL, spec_path TEXT NOT NULL,
                                                spec_text TEXT NOT NULL, first_ms ${ms} NOT NULL, PRIMARY KEY (name, spec_sha256));
  `);
  for (const r of await tx.all<{ name: string; spec_path: string; spec_text: string; deployed_ms: number }>(
    "SELECT name, spec_path, spec_text, deployed_ms FROM agent_registry",
  )) {
    await tx.run(
      "INSERT INTO agent_revisions (name, spec_sha256, spec_path, spec_text, first_ms) VALUES (?,?,?,?,?) ON CONFLICT (name, spec_sha256) DO NOTHING",
      [r.name, specDigest(r.spec_text), r.spec_path, r.spec_text, Number(r.deployed_ms)],
    );
  }
}

/**
 * v12 (issue 35, store-observations.ts): each placed instance as its node last reported it (core/mesh/
 * instance-observation.ts), written by the serve loop's observe step, a deploy's observation and `--refresh`, and
 * read by the lists that ask no node (`berth instances`, `agents`), which show it with its age. Not chained: an
 * observation is not a decision. Empty after the migration: nothing was recorded before, and the lists say "never seen".
 */
function v12Observations(ms: "INTEGER" | "BIGINT"): string {
  return `
    CREATE TABLE IF NOT EXISTS mesh_observations (instance_id TEXT PRIMARY KEY, node_id TEXT NOT NULL, state TEXT NOT NULL,
                                                  lifecycle TEXT, restarts INTEGER, pid INTEGER, started_ms ${ms},
                                                  seen_ms ${ms} NOT NULL);
  `;
}

/** PostgreSQL: version 4's layout for a new store, then the same steps as SQLite from v5 on. */
async function migratePostgres(tx: Tx, from: number): Promise<void> {
  if (from !== 0 && from < 4)
    throw new Error(
      `no PostgreSQL migration from controller schema version ${from}: PostgreSQL stores start at version 4`,
    );
  if (from === 0) await createPostgresV4(tx);
  if (from < 5)
    await tx.exec(
      "CREATE TABLE IF NOT EXISTS mesh_watch_nodes (node_id TEXT PRIMARY KEY, last_sent_ms BIGINT, lease_ms BIGINT)",
    );
  if (from < 6) await tx.exec(v6Tables("BIGINT"));
  if (from < 7) await tx.exec(v7Tables("BIGINT"));
  if (from < 8) await v8Summary(tx, "BIGINT");
  if (from < 9) await v9DecisionSeq(tx, "BIGINT");
  if (from < 10) await v10Tables(tx, "BIGINT");
  if (from < 11) await v11Revisions(tx, "BIGINT");
  if (from < 12) await tx.exec(v12Observations("BIGINT"));
}

/** Version 4's layout in PostgreSQL's words: BIGINT milliseconds, the same names, keys and partial indexes. */
async function createPostgresV4(tx: Tx): Promise<void> {
  await ensureLeaseTables(tx);
  await tx.exec(`
    CREATE TABLE mesh_targets (addr TEXT PRIMARY KEY, node_id TEXT UNIQUE, key TEXT, tier TEXT NOT NULL,
                               tier_source TEXT NOT NULL, learned_ms BIGINT, last_ok_ms BIGINT,
                               unreachable_since_ms BIGINT, last_error TEXT, name TEXT, contact_ms BIGINT);
    CREATE TABLE mesh_decisions (id TEXT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL, node_id TEXT,
                                 variant TEXT, package_id TEXT NOT NULL, created_ms BIGINT NOT NULL,
                                 workload TEXT NOT NULL, owner_id TEXT, epoch BIGINT);
    CREATE UNIQUE INDEX mesh_decisions_open_name ON mesh_decisions (name) WHERE state IN (${OPEN_SQL});
    CREATE INDEX mesh_decisions_state ON mesh_decisions (state, created_ms, id);
    CREATE TABLE mesh_attempts (decision_id TEXT NOT NULL, n INTEGER NOT NULL, node_id TEXT NOT NULL,
                                variant TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT, code TEXT, reason TEXT,
                                PRIMARY KEY (decision_id, n));
    CREATE TABLE mesh_placements (instance_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, node_id TEXT NOT NULL,
                                  decision_id TEXT NOT NULL UNIQUE, variant TEXT NOT NULL, route TEXT NOT NULL,
                                  package_id TEXT NOT NULL, placed_ms BIGINT NOT NULL, adopted INTEGER NOT NULL,
                                  pending TEXT, workload TEXT NOT NULL);
  `);
}
