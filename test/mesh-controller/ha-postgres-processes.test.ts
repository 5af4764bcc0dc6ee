/**
 * Issue 20's fault campaign with real processes on PostgreSQL: two and three `berth serve` on one throwaway
 * PostgreSQL 15 (test/support/postgres.ts; each server in its own home with the same controller key, reaching the
 * database through its own byte tap), a real `berth node serve` behind the frame-reading proxy. Faults: kill -9 of
 * the leader mid-placement, SIGSTOP of the leader past its TTL then SIGCONT, the leader cut from PostgreSQL (idle, and
 * between a node's answer and its commit, with two host names: UTS namespaces, so root), and PostgreSQL restarted
 * under everyone.
 *
 * Judged from outside only: the store read read-only (a read-only PostgreSQL session: `berth_leader`, decisions,
 * placements), live agent processes from /proc (never two copies, no orphan: every live copy is a placement the store
 * records), `berth audit verify` of the store's chain and the node's chain.
 *
 * This tier needs PostgreSQL: without it, it fails naming what is missing (test/support/postgres.ts), never skips.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cleanup, waitFor } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { liveInstances } from "../support/live-agents.js";
import { HaWorld, type Server, sharedPostgres, stopPostgres } from "./support/ha-world.js";

const TTL_MS = 3_000;
/** The design bound of a takeover: TTL + one renewal interval; plus a follower's step and this loaded machine's slack. */
const TAKEOVER_MS = TTL_MS + TTL_MS / 5 + 2_500;

/** When the row's holder took it, on the store's clock (recorded by the taker). */
async function takenMs(w: HaWorld): Promise<number> {
  const [row] = await w.rows<{ taken_ms: number }>("SELECT taken_ms FROM berth_leader WHERE id = 1");
  return Number(row?.taken_ms);
}
let world: HaWorld | null = null;

afterEach(async () => {
  await world?.close();
  world = null;
  killAll();
  await cleanup();
});
afterAll(async () => {
  await stopPostgres();
});

async function worldOf(servers: number): Promise<HaWorld> {
  world = await HaWorld.create("postgres", { ttlMs: TTL_MS });
  for (let i = 0; i < servers; i++) await world.serve();
  return world;
}

const leaderOf = (w: HaWorld) => waitFor(async () => (await w.leader()) ?? undefined, "a leader", 30_000);

async function addNode(w: HaWorld, leader: Server): Promise<void> {
  const added = await w.api(leader, "POST", "/nodes", { addr: w.nodeProxy.address, tier: "paired" });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
}

async function place(w: HaWorld, s: Server, name: string) {
  return w.api(s, "POST", "/placements", { package: w.home.pkgDir, name });
}

/** Never two copies and no orphan: every live copy of `name` is the one placement the store records for it. */
async function oneCopyRecorded(w: HaWorld, name: string): Promise<string> {
  const live = liveInstances(name);
  const placed = await w.rows<{ instance_id: string }>("SELECT instance_id FROM mesh_placements WHERE name = ?", [
    name,
  ]);
  expect(live, `live copies of ${name}`).toHaveLength(1);
  expect(placed.map((p) => p.instance_id)).toEqual(live);
  return live[0] as string;
}

/** Every server the test did not kill still runs: a fault of the database never takes a server down with it. */
function survived(w: HaWorld, ...killed: Server[]): void {
  for (const s of w.servers)
    if (!killed.includes(s))
      expect({
        pid: s.pid,
        exit: s.proc.child.exitCode,
        signal: s.proc.child.signalCode,
        stderr: s.proc.errors().slice(-1500),
      }).toMatchObject({ exit: null, signal: null });
}

async function chainsVerify(w: HaWorld): Promise<void> {
  const v = await w.verify();
  expect(v.ok, v.output).toBe(true);
  expect(w.node.verifyChain().ok).toBe(true);
}

