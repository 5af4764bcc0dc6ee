/**
 * Issue 20, a fenced leader with real processes: several `berth serve` on one controller store (one SQLite home on one
 * machine; the same campaign on PostgreSQL, with the database cut and restarted too, is ha-postgres-processes.test.ts), a real `berth node serve`
 * behind the frame-reading TCP proxy. Judged from outside: the store read read-only (`berth_leader`, decisions,
 * placements), the node's chain, /proc for live copies, and `berth audit verify`.
 *
 * - exactly one server leads; a follower serves reads and forwards a write to the leader (issue 37), and answers one
 *   already forwarded once 503 `not_leader` with the leader's URL;
 * - kill -9 of the leader while its place answer is held: a follower leads within TTL + one renewal, settles the
 *   decision the dead leader left (adopts the one instance the node holds), and there is never a second copy;
 * - SIGSTOP of the leader past its TTL with its place request held in the network: the follower leads under a higher
 *   epoch and describes the node at once, so the old request, delivered late, is refused `stale_epoch` on the node
 *   (chained there); after SIGCONT the old leader steps down (its writes forwarded to the new one) and nothing runs.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { cleanup, MAIN, NodeProcess, processesWithEnv, waitFor } from "../mesh/harness.js";
import { killAll, type Spawned, spawnNode } from "../support/process.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { cliHome, type CliHome } from "./support/cli-home.js";
import { TEST_PERMIT } from "./support/package.js";

const TTL_MS = 3_000;
const proxies: TcpProxy[] = [];
const servers: Spawned[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    try {
      s.child.kill("SIGCONT");
    } catch {
      // gone
    }
  }
  killAll();
  for (const p of proxies.splice(0)) await p.close();
  await cleanup();
});

interface Server {
  readonly proc: Spawned;
  readonly url: string;
  readonly pid: number;
}

async function serve(home: CliHome): Promise<Server> {
  const proc = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home.home, "--json", "--log-level", "info"], {
    env: { BERTH_HOME: home.home, BERTH_LEADER_TTL_MS: String(TTL_MS) },
  });
  servers.push(proc);
  await proc.waitForOutput(/\n/);
  const url = (JSON.parse(proc.output().split("\n")[0] as string) as { url: string }).url;
  return { proc, url, pid: proc.child.pid as number };
}

function token(home: CliHome): string {
  return readFileSync(join(home.home, "api.token"), "utf8").trim();
}

async function api(
  home: CliHome,
  s: Server,
  method: string,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; leader: string | null }> {
  const r = await fetch(`${s.url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token(home)}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...extra,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: r.status,
    body: (await r.json()) as Record<string, unknown>,
    leader: r.headers.get("x-berth-leader"),
  };
}

/** The store as it is, read-only: who leads, under which epoch. */
function leaderRow(
  home: CliHome,
): { pid: number; epoch: number; address: string | null; released_ms: number | null } | null {
  const db = openDatabase(join(home.home, "controller.db"), { readonly: true });
  try {
    return (
      (db.prepare("SELECT pid, epoch, address, released_ms FROM berth_leader WHERE id = 1").get() as ReturnType<
        typeof leaderRow
      >) ?? null
    );
  } finally {
    db.close();
  }
}

