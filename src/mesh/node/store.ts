/**
 * The node's persistent state (spec/mesh.md §14.3): instances, in-flight decisions, departed records and the facts
 * sequence, in node.db beside the node chain. Every state change commits in one transaction with the chain event
 * that records it (I7): callers pass the draft and the store writes both.
 */

import type { Statement } from "better-sqlite3";
import type { Chain } from "../../chain/chain.js";
import type { EventDraft } from "../../core/chain/event.js";
import type { HealthSpec } from "../../core/node/health-check.js";
import type { RestartPolicy } from "../../core/node/restart-policy.js";
import { type Db, ensureSchema, type WriteTx, withWriteTx } from "../../store/sqlite.js";
import { type DiskReserve, isDiskFull } from "./disk-reserve.js";

export const INSTANCE_STATES = [
  "loading",
  "loaded",
  "starting",
  "running",
  "stopped",
  "exited",
  "failed",
  "lost",
  "unknown",
  // Issue 15 (supervision, supervisor.ts): failing its health check, waiting to be restarted, a `once` job done.
  "unhealthy",
  "backoff",
  "finished",
  // Issue 16: stopped by the node when its controller's lease ran out (lease.ts).
  "lease_stopped",
] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** States in which the instance's process runs (an unhealthy one too, until the supervisor restarts it). */
export function isLive(state: InstanceState): boolean {
  return state === "running" || state === "unhealthy";
}

/** What the node needs to (re)start an instance and to gate verbs on it later, all from verified data. */
export interface LaunchSpec {
  readonly program: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly mode: "service" | "once";
  readonly kind: string;
  readonly network: "none" | "lan" | "egress";
  readonly secrets: string[];
  readonly cpu_millis: number;
  readonly memory_mb: number;
  readonly signer_keys: string[];
  readonly file_hashes: string[];
  /** Issue 15: the placement's restart policy and the package's health check; absent on rows written before them. */
  readonly restart?: RestartPolicy;
  readonly health?: HealthSpec | null;
}

export interface InstanceRow {
  instance_id: string;
  decision_id: string;
  name: string;
  package_id: string;
  variant: string;
  /** A node has no emulator (core/node/route.ts): every instance it runs is native. */
  route: "native";
  state: InstanceState;
  exit_code: number | null;
  signal: string | null;
  detail: string | null;
  pid: number | null;
  host_boot_id: string | null;
  start_marker: string | null;
  started_ms: number | null;
  requester: string;
  created_ms: number;
  launch: LaunchSpec;
  /** Issue 7 hooks: the agent identity and create-intent fingerprint the controller placed this for. */
  agent: string | null;
  intent: string | null;
  /** Incremented on every start; lets a controller tell a restarted instance from the one it knew. */
  generation: number;
}

export interface InflightRow {
  decision_id: string;
  method: string;
  requester: string;
  boot_id: string;
  started_ms: number;
  revocation_generation: number;
}

export interface DepartedRow {
  instance_id: string;
  decision_id: string;
  reason: string;
  at_ms: number;
}

const SCHEMA_VERSION = 1;

type RawInstance = Omit<InstanceRow, "launch"> & { launch: string };

export class NodeStore {
  private readonly statements = new Map<string, Statement>();
  /**
   * Issue 37 finding B (disk-reserve.ts): set by the daemon. A write that finds the disk full gives the reserve up and
   * is tried once more, so what happens to the running instances is still recorded on a full disk.
   */
  reserve: DiskReserve | null = null;

  constructor(
    readonly db: Db,
    readonly chain: Chain,
  ) {
    withWriteTx(db, (tx) =>
      ensureSchema(tx, "node", SCHEMA_VERSION, (from) => {
        if (from === 0) {
          db.exec(`
            CREATE TABLE node_instance (
              instance_id TEXT PRIMARY KEY, decision_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
              package_id TEXT NOT NULL, variant TEXT NOT NULL, route TEXT NOT NULL, state TEXT NOT NULL,
              exit_code INTEGER, signal TEXT, detail TEXT, pid INTEGER, host_boot_id TEXT, start_marker TEXT,
              started_ms INTEGER, requester TEXT NOT NULL, created_ms INTEGER NOT NULL, launch TEXT NOT NULL,
              agent TEXT, intent TEXT, generation INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE node_inflight (
              decision_id TEXT PRIMARY KEY, method TEXT NOT NULL, requester TEXT NOT NULL, boot_id TEXT NOT NULL,
              started_ms INTEGER NOT NULL, revocation_generation INTEGER NOT NULL);
            CREATE TABLE node_departed (
              id INTEGER PRIMARY KEY AUTOINCREMENT, instance_id TEXT NOT NULL, decision_id TEXT NOT NULL,
              reason TEXT NOT NULL, at_ms INTEGER NOT NULL);
            CREATE TABLE node_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
          `);
        }
      }),
    );
  }