describe("several berth serve on one PostgreSQL (issue 20)", { timeout: 120_000 }, () => {
  it("three servers: exactly one leads; followers serve reads from the shared store and answer writes with the leader's address", async () => {
    const w = await worldOf(3);
    const leader = await leaderOf(w);
    await addNode(w, leader);
    const name = `shared${process.pid}`;
    const placed = await place(w, leader, name);
    expect(placed.status, JSON.stringify(placed.body)).toBe(201);
    const epoch = (await w.leaderRow())?.epoch;
    for (const f of w.servers.filter((s) => s !== leader)) {
      const write = await place(w, f, `${name}x`);
      expect(write.status).toBe(503);
      expect(write.body).toMatchObject({ error: { code: "not_leader" }, leader: { url: leader.url, epoch } });
      const read = await w.api(f, "GET", "/placements");
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).toContain(name);
    }
    // Over several renewals the same one leads, under the same epoch.
    await new Promise((r) => setTimeout(r, 2 * TTL_MS));
    expect(await w.leaderRow()).toMatchObject({ pid: leader.pid, epoch, released_ms: null });
    expect(liveInstances(`${name}x`)).toEqual([]);
    await oneCopyRecorded(w, name);
    await chainsVerify(w);
  });

  it("kill -9 of the leader mid-placement (three servers): a follower leads within TTL + one renewal and adopts what the dead leader left; one copy", async () => {
    const w = await worldOf(3);
    const leader = await leaderOf(w);
    await addNode(w, leader);
    const name = `kept${process.pid}`;
    w.nodeProxy.delayNextAnswer("place");
    void place(w, leader, name).catch(() => null);
    await waitFor(
      async () => (w.nodeProxy.delayed > 0 ? true : undefined),
      "the node answered the place (held by the proxy)",
      30_000,
    );
    await waitFor(async () => (liveInstances(name).length > 0 ? true : undefined), "the instance runs");
    const before = await w.leaderRow();
    const [decision] = await w.rows<{ state: string }>("SELECT state FROM mesh_decisions WHERE name = ?", [name]);
    expect(decision?.state).toBe("dispatching"); // the dead leader never learns the answer: it leaves this unsettled
    const killedAt = Date.now();
    leader.proc.child.kill("SIGKILL");
    await leader.proc.exited();
    w.nodeProxy.resetConnections();
    w.nodeProxy.releaseDelayed();

    const next = await waitFor(
      async () => {
        const l = await w.leader();
        return l !== null && l !== leader ? l : undefined;
      },
      "a follower leads",
      30_000,
    );
    // When the follower took the row, as it recorded it (PostgreSQL's clock, this machine's), not when this process got
    // to see it: polling on a loaded machine adds seconds that are no part of the takeover.
    expect((await takenMs(w)) - killedAt).toBeLessThan(TAKEOVER_MS);
    expect((await w.leaderRow())?.epoch).toBeGreaterThan(before?.epoch ?? 0);
    const [placed] = await waitFor(
      async () => {
        const rows = await w.rows<{ instance_id: string; adopted: number }>(
          "SELECT instance_id, adopted FROM mesh_placements WHERE name = ?",
          [name],
        );
        return rows.length > 0 ? rows : undefined;
      },
      `${next.url} adopted the instance the dead leader placed`,
      20_000,
    );
    expect(Number(placed?.adopted)).toBe(1);
    expect(
      (await w.rows<{ state: string }>("SELECT state FROM mesh_decisions WHERE name = ?", [name])).map((d) => d.state),
    ).toEqual(["placed"]);
    await oneCopyRecorded(w, name);
    // The third server still follows, and names the new leader at once: its answer reads the lease row, not what its
    // last lease step saw (up to TTL/5 ago, the dead leader).
    const third = w.servers.find((s) => s !== leader && s !== next) as Server;
    const epoch = (await w.leaderRow())?.epoch;
    expect((await place(w, third, `${name}y`)).body).toMatchObject({
      error: { code: "not_leader" },
      leader: { url: next.url, epoch },
    });
    expect(liveInstances(`${name}y`)).toEqual([]);
    survived(w, leader);
    await chainsVerify(w);
  });

  it("an agent deployed through the leader is known to the follower, and after the leader's kill -9 the new leader lists it and replaces it from the spec it never saw", async () => {
    const w = await worldOf(2);
    const leader = await leaderOf(w);
    const other = w.servers.find((s) => s !== leader) as Server;
    await addNode(w, leader);
    const name = `reg${process.pid}`;
    // An absolute package path: the spec is remembered in the store, and every server resolves it on its own machine.
    const spec = {
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name },
      spec: { target: "mesh", package: w.home.pkgDir },
    };
    const deployed = await w.api(leader, "POST", "/agents", spec);
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    expect(deployed.body).toMatchObject({ ok: true, outcome: "started" });
    const first = await oneCopyRecorded(w, name);
    const seen = await w.api(other, "GET", `/agents/${name}`);
    expect(seen.status, JSON.stringify(seen.body)).toBe(200);
    expect(seen.body).toMatchObject({ name, target: "mesh", state: "running", instance: first });

    leader.proc.child.kill("SIGKILL");
    await leader.proc.exited();
    await waitFor(async () => ((await w.leader()) === other ? true : undefined), "the other server leads", 30_000);
    const listed = await w.api(other, "GET", "/agents");
    expect(
      (listed.body.agents as Array<{ name: string; instance: string | null }>).filter((a) => a.name === name),
    ).toEqual([expect.objectContaining({ name, instance: first })]);
    // The same spec again through the new leader: it knows the agent runs, and starts nothing.
    expect((await w.api(other, "POST", "/agents", spec)).body).toMatchObject({ ok: true, outcome: "unchanged" });
    // A replace by name takes the spec from the registry, which the new leader read from the store only.
    const replaced = await waitFor(
      async () => {
        const r = await w.api(other, "POST", `/agents/${name}/replace`, {});
        return r.status === 200 ? r : undefined;
      },
      "the new leader replaces the agent",
      30_000,
    );
    expect(replaced.body, JSON.stringify(replaced.body)).toMatchObject({ ok: true, outcome: "started" });
    const second = await oneCopyRecorded(w, name);
    expect(second).not.toBe(first);
    const [row] = await w.rows<{ name: string; target: string }>(
      "SELECT name, target FROM agent_registry WHERE name = ?",
      [name],
    );
    expect(row).toEqual({ name, target: "mesh" });
    survived(w, leader);
    await chainsVerify(w);
  });

  it("SIGSTOP of the leader past its TTL (two servers): its late place is refused stale_epoch on the node; after SIGCONT it steps down", async () => {
    const w = await worldOf(2);
    const leader = await leaderOf(w);
    const follower = w.servers.find((s) => s !== leader) as Server;
    await addNode(w, leader);
    const oldEpoch = (await w.leaderRow())?.epoch as number;
    const name = `late${process.pid}`;
    const held = w.nodeProxy.holdNextRequest("place");
    const placing = place(w, leader, name);
    await held.arrived;
    leader.proc.child.kill("SIGSTOP");
    await waitFor(
      async () => ((await w.leaderRow())?.pid === follower.pid ? true : undefined),
      "the follower leads",
      30_000,
    );
    const newEpoch = (await w.leaderRow())?.epoch as number;
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    await waitFor(
      () => (w.node.events({ kind: "controller.epoch" }).some((e) => e.payload.to === newEpoch) ? true : undefined),
      "the node saw the new epoch",
      30_000,
    );

    held.release();
    await waitFor(
      () =>
        w.node
          .events({ kind: "workload.refuse" })
          .some((e) => e.payload.code === "stale_epoch" && e.payload.method === "place")
          ? true
          : undefined,
      "the node refused the old leader's place stale_epoch",
    );
    leader.proc.child.kill("SIGCONT");
    const answer = await placing;
    expect(answer.body.placed ?? null).toBeNull();
    expect(JSON.stringify(answer.body.attempts)).toContain("stale_epoch");
    expect(liveInstances(name)).toEqual([]);
    const write = await waitFor(async () => {
      const r = await place(w, leader, `${name}x`);
      return r.status === 503 ? r : undefined;
    }, "the old leader answers not_leader");
    expect(write.body).toMatchObject({ error: { code: "not_leader" }, leader: { url: follower.url, epoch: newEpoch } });
    expect(await w.leaderRow()).toMatchObject({ pid: follower.pid, epoch: newEpoch });
    // The new leader places; still one copy of everything.
    expect((await place(w, follower, `${name}y`)).status).toBe(201);
    await oneCopyRecorded(w, `${name}y`);
    expect(liveInstances(`${name}x`)).toEqual([]);
    await chainsVerify(w);
  });

  it("the leader cut from PostgreSQL (two servers): it stops acting before its TTL ends, the follower leads; healed, the old one follows", async () => {
    const w = await worldOf(2);
    const leader = await leaderOf(w);
    const follower = w.servers.find((s) => s !== leader) as Server;
    await addNode(w, leader);
    const name = `cut${process.pid}`;
    expect((await place(w, leader, name)).status).toBe(201);
    const oldEpoch = (await w.leaderRow())?.epoch as number;

    const cutAt = Date.now();
    leader.dbTap?.partition();
    await waitFor(
      async () => ((await w.leaderRow())?.pid === follower.pid ? true : undefined),
      "the follower leads",
      30_000,
    );
    expect((await takenMs(w)) - cutAt).toBeLessThan(TAKEOVER_MS);
    const newEpoch = (await w.leaderRow())?.epoch as number;
    expect(newEpoch).toBeGreaterThan(oldEpoch);
    // The cut one has stopped acting (its window ended before the follower could take the row): it refuses writes
    // at once, without the database, and sends nothing to the node.
    const refused = await place(w, leader, `${name}x`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: "not_leader" } });
    expect((await place(w, follower, `${name}y`)).status).toBe(201);

    leader.dbTap?.heal();
    const write = await waitFor(
      async () => {
        const r = await place(w, leader, `${name}z`);
        return r.status === 503 && (r.body.leader as { url?: string } | undefined)?.url === follower.url
          ? r
          : undefined;
      },
      "the healed old leader points writes at the new one",
      30_000,
    );
    expect(write.body).toMatchObject({ error: { code: "not_leader" }, leader: { epoch: newEpoch } });
    expect(await w.leaderRow()).toMatchObject({ pid: follower.pid, epoch: newEpoch, released_ms: null });
    await oneCopyRecorded(w, name);
    await oneCopyRecorded(w, `${name}y`);
    for (const n of [`${name}x`, `${name}z`]) expect(liveInstances(n)).toEqual([]);
    survived(w);
    await chainsVerify(w);
  });

  it("the leader cut from PostgreSQL between the node's answer and its commit (two hosts): the follower adopts the instance; the old leader's late commit changes nothing", async () => {
    // Two host names (UTS namespaces): the follower judges the cut leader's owner lease by its TTL, as on two machines
    // (on one host a live pid keeps its decisions its own until it heals).
    world = await HaWorld.create("postgres", { ttlMs: TTL_MS });
    const w = world;
    await w.serve({ host: "ctl-a" });
    await w.serve({ host: "ctl-b" });
    const leader = await leaderOf(w);
    const follower = w.servers.find((s) => s !== leader) as Server;
    await addNode(w, leader);
    const name = `midcut${process.pid}`;
    w.nodeProxy.delayNextAnswer("place");
    const placing = place(w, leader, name).catch((error: Error) => ({ status: 0, body: { error: error.message } }));
    await waitFor(
      async () => (w.nodeProxy.delayed > 0 ? true : undefined),
      "the node answered the place (held by the proxy)",
      30_000,
    );
    await waitFor(async () => (liveInstances(name).length > 0 ? true : undefined), "the instance runs");
    // Cut first, then let the answer through: the leader knows the instance is placed and cannot record it.
    leader.dbTap?.partition();
    w.nodeProxy.releaseDelayed();
    await waitFor(
      async () => ((await w.leaderRow())?.pid === follower.pid ? true : undefined),
      "the follower leads",
      30_000,
    );
    const [adopted] = await waitFor(
      async () => {
        const rows = await w.rows<{ instance_id: string; adopted: number }>(
          "SELECT instance_id, adopted FROM mesh_placements WHERE name = ?",
          [name],
        );
        return rows.length > 0 ? rows : undefined;
      },
      "the follower adopted the instance",
      30_000,
    );
    expect(Number(adopted?.adopted)).toBe(1);

    // Healed: the old leader's held transaction runs now, against a decision another owner settled.
    leader.dbTap?.heal();
    await placing;
    await waitFor(
      async () => {
        const r = await place(w, leader, `${name}x`);
        return r.status === 503 ? r : undefined;
      },
      "the old leader follows",
      30_000,
    );
    expect(
      (await w.rows<{ state: string }>("SELECT state FROM mesh_decisions WHERE name = ?", [name])).map((d) => d.state),
    ).toEqual(["placed"]);
    expect(await oneCopyRecorded(w, name)).toBe(adopted?.instance_id);
    expect(liveInstances(`${name}x`)).toEqual([]);
    survived(w);
    await chainsVerify(w);
  });

  it("PostgreSQL restarted while unreachable past the TTL: nobody acts meanwhile; then one leads under a new epoch and places", async () => {
    const w = await worldOf(2);
    const leader = await leaderOf(w);
    await addNode(w, leader);
    const name = `restart${process.pid}`;
    expect((await place(w, leader, name)).status).toBe(201);
    const oldEpoch = (await w.leaderRow())?.epoch as number;

    for (const s of w.servers) s.dbTap?.partition();
    const pg = await sharedPostgres();
    await pg.restart();
    await new Promise((r) => setTimeout(r, TTL_MS + TTL_MS / 5));
    // Past the TTL with no renewal: no server may act, so every write is refused without touching the node.
    for (const s of w.servers) {
      const r = await place(w, s, `${name}x`);
      expect(r.status, JSON.stringify(r.body)).toBe(503);
    }
    for (const s of w.servers) s.dbTap?.heal();

    await waitFor(async () => ((await w.leaderRow())?.epoch ?? 0) > oldEpoch || undefined, "a new epoch", 30_000);
    // Whoever leads now (re-read each time: the first to step after the outage takes the row) places again.
    const placed = await waitFor(
      async () => {
        const next = await w.leader();
        const r = next === null ? null : await place(w, next, `${name}y`);
        return r?.status === 201 ? r : undefined;
      },
      "the leader places again",
      30_000,
    );
    expect(placed.status).toBe(201);
    await oneCopyRecorded(w, name);
    await oneCopyRecorded(w, `${name}y`);
    expect(liveInstances(`${name}x`)).toEqual([]);
    survived(w);
    await chainsVerify(w);
  });
});
