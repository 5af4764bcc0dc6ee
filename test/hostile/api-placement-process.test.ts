/**
 * Issue 19 changed how an API placement commits: its `api.call` request rides the placement's first write
 * (src/store/riding-engine.ts). Judged from outside a real `berth serve` process and a real node daemon:
 * - a placement request spelled the way an attacker or a web page spells it (percent-encoded path, cross-site
 *   text/plain, a rebinding Host, a forged token) starts no agent (/proc) and leaves nothing on the chain;
 * - kill -9 of the server at the awkward moment — the agent is running on the node, the answer not yet chained —
 *   leaves one copy, which the restarted server adopts, and the chain still verifies with the request first.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, MAIN, requireBuild, waitFor } from "../mesh/harness.js";
import { liveInstances } from "../support/live-agents.js";
import { killAll, runNode, type Spawned, spawnNode } from "../support/process.js";
import { meshHome } from "../server/support.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { rawRequest } from "./api-listener.js";

const dirs: string[] = [];
const proxies: TcpProxy[] = [];
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
  await cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Served {
  readonly serve: Spawned;
  readonly port: number;
  readonly token: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
}

async function serveHome(dir: string): Promise<Served> {
  const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", dir, "--json"]);
  await serve.waitForOutput(/\n/);
  const url = (JSON.parse(serve.output().split("\n")[0] as string) as { url: string }).url;
  const token = readFileSync(join(dir, "api.token"), "utf8").trim();
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(new URL(`/api/v1${path}`, url), {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  return { serve, port: Number(new URL(url).port), token, call };
}

/**
 * A home with a paired node daemon and the probe package stored, served by `berth serve`. The server reaches the
 * node through a frame-reading proxy the test controls (test/support/tcp-proxy.ts).
 */
async function placementHome(prefix: string) {
  requireBuild();
  const { dir, key, pkgDir, node } = await meshHome(prefix, dirs);
  const proxy = await TcpProxy.start(node.address, { tls: { node: node.identity(), controller: key } });
  proxies.push(proxy);
  const served = await serveHome(dir);
  const added = await served.call("POST", "/nodes", { addr: proxy.address, tier: "paired" });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  const stored = await served.call("POST", "/packages", { path: pkgDir });
  expect(stored.status, JSON.stringify(stored.body)).toBe(201);
  return { dir, served, proxy, packageId: stored.body.package_id as string };
}

async function exportedChain(
  dir: string,
): Promise<Array<{ kind: string; source: string; payload: Record<string, unknown> }>> {
  const exported = await runNode([MAIN, "audit", "export", "--db", join(dir, "controller.db")]);
  expect(exported.code, exported.stderr).toBe(0);
  return exported.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { kind: string; source: string; payload: Record<string, unknown> });
}

type Exported = Awaited<ReturnType<typeof exportedChain>>[number];
const isPlacementRequest = (e: Exported) =>
  e.kind === "api.call" && e.payload.phase === "request" && e.payload.route === "/api/v1/placements";
const isPlacementDecision = (e: Exported) =>
  e.source === "placement" && e.kind === "workload.place" && e.payload.phase === "decision";

async function verifies(dir: string): Promise<void> {
  const verified = await runNode([MAIN, "audit", "verify", "--db", join(dir, "controller.db")]);
  expect(verified.code, `${verified.stdout}${verified.stderr}`).toBe(0);
}

