/**
 * The placements table and the history summary kept beside it (issue 19, src/core/placement/history.ts). Every
 * placement the controller records is written, and removed, here, so three things change together inside the
 * caller's transaction, and only together:
 *
 *   mesh_placements         one row per placed instance, with the memory its workload declared (a column, not JSON)
 *   mesh_placement_labels   the labels it carries and excludes, one row each, indexed by label
 *   mesh_node_loads         per node: how many placements and how much declared memory (what the engine's load
 *                           dimension reads), a row only while the node holds a placement
 *
 * Structural rules:
 * - mesh_node_loads is exactly `SELECT node_id, COUNT(*), SUM(memory_bytes) FROM mesh_placements GROUP BY node_id`
 *   after every transaction: only `insertPlacement` and `deletePlacement` touch the three tables (checked by
 *   `summaryDrift`, which the tests run after every sequence of writes, on both engines);
 * - what the engine reads of a stored placement is validated once, when it is written (the engine's own
 *   `clusterInstanceSchema`), so a decision reads typed rows and parses nothing per row;
 * - a decision reads the totals and only the instances its constraints name one by one (`historyReads`): its cost
 *   does not grow with every placement ever made, only with the nodes and the placements that matter to it.
 */

import type { HistoryReads } from "../../core/placement/history.js";
import { type ClusterInstance, clusterInstanceSchema, type PlacedTotal } from "../../core/placement/index.js";
import type { Query, SqlValue, Tx } from "../../store/engine.js";
import { dropObservation } from "./store-observations.js";
import { type PlacementRecord, type PlacementSql, placementOf, type WorkloadRecord } from "./store-records.js";

/** The labels table's two roles: labels a placed workload carries, and labels it refuses beside it. */
type LabelRole = "carries" | "excludes";

/** At most this many bound parameters per statement (SQLite's default limit is 32,766; PostgreSQL's 65,535). */
const PARAMS_PER_STATEMENT = 900;

/** What the engine will read of this placement, validated with the engine's own schema (throws on a bad record). */
export function instanceOf(
  p: Pick<PlacementRecord, "node_id" | "name" | "placed_ms">,
  w: Pick<WorkloadRecord, "labels" | "excludes" | "memory_bytes">,
): ClusterInstance {
  const parsed = clusterInstanceSchema.safeParse({
    node_id: p.node_id,
    name: p.name,
    labels: w.labels,
    excludes: w.excludes,
    memory_bytes: w.memory_bytes,
    placed_at_ms: p.placed_ms,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `placement ${p.name}: its workload record cannot be weighed by the placement engine (${issue?.path.join(".") || "record"}: ${issue?.message}); nothing was written`,
    );
  }
  return parsed.data;
}

async function insertLabels(tx: Tx, instanceId: string, inst: ClusterInstance): Promise<void> {
  const rows: SqlValue[][] = [];
  for (const [role, labels] of [
    ["carries", inst.labels],
    ["excludes", inst.excludes],
  ] as const) {
    for (const [pos, label] of labels.entries()) rows.push([instanceId, role, pos, label]);
  }
  if (rows.length === 0) return;
  await tx.run(
    `INSERT INTO mesh_placement_labels (instance_id, role, pos, label) VALUES ${rows.map(() => "(?,?,?,?)").join(", ")}`,
    rows.flat(),
  );
}

async function addLoad(tx: Tx, nodeId: string, count: number, memory: number): Promise<void> {
  await tx.run(
    "INSERT INTO mesh_node_loads (node_id, placements, memory_bytes) VALUES (?,?,?) ON CONFLICT (node_id) DO UPDATE SET placements = mesh_node_loads.placements + excluded.placements, memory_bytes = mesh_node_loads.memory_bytes + excluded.memory_bytes",
    [nodeId, count, memory],
  );
  // A node that holds nothing has no row, so the table is exactly the GROUP BY of the placements.
  if (count < 0) await tx.run("DELETE FROM mesh_node_loads WHERE node_id = ? AND placements <= 0", [nodeId]);
}

/** Records one placement, its labels and its node's totals, inside the caller's transaction. */
/** Every placement, oldest first, without its workload (what the lists show; the read-only view reads it too). */
export async function placementsOn(q: Query): Promise<PlacementRecord[]> {
  return (
    await q.all<PlacementSql>(
      "SELECT instance_id, name, node_id, decision_id, variant, route, package_id, placed_ms, adopted, pending FROM mesh_placements ORDER BY placed_ms, instance_id",
    )
  ).map(placementOf);
}

