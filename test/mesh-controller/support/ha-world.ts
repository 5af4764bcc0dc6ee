/**
 * Several `berth serve` on one controller store, for issue 20's fault tests (test/mesh-controller/ha-*.test.ts):
 * on PostgreSQL (a throwaway server, test/support/postgres.ts; each server in its own home — the same controller key,
 * signers and permits, as on separate machines — and reaching the database through its own byte tap, so one server
 * can be cut from it) or on SQLite (one home shared by every server, as on one machine).
 *
 * Everything a test judges is read from outside: the store read-only (PostgreSQL in a read-only session, SQLite opened
 * read-only), live agent processes from /proc, `berth audit verify` of the store, the node's chain.
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonObject } from "../../../src/core/crypto/canonical.js";
import { loadKeyFile } from "../../../src/keys/key-file.js";
import { type ChannelTap, channelTap } from "../../hostile/channel-tap.js";
import { MAIN, NodeProcess, tempDir } from "../../mesh/harness.js";
import { startPostgres, type TestPostgres } from "../../support/postgres.js";
import { runNode, type Spawned, spawnNode } from "../../support/process.js";
import { TcpProxy } from "../../support/tcp-proxy.js";
import { type CliHome, cliHome } from "./cli-home.js";
import { TEST_PERMIT } from "./package.js";
import { readStoreRows } from "../../support/test-database.js";

export type HaEngine = "sqlite" | "postgres";

export interface Server {
  readonly index: number;
  readonly home: string;
  readonly proc: Spawned;
  readonly url: string;
  readonly pid: number;
  /** Between this server and PostgreSQL (null on SQLite). */
  readonly dbTap: ChannelTap | null;
}

export interface LeaderView {
  readonly pid: number;
  readonly epoch: number;
  readonly address: string | null;
  readonly released_ms: number | null;
}

/** One PostgreSQL server per test file: started on first use, stopped by `stopPostgres()` in afterAll. */
let postgres: TestPostgres | null = null;
export async function sharedPostgres(): Promise<TestPostgres> {
  postgres ??= await startPostgres();
  return postgres;
}
export async function stopPostgres(): Promise<void> {
  await postgres?.stop();
  postgres = null;
}

export class HaWorld {
  readonly servers: Server[] = [];
  private readonly taps: ChannelTap[] = [];
  private readonly proxies: TcpProxy[] = [];

  private constructor(
    readonly engine: HaEngine,
    /** The first home: the controller key, the signed package, the policy files every server copies. */
    readonly home: CliHome,
    readonly node: NodeProcess,
    /** Between every server and the node: reads frames, delays or holds answers (test/support/tcp-proxy.ts). */
    readonly nodeProxy: TcpProxy,
    /** postgres://… of the store (PostgreSQL), or null (SQLite: `home`/controller.db). */
    readonly databaseUrl: string | null,
    /** null: no BERTH_LEADER_TTL_MS, so every server runs at berth's default (issue 37). */
    readonly ttlMs: number | null,
    private readonly sharedToken = false,
  ) {}

  /** `nodeConfig`: more node.json members for the node (issue 37: `lease_ms`). */
  /** `sharedToken`: every home gets the first server's api.token, so followers can forward writes (issue 37). */
  static async create(
    engine: HaEngine,
    opts: { ttlMs: number | null; nodeConfig?: JsonObject; sharedToken?: boolean; script?: string },
  ): Promise<HaWorld> {
    const home = await cliHome(`berth-ha-${engine}-`, opts.script === undefined ? {} : { script: opts.script });
    const node = await NodeProcess.create({
      controllers: [home.controllerKey],
      signers: [home.signer.publicKey],
      permits: [TEST_PERMIT],
      ...(opts.nodeConfig ? { config: opts.nodeConfig } : {}),
    });
    const proxy = await TcpProxy.start(node.address, {
      tls: { node: node.identity(), controller: loadKeyFile(join(home.home, "keys", "controller.key")) },
    });
    const url = engine === "postgres" ? await (await sharedPostgres()).database() : null;
    const world = new HaWorld(engine, home, node, proxy, url, opts.ttlMs, opts.sharedToken === true);
    world.proxies.push(proxy);
    return world;
  }