describe("API placements from outside the server process (issue 19's riding request)", { timeout: 120_000 }, () => {
  it("a placement POST spelled as an attacker or a web page spells it starts nothing and chains nothing", async () => {
    const { dir, served, packageId } = await placementHome("berth-hostile-place-");
    const host = `127.0.0.1:${served.port}`;
    const forged = `${served.token.slice(0, -1)}${served.token.endsWith("A") ? "B" : "A"}`;
    const body = (name: string) => JSON.stringify({ package: packageId, name });
    const attacks: Array<[string, string, string, number]> = [
      [
        "encoded-api",
        `POST /%61pi/v1/placements HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${served.token}\nContent-Type: application/json`,
        body("encoded-api"),
        400,
      ],
      [
        "encoded-verb",
        `POST /api/v1/placement%73 HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${served.token}\nContent-Type: application/json`,
        body("encoded-verb"),
        400,
      ],
      [
        "web-page",
        `POST /api/v1/placements HTTP/1.1\nHost: ${host}\nOrigin: http://evil.example\nContent-Type: text/plain`,
        body("web-page"),
        401,
      ],
      [
        "text-plain",
        `POST /api/v1/placements HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${served.token}\nContent-Type: text/plain`,
        body("text-plain"),
        415,
      ],
      [
        "rebound",
        `POST /api/v1/placements HTTP/1.1\nHost: rebound.evil.example:${served.port}\nAuthorization: Bearer ${served.token}\nContent-Type: application/json`,
        body("rebound"),
        421,
      ],
      [
        "forged",
        `POST /api/v1/placements HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${forged}\nContent-Type: application/json`,
        body("forged"),
        401,
      ],
    ];
    const names = attacks.map(([name]) => name);
    for (const [name, head, text, status] of attacks) {
      const a = await rawRequest(served.port, head, text);
      expect(a.status, `${name}: ${a.body}`).toBe(status);
    }
    // The same request, spelled right, is placed: the refusals above were the spelling, not the request.
    const placed = await served.call("POST", "/placements", { package: packageId, name: "welcome" });
    expect(placed.status, JSON.stringify(placed.body)).toBe(201);
    await waitFor(() => liveInstances("welcome").length === 1, "the welcome agent in /proc", 30_000);
    for (const name of names) expect(liveInstances(name), `${name} in /proc`).toEqual([]);

    served.serve.child.kill("SIGTERM");
    expect((await served.serve.exited()).code).toBe(0);
    const events = await exportedChain(dir);
    const text = JSON.stringify(events);
    for (const name of names) expect(text.includes(`"${name}"`), `${name} on the chain`).toBe(false);
    expect(
      events.filter(isPlacementDecision).map((e) => e.payload.name),
      "one decision: the welcome one",
    ).toEqual(["welcome"]);
    expect(events.filter(isPlacementRequest), "one placement request chained: the welcome one").toHaveLength(1);
    await verifies(dir);
  });

  it("kill -9 of the server once the agent runs but before its answer is chained leaves one copy, adopted on restart", async () => {
    const { dir, served, proxy, packageId } = await placementHome("berth-crash-place-");
    // The awkward moment, made certain: the node runs the agent, and its answer is held at the proxy.
    proxy.holdNextPlaceAnswer();
    const placing = served
      .call("POST", "/placements", { package: packageId, name: "crashed" })
      .catch(() => "no answer");
    await waitFor(() => liveInstances("crashed").length > 0, "the agent in /proc", 30_000);
    served.serve.child.kill("SIGKILL");
    await served.serve.exited();
    expect(await placing).toBe("no answer");

    const restarted = await serveHome(dir);
    // The restarted server settles what the dead one left: one copy, recorded once, never a second start.
    await waitFor(
      async () => {
        const listed = await restarted.call("GET", "/placements");
        return (listed.body.placements as Array<{ name: string }>).filter((r) => r.name === "crashed").length === 1;
      },
      "one placement of the crashed agent",
      60_000,
    );
    expect(liveInstances("crashed")).toHaveLength(1);
    restarted.serve.child.kill("SIGTERM");
    expect((await restarted.serve.exited()).code).toBe(0);

    const events = await exportedChain(dir);
    const request = events.findIndex(isPlacementRequest);
    const decision = events.findIndex((e) => isPlacementDecision(e) && e.payload.name === "crashed");
    expect(request, "the request is on the chain").toBeGreaterThanOrEqual(0);
    expect(decision, "the decision is on the chain, after its request").toBeGreaterThan(request);
    const phases = events
      .slice(decision + 1)
      .filter((e) => e.source === "placement")
      .map((e) => e.payload.phase);
    // The dead server never chained its answer ("placed"): the restarted one adopted the running copy instead.
    expect(phases).not.toContain("placed");
    expect(phases).toContain("adopted");
    await verifies(dir);
  });
});