/**
 * Every placement's name and instance id, oldest first as `placementsOn` lists them (so a later copy of a name comes
 * later): all `berth agents` reads of them (issue 35: the whole rows were 30 % of its time at 10,000 agents).
 */
export async function placedNamesOn(q: Query): Promise<Array<{ name: string; instance_id: string }>> {
  return q.all<{ name: string; instance_id: string }>(
    "SELECT name, instance_id FROM mesh_placements ORDER BY placed_ms, instance_id",
  );
}

export async function insertPlacement(tx: Tx, p: PlacementRecord, workload: WorkloadRecord): Promise<void> {
  const inst = instanceOf(p, workload);
  await tx.run(
    "INSERT INTO mesh_placements (instance_id, name, node_id, decision_id, variant, route, package_id, placed_ms, adopted, pending, workload, memory_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    [
      p.instance_id,
      p.name,
      p.node_id,
      p.decision_id,
      p.variant,
      p.route,
      p.package_id,
      p.placed_ms,
      p.adopted ? 1 : 0,
      p.pending,
      JSON.stringify(workload),
      inst.memory_bytes,
    ],
  );
  await insertLabels(tx, p.instance_id, inst);
  await addLoad(tx, p.node_id, 1, inst.memory_bytes);
}

/** Removes one placement with its labels and its share of its node's totals; false when there was none. */
export async function deletePlacement(tx: Tx, instanceId: string): Promise<boolean> {
  const row = await tx.get<{ node_id: string; memory_bytes: number | string }>(
    "SELECT node_id, memory_bytes FROM mesh_placements WHERE instance_id = ?",
    [instanceId],
  );
  if (!row) return false;
  await tx.run("DELETE FROM mesh_placements WHERE instance_id = ?", [instanceId]);
  await tx.run("DELETE FROM mesh_placement_labels WHERE instance_id = ?", [instanceId]);
  await dropObservation(tx, instanceId);
  await addLoad(tx, row.node_id, -1, -Number(row.memory_bytes));
  return true;
}

type InstanceRow = {
  instance_id: string;
  node_id: string;
  name: string;
  placed_ms: number | string;
  memory_bytes: number | string;
};

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * What one decision reads of the history (history.ts): every node's totals, and the instances `reads` selects with
 * their labels in their recorded order. Index lookups only: the label index, and (node, placed time) per node.
 */
export async function placementHistory(
  q: Query,
  reads: HistoryReads,
): Promise<{ placed: PlacedTotal[]; instances: ClusterInstance[] }> {
  const totals = await q.all<{ node_id: string; placements: number | string; memory_bytes: number | string }>(
    "SELECT node_id, placements, memory_bytes FROM mesh_node_loads ORDER BY node_id",
  );
  const placed = totals.map((t) => ({
    node_id: t.node_id,
    count: Number(t.placements),
    memory_bytes: Number(t.memory_bytes),
  }));
  const found = new Map<string, InstanceRow>();
  const columns = "p.instance_id, p.node_id, p.name, p.placed_ms, p.memory_bytes";
  const labelled: Array<[LabelRole, readonly string[]]> = [
    ["carries", reads.carrying],
    ["excludes", reads.excluding],
  ];
  for (const [role, labels] of labelled) {
    for (const part of chunks([...new Set(labels)], PARAMS_PER_STATEMENT)) {
      const rows = await q.all<InstanceRow>(
        `SELECT ${columns} FROM mesh_placements p WHERE p.instance_id IN (SELECT instance_id FROM mesh_placement_labels WHERE role = ? AND label IN (${part.map(() => "?").join(",")}))`,
        [role, ...part],
      );
      for (const r of rows) found.set(r.instance_id, r);
    }
  }
  for (const part of chunks([...reads.placedAfter], PARAMS_PER_STATEMENT / 2)) {
    const rows = await q.all<InstanceRow>(
      `SELECT ${columns} FROM mesh_placements p WHERE ${part.map(() => "(p.node_id = ? AND p.placed_ms > ?)").join(" OR ")}`,
      part.flat(),
    );
    for (const r of rows) found.set(r.instance_id, r);
  }
  if (found.size === 0) return { placed, instances: [] };
  const labels = new Map<string, { carries: string[]; excludes: string[] }>();
  for (const part of chunks([...found.keys()], PARAMS_PER_STATEMENT)) {
    const rows = await q.all<{ instance_id: string; role: LabelRole; label: string }>(
      `SELECT instance_id, role, label FROM mesh_placement_labels WHERE instance_id IN (${part.map(() => "?").join(",")}) ORDER BY instance_id, role, pos`,
      part,
    );
    for (const r of rows) {
      const of = labels.get(r.instance_id) ?? { carries: [], excludes: [] };
      labels.set(r.instance_id, of);
      of[r.role].push(r.label);
    }
  }
  const instances = [...found.values()].map((r) => ({
    node_id: r.node_id,
    name: r.name,
    labels: labels.get(r.instance_id)?.carries ?? [],
    excludes: labels.get(r.instance_id)?.excludes ?? [],
    memory_bytes: Number(r.memory_bytes),
    placed_at_ms: Number(r.placed_ms),
  }));
  return { placed, instances };
}

