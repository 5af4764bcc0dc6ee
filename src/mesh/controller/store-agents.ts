/**
 * The agent registry's SQL in the controller store (`agent_registry`, controller schema v7; the records and events
 * are src/core/agents/registry.ts), and the once-only import of a home's `agents.db`, where the registry lived before
 * issue 20. Every change and its chain event are one transaction, as everywhere in the store.
 *
 * The import runs when a controller opens its home (MeshController.open), on either engine: a SQLite home upgraded
 * in place, and a home whose controller was already moved to PostgreSQL by `berth migrate` before the registry was
 * part of the store. Its rows go in under the rule "the store wins" (planRegistryImport), one `agent.registry.import`
 * event records them, and after the commit the file is set aside as `agents.db.imported-<time>`, so it is read once.
 * Two processes opening one home at once both read the file; the second finds every row already there (`same`),
 * chains nothing, and finds the file gone or sets it aside.
 */
import { existsSync, renameSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { DEPLOY_TARGETS } from "../../core/agents/deploy-event.js";
import {
  type AgentRecord,
  importEventDraft,
  importIsEventful,
  planRegistryImport,
  recoveredRecord,
  type RegistryImportPlan,
  rememberEventDraft,
  specDigest,
} from "../../core/agents/registry.js";
import type { EventDraft, SealedEvent } from "../../core/chain/event.js";
import { err, ok, type Result } from "../../kit/result.js";
import type { Query, Tx } from "../../store/engine.js";
import { openDatabase } from "../../store/sqlite.js";
import type { StoredOrder } from "./move-records.js";
import type { ControllerStore } from "./store.js";
import { OPEN_SQL } from "./store-schema.js";

/** The file each home kept its registry in before issue 20. */
export const AGENTS_DB = "agents.db";
/** agents.db's own schema version (component `agents`): the only one any berth wrote. */
const AGENTS_DB_VERSION = 1;

const COLUMNS = "name, target, spec_path, spec_text, intent, deployed_ms";
/** Issue 33 (schema v10): how the last deploy of the record ended; agents.db never had them. */
const READ_COLUMNS = `${COLUMNS}, last_outcome, last_message`;

const RecordRow = z.object({
  name: z.string().min(1),
  last_outcome: z
    .string()
    .nullish()
    .transform((v) => v ?? null),
  last_message: z
    .string()
    .nullish()
    .transform((v) => v ?? null),
  target: z.enum(DEPLOY_TARGETS),
  spec_path: z.string(),
  spec_text: z.string(),
  intent: z.string(),
  deployed_ms: z.coerce.number().int(),
});

const recordOf = (row: unknown, where: string): AgentRecord => {
  const parsed = RecordRow.safeParse(row);
  if (!parsed.success)
    throw new Error(
      `${where}: an agent registry row is not one berth writes (${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")})`,
    );
  // Issue 33's outcome columns appear only when a deploy wrote them, so a record reads as it was remembered.
  const { last_outcome, last_message, ...record } = parsed.data;
  return {
    ...record,
    ...(last_outcome === null ? {} : { last_outcome }),
    ...(last_message === null ? {} : { last_message }),
  };
};

export async function agentRecord(q: Query, name: string): Promise<AgentRecord | null> {
  const row = await q.get(`SELECT ${READ_COLUMNS} FROM agent_registry WHERE name = ?`, [name]);
  return row === undefined ? null : recordOf(row, "agent_registry");
}

/** Issue 35: the columns of `agentRecords` with the spec text of a mesh agent read as "" (`meshSpecs: false`). */
const LISTED_COLUMNS = READ_COLUMNS.replace(
  "spec_text",
  "CASE WHEN target = 'kubernetes' THEN spec_text ELSE '' END AS spec_text",
);

/**
 * Every remembered agent by name. `meshSpecs: false` leaves a mesh agent's spec text out (""): for a list that reads
 * no spec of a mesh agent (`berth agents` without a selector), since the texts are most of the rows' bytes.
 */
export async function agentRecords(q: Query, o: { readonly meshSpecs?: boolean } = {}): Promise<AgentRecord[]> {
  const columns = o.meshSpecs === false ? LISTED_COLUMNS : READ_COLUMNS;
  return (await q.all(`SELECT ${columns} FROM agent_registry ORDER BY name`)).map((r) => recordOf(r, "agent_registry"));
}

/** A deploy remembers its spec by name (insert or replace), with its `agent.remember` event. */
export async function rememberAgent(store: ControllerStore, r: AgentRecord): Promise<SealedEvent> {
  return store.engine.transaction((tx) => rememberIn(store, tx, r));
}

async function rememberIn(store: ControllerStore, tx: Tx, r: AgentRecord): Promise<SealedEvent> {
  await tx.run(
    `INSERT INTO agent_registry (${READ_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)
     ON CONFLICT (name) DO UPDATE SET target = excluded.target, spec_path = excluded.spec_path,
       spec_text = excluded.spec_text, intent = excluded.intent, deployed_ms = excluded.deployed_ms,
       last_outcome = excluded.last_outcome, last_message = excluded.last_message`,
    [
      r.name,
      r.target,
      r.spec_path,
      r.spec_text,
      r.intent,
      r.deployed_ms,
      r.last_outcome ?? null,
      r.last_message ?? null,
    ],
  );
  // Issue 36: the text of every revision, found again by the digest its agent.remember event names.
  await tx.run(
    "INSERT INTO agent_revisions (name, spec_sha256, spec_path, spec_text, first_ms) VALUES (?,?,?,?,?) ON CONFLICT (name, spec_sha256) DO NOTHING",
    [r.name, specDigest(r.spec_text), r.spec_path, r.spec_text, r.deployed_ms],
  );
  return store.chain.append(tx, rememberEventDraft(r));
}

/**
 * Placements with no record of their name whose stored order keeps a deploy's spec, each with that order (store-agents
 * `recoverAgentRecords`). Issue 35: a placement `berth place` made has no spec and is never recorded, so without the
 * order's own test every keep pass read and parsed all of them (a quarter of a second at 50,000). The order is the
 * stored JSON (`JSON.stringify`, saveOrderIn), where `"agent_spec":{` can only be that key with an object value; the
 * match may take a little more (LIKE's `_`), never less, and `recoveredRecord` still decides.
 */
const UNRECORDED_PLACEMENTS = `SELECT p.name, p.instance_id, p.decision_id, p.placed_ms, o.order_json
  FROM mesh_placements p JOIN mesh_orders o ON o.decision_id = p.decision_id
  LEFT JOIN agent_registry r ON r.name = p.name
  WHERE r.name IS NULL AND o.order_json LIKE '%"agent_spec":{%'`;

async function unrecordedDeploys(q: Query, name: string | null): Promise<AgentRecord[]> {
  const rows = await q.all<{
    name: string;
    instance_id: string;
    decision_id: string;
    placed_ms: unknown;
    order_json: string;
  }>(name === null ? UNRECORDED_PLACEMENTS : `${UNRECORDED_PLACEMENTS} AND p.name = ?`, name === null ? [] : [name]);
  return rows.flatMap((row) => {
    const order = JSON.parse(row.order_json) as StoredOrder;
    const record = recoveredRecord({
      name: row.name,
      instance_id: row.instance_id,
      decision_id: row.decision_id,
      placed_ms: Number(row.placed_ms),
      agent: order.agent,
      intent: order.intent,
      start: order.start,
      spec: order.agent_spec,
    });
    return record === null ? [] : [record];
  });
}

/**
 * Issue 37: gives back the record of every agent (or of `name`) that a deploy placed and then did not record, from
 * the spec kept with the placement's decision (core/agents/registry.ts `recoveredRecord`), each with its
 * `agent.remember` event naming the decision. Read first, so a registry with nothing missing costs one query and no
 * write; then read again inside the transaction under one write lock, so two processes recovering at once write the
 * record and its event once.
 */
export async function recoverAgentRecords(store: ControllerStore, name: string | null): Promise<AgentRecord[]> {
  if ((await store.engine.read((q) => unrecordedDeploys(q, name))).length === 0) return [];
  return store.engine.transaction(async (tx) => {
    await tx.writeLock("agent_registry.recover");
    const missing = await unrecordedDeploys(tx, name);
    for (const r of missing) await rememberIn(store, tx, r);
    return missing;
  });
}

/**
 * Issue 33, `berth agent delete NAME`: the record goes, with its `agent.delete` event, only if nothing of the agent is
 * held in this store in the same transaction (a placement, an open decision, a moved record whose old copy is not yet
 * seen gone): the caller judged the target's own answer; this is the store's half of that fence, so a deploy that
 * placed the name meanwhile makes the delete refuse rather than orphan its instance.
 */
export async function deleteAgentRecord(
  store: ControllerStore,
  name: string,
  event: (r: AgentRecord) => EventDraft,
): Promise<Result<SealedEvent>> {
  return store.engine.transaction(async (tx) => {
    const record = await agentRecord(tx, name);
    if (record === null) return err(`no agent ${JSON.stringify(name)} was deployed from this berth home`);
    const held = await tx.get<{ what: string; id: string }>(
      `SELECT 'placement' AS what, instance_id AS id FROM mesh_placements WHERE name = ?
       UNION ALL SELECT 'open decision' AS what, id FROM mesh_decisions WHERE name = ? AND state IN (${OPEN_SQL})
       UNION ALL SELECT 'moved copy' AS what, instance_id AS id FROM mesh_moved WHERE name = ?`,
      [name, name, name],
    );
    if (held !== undefined) return err(`the controller still records its ${held.what} ${held.id}`);
    await tx.run("DELETE FROM agent_registry WHERE name = ?", [name]);
    await tx.run("DELETE FROM mesh_stopped WHERE name = ?", [name]);
    return ok(await store.chain.append(tx, event(record)));
  });
}

/** The rows of a home's agents.db, read-only; refuses a file a newer berth wrote. */
function legacyRecords(path: string): AgentRecord[] {
  const db = openDatabase(path, { readonly: true });
  try {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map(
        (t) => t.name,
      ),
    );
    if (tables.has("berth_schema")) {
      const v =
        (
          db.prepare("SELECT version FROM berth_schema WHERE component = 'agents'").get() as
            | { version: number }
            | undefined
        )?.version ?? 0;
      if (v > AGENTS_DB_VERSION)
        throw new Error(
          `${path} is agent registry schema version ${v}, newer than this berth reads (${AGENTS_DB_VERSION}); open this home with the berth that wrote it`,
        );
    }
    if (!tables.has("agents")) return [];
    return (db.prepare(`SELECT ${COLUMNS} FROM agents ORDER BY name`).all() as unknown[]).map((r) => recordOf(r, path));
  } finally {
    db.close();
  }
}

