/**
 * The network world's outside view (shell): /proc sampled into the judge's `ProcObs` (every process in a node's
 * network namespace, and every process carrying one of the world's agent names wherever it is), the nodes' chains
 * and the controller's chain read read-only.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { readOnly } from "../observe.js";
import pg from "pg";
import { readStoreRows } from "../../support/test-database.js";
import type { Explanation, ProcObs, Sample } from "./judge.js";

function envValue(env: readonly string[], key: string): string | undefined {
  return env.find((e) => e.startsWith(`${key}=`))?.slice(key.length + 1);
}

interface Known {
  readonly comm: string;
  readonly env: ProcObs["env"];
  readonly cgroupInstance: string | null;
}

/** Samples /proc for one world. The environment and cgroup of a process are read once per identity (pid, start, comm). */
export class NetSampler {
  readonly samples: Sample[] = [];
  private readonly known = new Map<string, Known>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly prefix: string,
    /** Network namespace inode → node index. */
    private readonly nodesByNs: ReadonlyMap<string, number>,
  ) {}

  start(everyMs = 150): void {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  sample(): Sample {
    const procs: ProcObs[] = [];
    const seen = new Set<string>();
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      let nsLink: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        nsLink = readlinkSync(`/proc/${entry}/ns/net`);
      } catch {
        continue;
      }
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (f[0] === "Z" || f[0] === "X") continue;
      const pid = Number(entry);
      const start = Number(f[19]);
      const id = `${pid}@${start}@${comm}`;
      seen.add(id);
      let k = this.known.get(id);
      if (!k) {
        let env: ProcObs["env"] = null;
        let cgroupInstance: string | null = null;
        try {
          const e = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
          const name = envValue(e, "BERTH_NAME");
          const instance = envValue(e, "BERTH_INSTANCE_ID");
          if (name !== undefined && instance !== undefined) env = { name, instance };
          cgroupInstance =
            /\/berth-[0-9a-f]+\/([^/\s]+)/.exec(readFileSync(`/proc/${entry}/cgroup`, "utf8"))?.[1] ?? null;
        } catch {
          continue;
        }
        k = { comm, env, cgroupInstance };
        this.known.set(id, k);
      }
      const inode = /\[(\d+)\]/.exec(nsLink)?.[1] ?? "";
      const node = this.nodesByNs.get(inode) ?? null;
      if (node === null && !k.env?.name.startsWith(this.prefix)) continue;
      procs.push({
        pid,
        start,
        ppid: Number(f[1]),
        pgid: Number(f[2]),
        comm,
        node,
        cgroupInstance: k.cgroupInstance,
        env: k.env,
      });
    }
    for (const id of this.known.keys()) if (!seen.has(id)) this.known.delete(id);
    const s = { atMs: Date.now(), procs };
    this.samples.push(s);
    return s;
  }
}

/** Live processes of the world's agents in a sample: instance → name, by the judge's attribution. */
export function liveByName(
  s: Sample,
  prefix: string,
  attributeFn: (p: readonly ProcObs[]) => Array<{ proc: ProcObs; instance: string | null }>,
  names: ReadonlyMap<string, string>,
): Map<string, Set<string>> {
  const by = new Map<string, Set<string>>();
  for (const { instance } of attributeFn(s.procs)) {
    if (instance === null) continue;
    const name = names.get(instance);
    if (name === undefined || !name.startsWith(prefix)) continue;
    by.set(name, (by.get(name) ?? new Set()).add(instance));
  }
  return by;
}

