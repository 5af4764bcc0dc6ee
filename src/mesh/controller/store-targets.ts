/**
 * The targets' SQL (spec/mesh.md §3, issue 16): what the controller learned of each address, and the last contacts
 * every process records so that every process judges the same liveness. Called by ControllerStore inside its
 * transactions and reads; the contacts are not chained (an observation is not a decision).
 */
import type { Tier } from "../../core/identity/tier.js";
import type { Query, Tx } from "../../store/engine.js";
import type { ContactOutcome, StoredContact, StoredTarget, TierSource } from "./store-records.js";

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

export async function targets(q: Query): Promise<StoredTarget[]> {
  const rows = await q.all<StoredTarget & { tier: string; tier_source: string }>(
    "SELECT addr, node_id, key, tier, tier_source, learned_ms FROM mesh_targets ORDER BY addr",
  );
  return rows.map((r) => ({
    ...r,
    tier: r.tier as Tier,
    tier_source: r.tier_source as TierSource,
    learned_ms: num(r.learned_ms),
  }));
}

export async function upsertTarget(tx: Tx, t: StoredTarget): Promise<void> {
  await tx.run(
    "INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, learned_ms) VALUES (?,?,?,?,?,?) ON CONFLICT (addr) DO UPDATE SET node_id = excluded.node_id, key = excluded.key, tier = excluded.tier, tier_source = excluded.tier_source, learned_ms = excluded.learned_ms",
    [t.addr, t.node_id, t.key, t.tier, t.tier_source, t.learned_ms],
  );
}

export async function deleteTarget(tx: Tx, addr: string): Promise<void> {
  await tx.run("DELETE FROM mesh_targets WHERE addr = ?", [addr]);
}

export async function contacts(q: Query): Promise<Map<string, StoredContact>> {
  const rows = await q.all<StoredContact>(
    "SELECT addr, last_ok_ms, unreachable_since_ms, last_error, name, contact_ms FROM mesh_targets",
  );
  return new Map(
    rows.map((r) => [
      r.addr,
      {
        ...r,
        last_ok_ms: num(r.last_ok_ms),
        unreachable_since_ms: num(r.unreachable_since_ms),
        contact_ms: num(r.contact_ms),
      },
    ]),
  );
}

export async function contact(q: Query, addr: string): Promise<StoredContact | null> {
  const r = await q.get<StoredContact>(
    "SELECT addr, last_ok_ms, unreachable_since_ms, last_error, name, contact_ms FROM mesh_targets WHERE addr = ?",
    [addr],
  );
  return r
    ? {
        ...r,
        last_ok_ms: num(r.last_ok_ms),
        unreachable_since_ms: num(r.unreachable_since_ms),
        contact_ms: num(r.contact_ms),
      }
    : null;
}

/** Drops an outcome older than the one recorded (another process saw the node later). */
export async function recordContact(tx: Tx, addr: string, o: ContactOutcome): Promise<void> {
  if (o.ok) {
    const { at_ms, refusal, name } = o.value;
    await tx.run(
      "UPDATE mesh_targets SET last_ok_ms = ?, unreachable_since_ms = NULL, last_error = ?, name = COALESCE(?, name), contact_ms = ? WHERE addr = ? AND COALESCE(contact_ms, 0) <= ?",
      [at_ms, refusal, name, at_ms, addr, at_ms],
    );
  } else {
    const { at_ms, reason } = o.error;
    await tx.run(
      "UPDATE mesh_targets SET unreachable_since_ms = COALESCE(unreachable_since_ms, ?), last_error = ?, contact_ms = ? WHERE addr = ? AND COALESCE(contact_ms, 0) <= ?",
      [at_ms, reason, at_ms, addr, at_ms],
    );
  }
}