export interface RegistryImport {
  readonly from: string;
  readonly plan: RegistryImportPlan;
  readonly event: SealedEvent | null;
  /** Where the file was set aside, or null when another process did it first. */
  readonly setAsideAs: string | null;
}

/** Takes `home`'s agents.db into the store, once; null when the home has none. */
export async function importAgentsDb(
  store: ControllerStore,
  home: string,
  clock: () => number,
): Promise<RegistryImport | null> {
  const from = join(home, AGENTS_DB);
  if (!existsSync(from)) return null;
  let file: AgentRecord[];
  try {
    file = legacyRecords(from);
  } catch (error) {
    throw new Error(
      `cannot take the agent registry ${from} into the controller store: ${(error as Error).message}. Move the file aside to open this home without the agents it lists`,
    );
  }
  const { plan, event } = await store.engine.transaction(async (tx) => {
    const p = planRegistryImport(await agentRecords(tx), file);
    for (const r of p.insert)
      await tx.run(`INSERT INTO agent_registry (${COLUMNS}) VALUES (?,?,?,?,?,?)`, [
        r.name,
        r.target,
        r.spec_path,
        r.spec_text,
        r.intent,
        r.deployed_ms,
      ]);
    return {
      plan: p,
      event: importIsEventful(p) ? await store.chain.append(tx, importEventDraft(from, hostname(), p)) : null,
    };
  });
  const aside = `${from}.imported-${new Date(clock()).toISOString().replace(/[:.]/g, "-")}`;
  let setAsideAs: string | null = null;
  try {
    renameSync(from, aside);
    setAsideAs = aside;
    for (const suffix of ["-wal", "-shm"])
      if (existsSync(`${from}${suffix}`)) renameSync(`${from}${suffix}`, `${aside}${suffix}`);
  } catch (error) {
    // Another process opening this home set it aside first; anything else is worth the caller's attention.
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return { from, plan, event, setAsideAs };
}

/** Issue 36: the spec text an agent was deployed with, by its digest (null: never stored here). */
export async function agentRevisionText(
  q: Query,
  name: string,
  specSha256: string,
): Promise<{ spec_path: string; spec_text: string } | null> {
  const row = await q.get<{ spec_path: string; spec_text: string }>(
    "SELECT spec_path, spec_text FROM agent_revisions WHERE name = ? AND spec_sha256 = ?",
    [name, specSha256],
  );
  return row ?? null;
}
