/**
 * The API end to end over real parts: a real listener (`startServer`), a real `berth node serve` daemon as an OS
 * process, a signed package, and fetch. Issue 7's HTTP deploy endpoint (twice → one instance), a placement that shows
 * up in the instance list with its logs and explain, stop and unload — each checked through a signed status straight
 * to the daemon, never only through the server under test. `/metrics` after a placement matches the store. And
 * `berth serve` itself as a process: prints the dashboard URL, answers, and exits cleanly on SIGTERM.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { cleanup, MAIN, requireBuild, waitFor } from "../mesh/harness.js";
import { killAll, spawnNode } from "../support/process.js";
import { databaseEnv, databaseOption, testDatabaseFor } from "../support/test-database.js";
import { checkContract, meshHome, notConfigured } from "./support.js";

const servers: RunningServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  killAll();
  await cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Json = Record<string, unknown>;

function client(server: RunningServer) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const r = await fetch(`${server.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${server.token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = { status: r.status, body: (await r.json()) as Json };
    checkContract(method, `/api/v1${path}`, answer.status, answer.body);
    return answer;
  };
}

describe("the API with a real node daemon", { timeout: 120_000 }, () => {
  it("deploys an agent twice at once as one instance, places, lists, reads logs, explains, stops, starts, unloads and replaces", async () => {
    requireBuild();
    const { dir, key, pkgDir, node } = await meshHome("berth-api-e2e-", dirs);
    const server = await startServer({
      dataDir: dir,
      port: 0,
      kubernetes: notConfigured,
      ...databaseOption(await testDatabaseFor(dir)),
    });
    servers.push(server);
    const api = client(server);
    const observer = new NodeClient({
      key,
      connector: new TlsConnector({ identity: key, connectTimeoutMs: 2_000 }),
      timeoutMs: 5_000,
    });
    const onNode = async (): Promise<JsonObject[]> => {
      const r = await observer.call(node.target(), "status", { instance_id: null, include_departed: false });
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
      return (r.result.rows as JsonObject[]).filter(
        (row) => typeof row.instance_id === "string" && !("departed" in row),
      );
    };

    const added = await api("POST", "/nodes", { addr: node.address, tier: "paired" });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const nodes = (await api("GET", "/nodes")).body.nodes as Json[];
    expect(nodes.map((n) => [n.node_id, n.tier, n.liveness, (n.facts as Json | null)?.board])).toEqual([
      [node.nodeId, "paired", "alive", "pi5"],
    ]);

    // issue 7's HTTP deploy endpoint: the same spec twice is one instance
    const spec = {
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name: "scout" },
      spec: { target: "mesh", package: pkgDir },
    };
    // Two deploys at once: the second waits for the first and finds it running.
    const both = await Promise.all([api("POST", "/agents", spec), api("POST", "/agents", spec)]);
    expect(both.map((r) => [r.status, r.body.outcome]).sort(), JSON.stringify(both.map((r) => r.body.message))).toEqual(
      [
        [200, "started"],
        [200, "unchanged"],
      ],
    );
    const first = (await both.find((r) => r.body.outcome === "started")) as (typeof both)[number];
    const second = (await both.find((r) => r.body.outcome === "unchanged")) as (typeof both)[number];
    expect([second.body.outcome, second.body.row, second.body.action, second.body.instance]).toEqual([
      "unchanged",
      "started",
      "no-op",
      first.body.instance,
    ]);
    expect((await onNode()).map((r) => [r.instance_id, r.agent, r.state])).toEqual([
      [first.body.instance, "scout", "running"],
    ]);
    const agents = (await api("GET", "/agents")).body.agents as Json[];
    expect(agents.map((a) => [a.name, a.target, a.state, a.instance])).toEqual([
      ["scout", "mesh", "running", first.body.instance],
    ]);
    const status = (await api("GET", "/agents/scout")).body;
    expect([status.state, status.row, status.next, status.instance]).toEqual([
      "running",
      "started",
      "no-op",
      first.body.instance,
    ]);
    const agentLogs = await waitFor(async () => {
      const r = await api("GET", "/agents/scout/logs");
      return String(r.body.stdout ?? "").includes("placed-ok") ? r : undefined;
    }, "the agent's output");
    expect(agentLogs.body.instance).toBe(first.body.instance);
    // The library chains the deploy itself; the api.call outcome names that event and who asked.
    const deployOutcomes = (
      await server.state.controller.store.chain.find({ source: "api", kind: "api.call", phase: "outcome" })
    ).filter((e) => e.payload.route === "/api/v1/agents");
    expect(deployOutcomes.map((e) => (e.payload.refs as Json).outcome)).toEqual(["started", "unchanged"]);
    for (const e of deployOutcomes) {
      const ref = (e.payload.refs as Json).agent_deploy as Json;
      expect((await server.state.controller.store.chain.get(ref.seq as number))?.kind).toBe("agent.deploy");
      expect(e.payload.who).toMatch(/^token:[0-9a-f]{8}$/);
    }

    // a placement through the API shows up in the instance list, with logs and its explain
    const placed = await api("POST", "/placements", { package: pkgDir, name: "probe-two" });
    expect(placed.status, JSON.stringify(placed.body)).toBe(201);
    const instanceId = (placed.body.placed as Json).instance_id as string;
    const instances = (await api("GET", "/instances")).body.instances as Json[];
    expect(instances.map((i) => [i.instance_id, i.state]).sort()).toEqual(
      [
        [first.body.instance, "running"],
        [instanceId, "running"],
      ].sort(),
    );
    const logs = await waitFor(async () => {
      const r = await api("GET", `/instances/${instanceId}/logs`);
      return String((r.body.result as Json).stdout ?? "").includes("placed-ok") ? r : undefined;
    }, "the placed instance's output");
    expect([logs.status, logs.body.kind]).toEqual([200, "ok"]);
    const past = await api("GET", `/placements/${placed.body.decision_id as string}`);
    expect([past.body.state, past.body.name, (past.body.attempts as Json[]).map((a) => a.outcome)]).toEqual([
      "placed",
      "probe-two",
      ["placed"],
    ]);
    expect(((past.body.decision as Json).candidates as Json[]).map((c) => [c.node_id, c.eligible])).toEqual([
      [node.nodeId, true],
    ]);
    expect(past.body.explain).toContain(node.nodeId);

    // the dry run decides and records, and sends nothing
    const explain = await api("POST", "/placements/explain", { package: pkgDir, name: "probe-three" });
    expect([explain.status, explain.body.placed, explain.body.attempts]).toEqual([200, null, []]);
    expect((await onNode()).length).toBe(2);

    // stop and unload through the API; the daemon agrees
    const stopped = await api("POST", `/instances/${instanceId}/stop`, {});
    expect([stopped.status, stopped.body.kind], JSON.stringify(stopped.body)).toEqual([200, "ok"]);
    expect((await onNode()).find((r) => r.instance_id === instanceId)?.state).not.toBe("running");
    const restarted = await api("POST", `/instances/${instanceId}/start`, {});
    expect([restarted.status, restarted.body.kind], JSON.stringify(restarted.body)).toEqual([200, "ok"]);
    expect((await onNode()).find((r) => r.instance_id === instanceId)?.state).toBe("running");
    expect((await api("GET", `/instances/${instanceId}`)).body.kind).toBe("ok");
    const unloaded = await api("POST", `/instances/${instanceId}/unload`, {});
    expect([unloaded.status, unloaded.body.kind], JSON.stringify(unloaded.body)).toEqual([200, "ok"]);
    expect((await onNode()).map((r) => r.instance_id)).toEqual([first.body.instance]);
    expect(((await api("GET", "/placements")).body.placements as Json[]).map((p) => p.instance_id)).toEqual([
      first.body.instance,
    ]);

    const agentStop = await api("POST", "/agents/scout/stop", {});
    expect([agentStop.status, agentStop.body.instance]).toEqual([200, first.body.instance]);
    expect((await onNode()).find((r) => r.instance_id === first.body.instance)?.state).not.toBe("running");
    // replace: the stopped instance goes (fenced unload) and a new one starts; still one instance of the agent
    const replaced = await api("POST", "/agents/scout/replace", {});
    expect([replaced.status, replaced.body.ok, replaced.body.outcome], JSON.stringify(replaced.body.message)).toEqual([
      200,
      true,
      "started",
    ]);
    expect(replaced.body.instance).not.toBe(first.body.instance);
    expect((await onNode()).map((r) => [r.instance_id, r.state])).toEqual([[replaced.body.instance, "running"]]);
    expect(((await api("GET", "/audit/verify")).body as Json).ok).toBe(true);
  });
});

/** issue 13: `/metrics` counts what the controller did (decisions, attempts, placements, nodes, chain events). */
function metric(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("metrics over a real node", { timeout: 120_000 }, () => {
  it("count a placement: decision placed, attempt placed, one native placement, one alive node, the chain's events", async () => {
    requireBuild();
    const { dir, pkgDir, node } = await meshHome("berth-metrics-", dirs);
    const server = await startServer({
      dataDir: dir,
      port: 0,
      kubernetes: notConfigured,
      logLevel: "silent",
      ...databaseOption(await testDatabaseFor(dir)),
    });
    servers.push(server);
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${server.token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    expect((await call("POST", "/api/v1/nodes", { addr: node.address, tier: "paired" })).status).toBe(201);
    const placed = await call("POST", "/api/v1/placements", { package: pkgDir, name: "counted" });
    expect(placed.status, await placed.clone().text()).toBe(201);
    const text = await (await call("GET", "/metrics")).text();

    expect(metric(text, 'berth_decisions{state="placed"}')).toBe(1);
    expect(metric(text, 'berth_decisions{state="unsettled"}')).toBe(0);
    expect(metric(text, 'berth_placement_attempts{outcome="placed"}')).toBe(1);
    expect(metric(text, 'berth_placements{route="native"}')).toBe(1);
    expect(metric(text, 'berth_nodes{liveness="alive"}')).toBe(1);
    expect(metric(text, "berth_unsettled_decisions")).toBe(0);
    expect(metric(text, 'berth_chain_events_total{chain="controller"}')).toBe(
      (await server.state.controller.store.chain.tip()).seq + 1,
    );
    expect(
      metric(text, 'berth_api_request_duration_seconds_count{method="POST",route="/api/v1/placements",status="201"}'),
    ).toBe(1);
  });
});

describe("berth serve as a process", { timeout: 60_000 }, () => {
  it("prints the dashboard URL with the token, answers, warns off loopback, and exits 0 on SIGTERM", async () => {
    requireBuild();
    const dir = mkdtempSync(join(tmpdir(), "berth-serve-"));
    dirs.push(dir);
    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", dir, "--host", "0.0.0.0"], {
      env: databaseEnv(await testDatabaseFor(dir)),
    });
    await serve.waitForOutput(/dashboard: http:\/\/0\.0\.0\.0:\d+\/#token=[A-Za-z0-9_-]+\n/);
    expect(serve.errors()).toContain("not loopback");
    const url = /dashboard: (http:\/\/[^/]+)\//.exec(serve.output())?.[1] as string;
    const health = await fetch(`${url.replace("0.0.0.0", "127.0.0.1")}/api/v1/health`);
    expect(await health.json()).toEqual({ ok: true, version: expect.any(String) });
    serve.child.kill("SIGTERM");
    expect(await serve.exited()).toEqual({ code: 0, signal: null });
    expect(serve.output()).toContain("stopped");

    const bad = spawnNode([MAIN, "serve", "--port", "70000", "--data-dir", dir]);
    const exit = await bad.exited();
    expect(exit.code).not.toBe(0);
    expect(bad.errors()).toContain("--port");
  });
});