function storeRows<T>(home: CliHome, sql: string, ...params: unknown[]): T[] {
  const db = openDatabase(join(home.home, "controller.db"), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

async function world(servers: number): Promise<{ home: CliHome; node: NodeProcess; proxy: TcpProxy; all: Server[] }> {
  const home = await cliHome("berth-leader-");
  const node = await NodeProcess.create({
    controllers: [home.controllerKey],
    signers: [home.signer.publicKey],
    permits: [TEST_PERMIT],
  });
  const proxy = await TcpProxy.start(node.address, {
    tls: { node: node.identity(), controller: loadKeyFile(join(home.home, "keys", "controller.key")) },
  });
  proxies.push(proxy);
  const all: Server[] = [];
  for (let i = 0; i < servers; i++) all.push(await serve(home));
  return { home, node, proxy, all };
}

const leaderOf = (home: CliHome, all: Server[]) => {
  const row = leaderRow(home);
  return all.find((s) => row !== null && row.released_ms === null && s.pid === row.pid) ?? null;
};

async function verifies(home: CliHome): Promise<boolean> {
  const r = await home.berth(
    "audit",
    "verify",
    "--db",
    join(home.home, "controller.db"),
    "--key-file",
    join(home.home, "keys", "controller.key"),
    "--json",
  );
  return r.code === 0;
}

describe("several berth serve on one store (issue 20)", { timeout: 180_000 }, () => {
  it("exactly one leads; a follower serves reads and forwards writes to the leader, and answers a write forwarded once already with the leader's address", async () => {
    const { home, node, all } = await world(3);
    const leader = await waitFor(async () => leaderOf(home, all) ?? undefined, "a leader");
    const followers = all.filter((s) => s !== leader);
    const added = await api(home, leader, "POST", "/nodes", { addr: node.address, tier: "paired" });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    for (const f of followers) {
      // Issue 37: done by the leader, which the answer names.
      const write = await api(home, f, "POST", "/nodes", { addr: node.address, tier: "pinned" });
      expect(write.status, JSON.stringify(write.body)).toBe(201);
      expect(write.leader).toBe(leader.url);
      // A write that already came through another server is never forwarded twice: 503, the leader named, nothing done.
      const again = await api(
        home,
        f,
        "POST",
        "/nodes",
        { addr: node.address, tier: "paired" },
        { "x-berth-forwarded-by": "a test" },
      );
      expect(again.status).toBe(503);
      expect(again.body).toMatchObject({
        error: { code: "not_leader" },
        leader: { url: leader.url, epoch: leaderRow(home)?.epoch },
      });
      const read = await api(home, f, "GET", "/nodes");
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).toContain(node.nodeId);
    }
    // Over several renewals the same one leads.
    const epoch = leaderRow(home)?.epoch;
    await new Promise((r) => setTimeout(r, 2 * TTL_MS));
    expect(leaderRow(home)).toMatchObject({ pid: leader.pid, epoch });
    expect(await verifies(home)).toBe(true);
  });

  it("kill -9 of the leader mid-placement: a follower leads within TTL + one renewal and adopts what it left; one copy", async () => {
    const { home, node, proxy, all } = await world(2);
    const leader = await waitFor(async () => leaderOf(home, all) ?? undefined, "a leader");
    const follower = all.find((s) => s !== leader) as Server;
    expect((await api(home, leader, "POST", "/nodes", { addr: proxy.address, tier: "paired" })).status).toBe(201);
    const name = `kept${process.pid}`;
    proxy.delayNextAnswer("place");
    const placing = api(home, leader, "POST", "/placements", { package: home.pkgDir, name }).catch(() => null);
    await waitFor(
      async () => (proxy.delayed > 0 ? true : undefined),
      "the node answered the place (held by the proxy)",
    );
    await waitFor(
      async () => (processesWithEnv(`BERTH_NAME=${name}`).length > 0 ? true : undefined),
      "the instance runs",
    );
    const killedAt = Date.now();
    leader.proc.child.kill("SIGKILL");
    await leader.proc.exited();
    void placing;
    proxy.resetConnections();
    proxy.releaseDelayed();

    await waitFor(async () => (leaderRow(home)?.pid === follower.pid ? true : undefined), "the follower leads", 30_000);
    // The instant the follower took the row, as it recorded it (the store's clock, this machine's): not when this
    // process, polling on a loaded machine, got to see it.
    const [{ taken_ms: takenMs }] = storeRows<{ taken_ms: number }>(
      home,
      "SELECT taken_ms FROM berth_leader WHERE id = 1",
    ) as [{ taken_ms: number }];
    expect(Number(takenMs) - killedAt).toBeLessThan(TTL_MS + TTL_MS / 5 + 2_000);
    const placed = await waitFor(
      async () =>
        storeRows<{ instance_id: string; adopted: number }>(
          home,
          "SELECT instance_id, adopted FROM mesh_placements WHERE name = ?",
          name,
        )[0],
      "the follower adopted the instance the dead leader placed",
      20_000,
    );
    expect(placed.adopted).toBe(1);
    expect(
      storeRows<{ state: string }>(home, "SELECT state FROM mesh_decisions WHERE name = ?", name).map((d) => d.state),
    ).toEqual(["placed"]);
    const copies = new Set(
      processesWithEnv(`BERTH_NAME=${name}`).map((pid) =>
        readFileSync(`/proc/${pid}/environ`, "utf8")
          .split("\0")
          .find((e: string) => e.startsWith("BERTH_INSTANCE_ID=")),
      ),
    );
    expect([...copies]).toEqual([`BERTH_INSTANCE_ID=${placed.instance_id}`]);
    expect(node.verifyChain().ok).toBe(true);
    expect(await verifies(home)).toBe(true);
  });

  it("SIGSTOP of the leader past its TTL: its late place is refused stale_epoch by the node, and after SIGCONT it steps down", async () => {
    const { home, node, proxy, all } = await world(2);
    const leader = await waitFor(async () => leaderOf(home, all) ?? undefined, "a leader");
    const follower = all.find((s) => s !== leader) as Server;
    expect((await api(home, leader, "POST", "/nodes", { addr: proxy.address, tier: "paired" })).status).toBe(201);
    const oldEpoch = leaderRow(home)?.epoch as number;
    const name = `late${process.pid}`;
    const held = proxy.holdNextRequest("place");
    const placing = api(home, leader, "POST", "/placements", { package: home.pkgDir, name });
    await held.arrived;
    leader.proc.child.kill("SIGSTOP");
    await waitFor(async () => (leaderRow(home)?.pid === follower.pid ? true : undefined), "the follower leads", 30_000);
    const newEpoch = leaderRow(home)?.epoch as number;
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    // The new leader describes the node on taking over: the node has seen the new epoch.
    await waitFor(
      async () => (node.events({ kind: "controller.epoch" }).some((e) => e.payload.to === newEpoch) ? true : undefined),
      "the node saw the new epoch",
    );

    held.release();
    await waitFor(
      async () =>
        node
          .events({ kind: "workload.refuse" })
          .some((e) => e.payload.code === "stale_epoch" && e.payload.method === "place")
          ? true
          : undefined,
      "the node refused the old leader's place stale_epoch",
    );
    leader.proc.child.kill("SIGCONT");
    const answer = await placing;
    // The old leader's report: nothing placed, its one attempt refused by the node for its epoch.
    expect(answer.body.placed ?? null).toBeNull();
    expect(JSON.stringify(answer.body.attempts)).toContain("stale_epoch");
    expect(processesWithEnv(`BERTH_NAME=${name}`)).toEqual([]);
    // It stepped down: it does no write itself and forwards them to the new leader (issue 37).
    const write = await waitFor(async () => {
      const w = await api(home, leader, "POST", "/nodes", { addr: proxy.address, tier: "pinned" });
      return w.status === 503 ? undefined : w;
    }, "the old leader forwards a write");
    expect(write.status, JSON.stringify(write.body)).toBe(201);
    expect(write.leader).toBe(follower.url);
    expect(leaderRow(home)).toMatchObject({ pid: follower.pid, epoch: newEpoch });
    expect(node.verifyChain().ok).toBe(true);
    expect(await verifies(home)).toBe(true);
  });
});