/** Events of a node's own chain that end an instance (stop, unload, a lease stop), read-only. */
export function nodeEndings(node: number, dataDir: string): Explanation[] {
  return (
    readOnly(join(dataDir, "node.db"), (db) => {
      const rows = db
        .prepare(
          "SELECT e.kind AS kind, e.phase AS phase, e.payload AS payload FROM audit_event e JOIN audit_chain c ON c.chain_id = e.chain_id WHERE c.own = 1 AND (e.kind IN ('workload.stop', 'workload.unload') OR (e.kind = 'workload.lifecycle' AND e.phase = 'lease')) ORDER BY e.seq",
        )
        .all() as Array<{ kind: string; phase: string | null; payload: string }>;
      return rows.flatMap((r): Explanation[] => {
        const p = JSON.parse(r.payload) as { instance_id?: string; decision_id?: string; outcome?: string };
        if (p.instance_id === undefined) return [];
        return [
          {
            kind: "node-event",
            node,
            instance: p.instance_id,
            event: `${r.kind}${r.phase ? `/${r.phase}` : ""}`,
            decisionId: p.decision_id ?? null,
            lease: r.phase === "lease" || r.phase === "forced",
          },
        ];
      });
    }) ?? []
  );
}

/** Hashes of every event of the controller store's chains, read-only (PostgreSQL in a read-only session). */
export async function controllerHashes(databaseUrl: string | null, home: string): Promise<Set<string>> {
  const rows = await storeRows<{ hash: string }>(databaseUrl, home, "SELECT hash FROM audit_event");
  return new Set(rows.map((r) => r.hash));
}

export async function recordedPlacements(databaseUrl: string | null, home: string): Promise<Map<string, string>> {
  const rows = await storeRows<{ instance_id: string; name: string }>(
    databaseUrl,
    home,
    "SELECT instance_id, name FROM mesh_placements",
  );
  return new Map(rows.map((r) => [r.instance_id, r.name]));
}

export async function openDecisions(databaseUrl: string | null, home: string): Promise<number> {
  const rows = await storeRows<{ n: number | string }>(
    databaseUrl,
    home,
    "SELECT count(*) AS n FROM mesh_decisions WHERE state IN ('dispatching','reconciling','unsettled','settling')",
  );
  return Number(rows[0]?.n ?? 0);
}

/** One read-only session per store the campaign reads (a backend forked per read costs tens of ms at load 30). */
const sessions = new Map<string, Promise<pg.Client>>();

function session(databaseUrl: string): { client: Promise<pg.Client>; reused: boolean } {
  const open = sessions.get(databaseUrl);
  if (open) return { client: open, reused: true };
  const client = new pg.Client({
    connectionString: databaseUrl,
    options: "-c default_transaction_read_only=on",
    connectionTimeoutMillis: 5_000,
    query_timeout: 10_000,
  });
  // The campaign kills and restarts the database: a connection it terminates ends this session, not the campaign.
  client.on("error", () => dropSession(databaseUrl, made));
  const made = client.connect().then(() => client);
  sessions.set(databaseUrl, made);
  made.catch(() => dropSession(databaseUrl, made));
  return { client: made, reused: false };
}

function dropSession(databaseUrl: string, which: Promise<pg.Client>): void {
  if (sessions.get(databaseUrl) !== which) return;
  sessions.delete(databaseUrl);
  void which.then((c) => c.end()).catch(() => undefined);
}

/** Ends the campaign's session on a world's store (its teardown). */
export function closeStoreSession(databaseUrl: string | null): void {
  const open = databaseUrl === null ? undefined : sessions.get(databaseUrl);
  if (databaseUrl !== null && open) dropSession(databaseUrl, open);
}

/**
 * Rows of the controller store, read-only (PostgreSQL in a read-only session, kept open between reads; SQLite opened
 * read-only). Unlike readStoreRows, the PostgreSQL client has an error listener: the campaign kills and restarts the
 * database, and a connection it terminates must fail this read, not the campaign process. A kept session that fails
 * (its server was restarted since) is dropped and the read made once more on a fresh one, so a read fails only when
 * the database does not answer now.
 */
export async function storeRows<T>(databaseUrl: string | null, home: string, sql: string): Promise<T[]> {
  if (!databaseUrl) return readStoreRows<T>(null, home, sql);
  for (;;) {
    const { client, reused } = session(databaseUrl);
    try {
      return (await (await client).query(sql)).rows as T[];
    } catch (e) {
      dropSession(databaseUrl, client);
      // A read that timed out met a database that does not answer now (paused): no second wait.
      if (!reused || /timeout/i.test(String(e))) throw e;
    }
  }
}