/**
 * Schema v8 (store-schema.ts): fills the summary from the placements already recorded, each workload validated as
 * `insertPlacement` validates it (an older record without labels or memory counts as none).
 */
export async function backfillPlacementSummary(tx: Tx): Promise<void> {
  const rows = await tx.all<{
    instance_id: string;
    name: string;
    node_id: string;
    placed_ms: number | string;
    workload: string;
  }>("SELECT instance_id, name, node_id, placed_ms, workload FROM mesh_placements ORDER BY instance_id");
  for (const r of rows) {
    const w = JSON.parse(r.workload) as Partial<WorkloadRecord>;
    const inst = instanceOf(
      { node_id: r.node_id, name: r.name, placed_ms: Number(r.placed_ms) },
      { labels: w.labels ?? [], excludes: w.excludes ?? [], memory_bytes: w.memory_bytes ?? 0 },
    );
    await tx.run("UPDATE mesh_placements SET memory_bytes = ? WHERE instance_id = ?", [
      inst.memory_bytes,
      r.instance_id,
    ]);
    await insertLabels(tx, r.instance_id, inst);
    await addLoad(tx, r.node_id, 1, inst.memory_bytes);
  }
}

/**
 * Where the summary disagrees with the rows it summarises (empty when it is exact): the totals recomputed from
 * mesh_placements, and every placement's labels against its stored workload. For tests and `berth doctor`.
 */
export async function summaryDrift(q: Query): Promise<string[]> {
  const problems: string[] = [];
  const truth = await q.all<{ node_id: string; n: number | string; m: number | string }>(
    "SELECT node_id, COUNT(*) AS n, SUM(memory_bytes) AS m FROM mesh_placements GROUP BY node_id ORDER BY node_id",
  );
  const kept = await q.all<{ node_id: string; placements: number | string; memory_bytes: number | string }>(
    "SELECT node_id, placements, memory_bytes FROM mesh_node_loads ORDER BY node_id",
  );
  const want = new Map(truth.map((t) => [t.node_id, `${Number(t.n)} placements, ${Number(t.m)} bytes`]));
  const have = new Map(
    kept.map((k) => [k.node_id, `${Number(k.placements)} placements, ${Number(k.memory_bytes)} bytes`]),
  );
  for (const node of new Set([...want.keys(), ...have.keys()])) {
    if (want.get(node) !== have.get(node))
      problems.push(
        `node ${node}: the rows hold ${want.get(node) ?? "nothing"}, the summary says ${have.get(node) ?? "nothing"}`,
      );
  }
  const rows = await q.all<{ instance_id: string; workload: string; memory_bytes: number | string }>(
    "SELECT instance_id, workload, memory_bytes FROM mesh_placements ORDER BY instance_id",
  );
  const labelRows = await q.all<{ instance_id: string; role: LabelRole; label: string }>(
    "SELECT instance_id, role, label FROM mesh_placement_labels ORDER BY instance_id, role, pos",
  );
  const labels = new Map<string, string>();
  for (const l of labelRows) labels.set(l.instance_id, `${labels.get(l.instance_id) ?? ""}${l.role}:${l.label};`);
  for (const r of rows) {
    const w = JSON.parse(r.workload) as Partial<WorkloadRecord>;
    const expected = [
      ...(w.labels ?? []).map((l) => `carries:${l};`),
      ...(w.excludes ?? []).map((l) => `excludes:${l};`),
    ].join("");
    if ((labels.get(r.instance_id) ?? "") !== expected)
      problems.push(`placement ${r.instance_id}: its label rows do not match its workload`);
    if (Number(r.memory_bytes) !== (w.memory_bytes ?? 0))
      problems.push(
        `placement ${r.instance_id}: memory ${Number(r.memory_bytes)}, its workload declares ${w.memory_bytes ?? 0}`,
      );
    labels.delete(r.instance_id);
  }
  for (const orphan of labels.keys()) problems.push(`labels of ${orphan}, which is not placed`);
  return problems;
}
