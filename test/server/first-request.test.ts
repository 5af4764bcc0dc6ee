/**
 * Issue 20: a lone `berth serve` leads from its first request. The leader lease's first election is asynchronous
 * (one transaction; on PostgreSQL a round trip or two), so a server that answered before it had run told its very
 * first write "no leader holds the store" (503 not_leader, leader: null). On the engine the run is on (scripts/test runs
 * this file on PostgreSQL too).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { API_BASE } from "../../src/server/openapi.js";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { databaseOption, testDatabaseFor } from "../support/test-database.js";
import { notConfigured } from "./support.js";

let running: { server: RunningServer; dir: string } | null = null;

afterEach(async () => {
  await running?.server.close();
  if (running) rmSync(running.dir, { recursive: true, force: true });
  running = null;
});

describe("a lone server's first request", () => {
  it("a write sent the moment the server has started is done by it as leader, never answered not_leader", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-first-"));
    const server = await startServer({
      dataDir: dir,
      port: 0,
      tickMs: 0,
      kubernetes: notConfigured,
      logLevel: "silent",
      ...databaseOption(await testDatabaseFor(dir)),
    });
    running = { server, dir };
    const answer = await fetch(`${server.url}${API_BASE}/unsettled/settle`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(answer.status, await answer.clone().text()).toBe(200);
    expect(server.state.controller.isLeader()).toBe(true);
  });
});