  /** A home for the i-th server: the first home itself on SQLite; on PostgreSQL a copy of its key and policy files. */
  private homeFor(i: number): string {
    if (this.engine === "sqlite" || i === 0) return this.home.home;
    const dir = tempDir(`berth-ha-home${i}-`);
    mkdirSync(join(dir, "keys"), { recursive: true, mode: 0o700 });
    copyFileSync(join(this.home.home, "keys", "controller.key"), join(dir, "keys", "controller.key"));
    for (const f of ["signers.json", "permits.json", ...(this.sharedToken ? ["api.token"] : [])])
      copyFileSync(join(this.home.home, f), join(dir, f));
    cpSync(this.home.pkgDir, join(dir, "pkg"), { recursive: true });
    return dir;
  }

  /** The environment of a berth process on the store: its home, the database (through `tap` when given), the TTL. */
  envFor(home: string, tap: ChannelTap | null = null): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      BERTH_HOME: home,
      ...(this.ttlMs === null ? {} : { BERTH_LEADER_TTL_MS: String(this.ttlMs) }),
    };
    if (this.databaseUrl !== null) {
      const url = new URL(this.databaseUrl);
      if (tap !== null) url.host = tap.address;
      env.BERTH_DATABASE_URL = url.toString();
    }
    return env;
  }

  /**
   * `host`: the server runs in its own UTS namespace under that host name (root only), so the others judge its owner
   * lease as another machine's — by its TTL, not by its pid — as across real hosts.
   */
  async serve(opts: { host?: string } = {}): Promise<Server> {
    const index = this.servers.length;
    const home = this.homeFor(index);
    let dbTap: ChannelTap | null = null;
    if (this.databaseUrl !== null) {
      const url = new URL(this.databaseUrl);
      dbTap = await channelTap(`${url.hostname}:${url.port}`, { record: false });
      this.taps.push(dbTap);
    }
    const wrap =
      opts.host === undefined ? [] : ["unshare", "--uts", "sh", "-c", `hostname ${opts.host} && exec "$0" "$@"`];
    const proc = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home, "--json", "--log-level", "info"], {
      env: this.envFor(home, dbTap),
      wrap,
    });
    await proc.waitForOutput(/\n/, 30_000);
    const url = (JSON.parse(proc.output().split("\n")[0] as string) as { url: string }).url;
    const server: Server = { index, home, proc, url, pid: proc.child.pid as number, dbTap };
    this.servers.push(server);
    return server;
  }

  async api(
    s: Server,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const token = readFileSync(join(s.home, "api.token"), "utf8").trim();
    const r = await fetch(`${s.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  /** Rows of the store, read-only (a read-only PostgreSQL session; SQLite opened read-only). SQL with `?`. */
  async rows<T>(sql: string, params: ReadonlyArray<string | number> = []): Promise<T[]> {
    return readStoreRows<T>(this.databaseUrl, this.home.home, sql, params);
  }

  async leaderRow(): Promise<LeaderView | null> {
    try {
      const [row] = await this.rows<LeaderView>(
        "SELECT pid, epoch, address, released_ms FROM berth_leader WHERE id = 1",
      );
      return row === undefined
        ? null
        : {
            pid: Number(row.pid),
            epoch: Number(row.epoch),
            address: row.address,
            released_ms: row.released_ms === null ? null : Number(row.released_ms),
          };
    } catch {
      return null; // not made yet, or the database is down
    }
  }

  /** The server that holds the leader row now (unreleased), or null. */
  async leader(): Promise<Server | null> {
    const row = await this.leaderRow();
    return this.servers.find((s) => row !== null && row.released_ms === null && s.pid === row.pid) ?? null;
  }

  /** `berth audit verify` of the store's chain, as an operator runs it (on PostgreSQL through BERTH_DATABASE_URL). */
  async verify(): Promise<{ ok: boolean; output: string }> {
    const args = [MAIN, "audit", "verify", "--key-file", join(this.home.home, "keys", "controller.key"), "--json"];
    if (this.databaseUrl === null) args.push("--db", join(this.home.home, "controller.db"));
    const r = await runNode(args, { env: this.envFor(this.home.home) });
    let ok = false;
    try {
      ok = r.code === 0 && (JSON.parse(r.stdout) as { ok: boolean }).ok === true;
    } catch {
      ok = false;
    }
    return { ok, output: `${r.stdout}${r.stderr}` };
  }

  async close(): Promise<void> {
    for (const s of this.servers) {
      try {
        s.proc.child.kill("SIGCONT");
        s.proc.child.kill("SIGKILL");
      } catch {
        // gone
      }
    }
    await Promise.all(this.servers.map((s) => s.proc.exited()));
    for (const t of this.taps.splice(0)) t.close();
    for (const p of this.proxies.splice(0)) await p.close();
  }
}