  /** Runs `write` and appends every draft it returns, in one transaction, durable (fsynced) before it returns. */
  commit<T>(write: (tx: WriteTx) => { result: T; events: EventDraft[] }): T {
    return this.evenWhenFull(() =>
      withWriteTx(this.db, (tx) => {
        const { result, events } = write(tx);
        for (const draft of events) this.chain.append(tx, draft);
        return result;
      }),
    );
  }

  /**
   * Runs a whole transaction; if the disk was full, gives the reserve up and runs it once more (a transaction that
   * failed rolled back whole, chain head included, so running it again is the same write). Inside an outer
   * transaction the failure goes up to the outer one, which is the one run again.
   */
  private evenWhenFull<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      if (!isDiskFull(error) || this.db.inTransaction || this.reserve === null || !this.reserve.release()) throw error;
      return write();
    }
  }

  /** The disk is full, or filled and the reserve has not been written back yet (disk-reserve.ts): no new work. */
  get diskFull(): boolean {
    return this.reserve?.refusesNewWork ?? false;
  }

  /**
   * Issue 19: `commit` without waiting for the disk, for the steps of a request that come before its last commit.
   * The state and its chain events still commit together (one transaction, I7), and the commit survives a crash of
   * the daemon (the WAL frames are in the kernel's page cache); only a host crash or power loss before the next
   * synced commit can undo it, and then it is undone whole, in order, with everything after it (SQLite's WAL keeps a
   * prefix of its commits), and with the host's processes gone too. The rule that keeps that invisible: every answer
   * a node gives is sent after a synced commit (the request's last one, or the refusal's), and an fsync of the WAL
   * makes every earlier commit durable with it. So what was answered is on disk; what was not may be lost only with
   * the host itself (spec/mesh.md §14.3 "Durability").
   */
  commitUnsynced<T>(write: (tx: WriteTx) => { result: T; events: EventDraft[] }): T {
    if (this.inTransaction()) return this.commit(write);
    // Prepared once (`sql`): `db.pragma` compiles its statement at every call, six times a place (issue 19).
    this.sql("PRAGMA synchronous = NORMAL").run();
    try {
      return this.commit(write);
    } finally {
      this.sql("PRAGMA synchronous = FULL").run();
    }
  }

  private inTransaction(): boolean {
    return this.db.inTransaction;
  }

  append(draft: EventDraft): void {
    this.evenWhenFull(() => withWriteTx(this.db, (tx) => this.chain.append(tx, draft)));
  }

  /** A prepared statement, compiled once per text (issue 19: every request ran a few `prepare` calls). */
  sql(text: string): Statement {
    let stmt = this.statements.get(text);
    if (!stmt) {
      stmt = this.db.prepare(text);
      this.statements.set(text, stmt);
    }
    return stmt;
  }

  /** A statement for a write inside `tx`, which must be a transaction on this store's database. */
  private inTx(tx: WriteTx, text: string): Statement {
    if (tx.db !== this.db) throw new Error("a node store write must run in a transaction on node.db");
    return this.sql(text);
  }

  // -- reads ---------------------------------------------------------------------------------------------------

  instance(id: string): InstanceRow | undefined {
    const row = this.sql("SELECT * FROM node_instance WHERE instance_id = ?").get(id) as RawInstance | undefined;
    return row ? decode(row) : undefined;
  }

  instanceByDecision(decisionId: string): InstanceRow | undefined {
    const row = this.sql("SELECT * FROM node_instance WHERE decision_id = ?").get(decisionId) as
      | RawInstance
      | undefined;
    return row ? decode(row) : undefined;
  }

  instances(): InstanceRow[] {
    return (this.sql("SELECT * FROM node_instance ORDER BY created_ms, instance_id").all() as RawInstance[]).map(
      decode,
    );
  }

  instanceCount(): number {
    return (this.sql("SELECT COUNT(*) AS n FROM node_instance").get() as { n: number }).n;
  }

  inflight(decisionId: string): InflightRow | undefined {
    return this.sql("SELECT * FROM node_inflight WHERE decision_id = ?").get(decisionId) as InflightRow | undefined;
  }

  inflights(): InflightRow[] {
    return this.sql("SELECT * FROM node_inflight ORDER BY started_ms").all() as InflightRow[];
  }

  departed(sinceMs: number): DepartedRow[] {
    return (
      this.sql(
        "SELECT instance_id, decision_id, reason, at_ms FROM node_departed WHERE at_ms >= ? ORDER BY id DESC LIMIT 256",
      ).all(sinceMs) as DepartedRow[]
    ).reverse();
  }

  /** §11.2: in-flight rows first, then instances, from one read transaction, so a decision is never invisible. */
  snapshot(departedSinceMs: number | null): {
    inflight: InflightRow[];
    instances: InstanceRow[];
    departed: DepartedRow[];
  } {
    // Built once: better-sqlite3's `transaction()` makes four wrapper functions each time it is called (every status).
    this.snapshotTx ??= this.db.transaction((since: number | null) => ({
      inflight: this.inflights(),
      instances: this.instances(),
      departed: since === null ? [] : this.departed(since),
    }));
    return this.snapshotTx(departedSinceMs);
  }

  private snapshotTx: ((since: number | null) => ReturnType<NodeStore["snapshot"]>) | undefined;

  meta(key: string): string | undefined {
    return (this.sql("SELECT value FROM node_meta WHERE key = ?").get(key) as { value: string } | undefined)?.value;
  }

  // -- writes (inside a caller's transaction) ------------------------------------------------------------------

  setMeta(tx: WriteTx, key: string, value: string): void {
    this.inTx(
      tx,
      "INSERT INTO node_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    ).run(key, value);
  }

  insertInflight(tx: WriteTx, row: InflightRow): void {
    this.inTx(
      tx,
      "INSERT INTO node_inflight (decision_id, method, requester, boot_id, started_ms, revocation_generation) VALUES (?,?,?,?,?,?)",
    ).run(row.decision_id, row.method, row.requester, row.boot_id, row.started_ms, row.revocation_generation);
  }

  deleteInflight(tx: WriteTx, decisionId: string): void {
    this.inTx(tx, "DELETE FROM node_inflight WHERE decision_id = ?").run(decisionId);
  }

  insertInstance(tx: WriteTx, row: InstanceRow): void {
    this.inTx(
      tx,
      `INSERT INTO node_instance (instance_id, decision_id, name, package_id, variant, route, state, exit_code, signal, detail,
           pid, host_boot_id, start_marker, started_ms, requester, created_ms, launch, agent, intent, generation)
         VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
    ).run(
      row.instance_id,
      row.decision_id,
      row.name,
      row.package_id,
      row.variant,
      row.route,
      row.state,
      row.exit_code,
      row.signal,
      row.detail,
      row.pid,
      row.host_boot_id,
      row.start_marker,
      row.started_ms,
      row.requester,
      row.created_ms,
      JSON.stringify(row.launch),
      row.agent,
      row.intent,
      row.generation,
    );
  }

  updateInstance(
    tx: WriteTx,
    id: string,
    patch: Partial<Omit<InstanceRow, "instance_id" | "decision_id" | "launch">>,
  ): void {
    const entries = Object.entries(patch);
    if (entries.length === 0) return;
    const sets = entries.map(([k]) => `${k} = ?`).join(", ");
    this.inTx(tx, `UPDATE node_instance SET ${sets} WHERE instance_id = ?`).run(
      ...entries.map(([, v]) => v as unknown),
      id,
    );
  }

  /** Rows leave the table only with a departed record (§14.3: never forgotten silently). */
  removeInstance(tx: WriteTx, id: string, decisionId: string, reason: string, atMs: number): void {
    const row = this.instance(id);
    this.inTx(tx, "DELETE FROM node_instance WHERE instance_id = ?").run(id);
    this.inTx(tx, "INSERT INTO node_departed (instance_id, decision_id, reason, at_ms) VALUES (?,?,?,?)").run(
      id,
      row ? decisionId || row.decision_id : decisionId,
      reason,
      atMs,
    );
  }
}

function decode(row: RawInstance): InstanceRow {
  return { ...row, launch: JSON.parse(row.launch) as LaunchSpec };
}
