/**
 * The outside view the campaign judges by: live agent processes from /proc (by the BERTH_NAME / BERTH_INSTANCE_ID /
 * BERTH_NODE_ID environment the node gives every instance, filtered on the world's name prefix), the controller's
 * placements and open decisions from its store opened read-only, and a node's instance states from its store
 * opened read-only.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/sqlite.js";

export interface LiveProcess {
  readonly pid: number;
  readonly pgid: number;
  readonly name: string;
  readonly instance: string;
  readonly node: string;
}

function envValue(env: readonly string[], key: string): string | undefined {
  return env.find((e) => e.startsWith(`${key}=`))?.slice(key.length + 1);
}

/** What one pid is (null: not an agent of ours), keyed with its start time so a reused pid is read afresh. */
const known = new Map<
  number,
  {
    readonly start: string;
    readonly comm: string;
    readonly atMs: number;
    readonly agent: Omit<LiveProcess, "pid" | "pgid"> | null;
  }
>();
/** A verdict "not an agent" younger than this is checked again: a process seen between fork and exec has its parent's environment. */
const SETTLE_MS = 2_000;

function statOf(pid: string): { comm: string; fields: string[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return {
      comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      fields: stat.slice(stat.lastIndexOf(")") + 2).split(" "),
    };
  } catch {
    return null;
  }
}

/**
 * Live (non-zombie) processes of agents whose name starts with `prefix`. A pid's environment is read once (it does
 * not change after exec); each later sample rereads only the stat of pids that are agents, so a sample every 100 ms
 * stays cheap on a machine with many processes. A pid judged "not an agent" is checked again while that verdict is
 * young (fork before exec) and forgotten as soon as a sample finds it gone, so a reused pid is read afresh (pids wrap
 * at pid_max, far slower than one sample interval).
 */
export function liveAgentProcesses(prefix: string): LiveProcess[] {
  const found: LiveProcess[] = [];
  const present = new Set<number>();
  const now = Date.now();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    present.add(pid);
    const k = known.get(pid);
    if (k && k.agent === null && now - k.atMs > SETTLE_MS) continue;
    const stat = statOf(entry);
    if (!stat) continue;
    const { comm, fields } = stat;
    const start = fields[19] ?? "";
    let agent = k && k.start === start && k.comm === comm ? k.agent : undefined;
    if (agent === undefined) {
      try {
        const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
        const name = envValue(env, "BERTH_NAME");
        const instance = envValue(env, "BERTH_INSTANCE_ID");
        agent =
          name !== undefined && instance !== undefined
            ? { name, instance, node: envValue(env, "BERTH_NODE_ID") ?? "" }
            : null;
        known.set(pid, { start, comm, atMs: k && k.start === start ? k.atMs : now, agent });
      } catch {
        continue; // ended while we looked, or not ours to read
      }
    }
    if (agent === null || fields[0] === "Z" || fields[0] === "X") continue;
    if (!agent.name.startsWith(prefix)) continue;
    found.push({ pid, pgid: Number(fields[2]), ...agent });
  }
  for (const pid of known.keys()) if (!present.has(pid)) known.delete(pid);
  return found;
}

/** Distinct live instance ids per agent name. */
export function instancesByName(live: readonly LiveProcess[]): Map<string, Set<string>> {
  const by = new Map<string, Set<string>>();
  for (const p of live) {
    const set = by.get(p.name) ?? new Set<string>();
    set.add(p.instance);
    by.set(p.name, set);
  }
  return by;
}

/** Reads a SQLite store opened read-only; null when it cannot be read (not there yet, or mid-write). */
export function readOnly<T>(path: string, read: (db: ReturnType<typeof openDatabase>) => T): T | null {
  try {
    const db = openDatabase(path, { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

/** The controller's placements (instance id → name), read-only; null while the store cannot be read. */
export function recordedPlacements(home: string): Map<string, string> | null {
  return readOnly(join(home, "controller.db"), (db) => {
    const rows = db.prepare("SELECT instance_id, name FROM mesh_placements").all() as Array<{
      instance_id: string;
      name: string;
    }>;
    return new Map(rows.map((r) => [r.instance_id, r.name]));
  });
}

/** How many decisions are still open (dispatching, reconciling, unsettled, settling); null if unreadable. */
export function openDecisions(home: string): number | null {
  return readOnly(join(home, "controller.db"), (db) => {
    const row = db
      .prepare(
        "SELECT count(*) AS n FROM mesh_decisions WHERE state IN ('dispatching','reconciling','unsettled','settling')",
      )
      .get() as { n: number };
    return row.n;
  });
}

/**
 * The nodes that hold each name in the controller's store: its placement's node and the node an open decision
 * (dispatching, reconciling, unsettled, settling) was sent to; read-only, empty if unreadable. A name held only on a
 * dead node without a lease waits for that node, by design (issue 16: never re-placed).
 */
export function nameHolders(home: string): Map<string, Set<string>> {
  return (
    readOnly(join(home, "controller.db"), (db) => {
      const rows = db
        .prepare(
          "SELECT name, node_id FROM mesh_placements UNION SELECT name, node_id FROM mesh_decisions WHERE node_id IS NOT NULL AND state IN ('dispatching','reconciling','unsettled','settling')",
        )
        .all() as Array<{ name: string; node_id: string }>;
      const by = new Map<string, Set<string>>();
      for (const r of rows) by.set(r.name, (by.get(r.name) ?? new Set()).add(r.node_id));
      return by;
    }) ?? new Map()
  );
}

/**
 * The instances a node's own chain says it stopped for a lease (`workload.lifecycle {phase: "lease"}`, lease.ts),
 * with the event's time; read-only, empty if unreadable. The chain, not the instance table: a later deploy may unload
 * the row, the record stays.
 */
export function nodeLeaseStops(dataDir: string): Map<string, number> {
  return (
    readOnly(join(dataDir, "node.db"), (db) => {
      const rows = db
        .prepare(
          "SELECT ts, json_extract(payload, '$.instance_id') AS instance_id FROM audit_event WHERE kind = 'workload.lifecycle' AND phase = 'lease'",
        )
        .all() as Array<{ ts: number; instance_id: string }>;
      return new Map(rows.map((r) => [r.instance_id, r.ts]));
    }) ?? new Map()
  );
}

/**
 * Instances a node did not restart after a crash because their controller's lease had run out (supervisor.ts: the
 * backoff ends under an expired lease and the instance goes `lease_stopped`, chained in phase `supervise`), with the
 * time it chained that, by instance id.
 */
export function nodeLeaseHolds(dataDir: string): Map<string, number> {
  return (
    readOnly(join(dataDir, "node.db"), (db) => {
      const rows = db
        .prepare(
          "SELECT ts, json_extract(payload, '$.instance_id') AS instance_id FROM audit_event WHERE kind = 'workload.lifecycle' AND phase = 'supervise' AND json_extract(payload, '$.to') = 'lease_stopped'",
        )
        .all() as Array<{ ts: number; instance_id: string }>;
      return new Map(rows.map((r) => [r.instance_id, r.ts]));
    }) ?? new Map()
  );
}

/** The head seq of a store's own chain (for attributing a chain failure to the schedule that wrote it). */
export function chainHead(dbPath: string): number | null {
  return readOnly(dbPath, (db) => {
    const row = db
      .prepare(
        "SELECT max(e.seq) AS seq FROM audit_event e JOIN audit_chain c ON c.chain_id = e.chain_id WHERE c.own = 1",
      )
      .get() as { seq: number | null };
    return row.seq;
  });
}
