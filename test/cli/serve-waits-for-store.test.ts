/**
 * `berth serve` whose PostgreSQL store is away at start (issue 37, campaign seed 2189: a serve started while the
 * database refused connections exited at once, `could not start … ECONNREFUSED`). A service waits for its store: each
 * try is logged on stderr, and the server comes up once the store answers. Between the server and PostgreSQL sits a
 * relay this test owns: it closes every connection at first (the store away), then passes them through.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAIN, requireBuild, waitFor } from "../mesh/harness.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { killAll, spawnNode } from "../support/process.js";

let pg: TestPostgres;
const dirs: string[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  requireBuild();
  pg = await startPostgres();
});
afterEach(() => {
  killAll();
  for (const s of servers.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  await pg?.stop();
});

/** A TCP relay to PostgreSQL that closes every connection until `open()`. */
async function relay(toPort: number): Promise<{ port: number; open: () => void }> {
  let passing = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => undefined);
    if (!passing) {
      client.destroy();
      return;
    }
    const upstream = connect(toPort, "127.0.0.1");
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    open: () => {
      passing = true;
    },
  };
}

describe("berth serve and a store that is away at start", { timeout: 120_000 }, () => {
  it("waits for the store, saying so on stderr, and serves once it answers", async () => {
    const url = new URL(await pg.database());
    const gate = await relay(Number(url.port));
    url.port = String(gate.port);
    const home = mkdtempSync(join(tmpdir(), "berth-serve-wait-"));
    dirs.push(home);
    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home, "--json", "--log-level", "warn"], {
      env: { BERTH_HOME: home, BERTH_DATABASE_URL: url.toString() },
    });
    let exited = false;
    void serve.exited().then(() => {
      exited = true;
    });
    // Two tries refused and the process still there: it waits instead of exiting.
    await waitFor(
      () =>
        exited
          ? Promise.reject(new Error(`serve exited: ${serve.errors()}`))
          : /not reachable \(try 2/.test(serve.errors()),
      "serve retrying its store",
      60_000,
    );
    expect(serve.errors()).toMatch(/berth serve: the controller store is not reachable \(try 1: .*\); trying again in/);
    expect(exited).toBe(false);
    gate.open();
    await serve.waitForOutput(/\n/, 60_000);
    const line = JSON.parse(serve.output().split("\n")[0] as string) as { url: string };
    const health = await fetch(`${line.url}/api/v1/health`);
    expect(health.status).toBe(200);
  });
});
