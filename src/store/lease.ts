/**
 * Owner leases of a berth store (issue 21; the design is in README.md "Ownership"): every process that writes a
 * controller store holds one lease row naming who it is (owner id, pid, process start time, boot id, host), with an
 * epoch from a counter that only grows, renewed while it works and released when it closes. Every decision records
 * the owner and epoch that made it, and crash recovery touches a decision only when its owner is provably gone
 * (`judgeOwner` in src/core/mesh/owner-liveness.ts). Issue 20's fenced leader is one of these rows promoted: the same
 * columns, the same epoch counter.
 *
 * Shell: reads /proc, the host name and the clock; the judgement itself is the pure core's.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import {
  type HereFacts,
  judgeOwner,
  needsPidProbe,
  type OwnerLease,
  type OwnerVerdict,
} from "../core/mesh/owner-liveness.js";
import type { Query, Tx } from "./engine.js";

/** How long a lease stays valid without renewal, for a reader on another host (one on this host checks the pid). */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * The start-time field (22) of /proc/<pid>/stat, or null when no such process runs (or not on Linux). A zombie (or
 * dead) process is not running: it keeps its stat line only until its parent reaps it.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields from after its closing one.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X" || fields[0] === "x") return null;
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

let bootIdCache: string | null = null;
/** /proc/sys/kernel/random/boot_id: changes on every boot; "unknown" where there is none. */
export function bootId(): string {
  if (bootIdCache === null) {
    try {
      bootIdCache = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    } catch {
      bootIdCache = "unknown";
    }
  }
  return bootIdCache;
}

/** Creates the lease tables (idempotent), inside a schema migration's transaction; the same columns on both engines. */
export async function ensureLeaseTables(tx: Tx): Promise<void> {
  const int = tx.kind === "postgres" ? "BIGINT" : "INTEGER";
  await tx.exec(`
    CREATE TABLE IF NOT EXISTS berth_lease_epoch (id INTEGER PRIMARY KEY CHECK (id = 1), epoch ${int} NOT NULL);
    CREATE TABLE IF NOT EXISTS berth_owners (owner_id TEXT PRIMARY KEY, epoch ${int} NOT NULL UNIQUE, pid INTEGER NOT NULL,
                                             start_time TEXT NOT NULL, boot_id TEXT NOT NULL, host TEXT NOT NULL,
                                             started_ms ${int} NOT NULL, renewed_ms ${int} NOT NULL, ttl_ms ${int} NOT NULL,
                                             released_ms ${int});
  `);
  await tx.run("INSERT INTO berth_lease_epoch (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING");
}

/** Takes a new lease for this process: the next epoch, this pid's identity. In the caller's write transaction. */
export async function takeLease(tx: Tx, nowMs: number, ttlMs = DEFAULT_LEASE_TTL_MS): Promise<OwnerLease> {
  // One statement takes the next epoch: the row lock (PostgreSQL) or the write lock (SQLite) serialises takers.
  const taken = await tx.get<{ epoch: number }>(
    "UPDATE berth_lease_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
  );
  if (taken === undefined) throw new Error("the lease epoch counter is missing (berth_lease_epoch)");
  const lease: OwnerLease = {
    owner_id: randomUUID(),
    epoch: Number(taken.epoch),
    pid: process.pid,
    start_time: processStartTime(process.pid) ?? "unknown",
    boot_id: bootId(),
    host: hostname(),
    renewed_ms: nowMs,
    ttl_ms: ttlMs,
    released_ms: null,
  };
  await tx.run(
    "INSERT INTO berth_owners (owner_id, epoch, pid, start_time, boot_id, host, started_ms, renewed_ms, ttl_ms, released_ms) VALUES (?,?,?,?,?,?,?,?,?,NULL)",
    [lease.owner_id, lease.epoch, lease.pid, lease.start_time, lease.boot_id, lease.host, nowMs, nowMs, ttlMs],
  );
  return lease;
}

export async function renewLease(tx: Tx, ownerId: string, nowMs: number): Promise<void> {
  await tx.run("UPDATE berth_owners SET renewed_ms = ? WHERE owner_id = ? AND released_ms IS NULL", [nowMs, ownerId]);
}

export async function releaseLease(tx: Tx, ownerId: string, nowMs: number): Promise<void> {
  await tx.run("UPDATE berth_owners SET released_ms = ? WHERE owner_id = ? AND released_ms IS NULL", [nowMs, ownerId]);
}

export async function readLease(q: Query, ownerId: string | null): Promise<OwnerLease | null> {
  if (ownerId === null) return null;
  const row = await q.get<OwnerLease>(
    "SELECT owner_id, epoch, pid, start_time, boot_id, host, renewed_ms, ttl_ms, released_ms FROM berth_owners WHERE owner_id = ?",
    [ownerId],
  );
  return row ?? null;
}

/** Judges a lease from this machine: reads the owner's pid start time only when the core says it decides. */
export function judgeLease(owner: OwnerLease | null, nowMs: number): OwnerVerdict {
  const host = hostname();
  const boot = bootId();
  const probe = owner !== null && needsPidProbe(owner, { host, boot_id: boot }) ? processStartTime(owner.pid) : null;
  const here: HereFacts = { host, boot_id: boot, now_ms: nowMs, pid_start_time: probe };
  return judgeOwner(owner, here);
}
