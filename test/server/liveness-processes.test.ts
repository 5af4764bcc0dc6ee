/**
 * `berth serve` keeps node status fresh (issue 16, issue 13 "First paint shows real states"): a server started
 * against a home with a live node answers GET /nodes with the node's name and `alive` without any client asking for
 * a refresh; its tick describes every node, so a killed daemon reads unreachable and then dead in the API and in a
 * fresh CLI process (the same stored truth), and alive again once restarted. A tick that changes nothing chains
 * nothing. The daemon is a real `berth node serve` process; the server runs in-process with a short tick.
 */
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { cleanup, MAIN, requireBuild, waitFor } from "../mesh/harness.js";
import { runNode } from "../support/process.js";
import { databaseEnv, databaseOption, readStoreRows, testDatabaseFor } from "../support/test-database.js";
import { meshHome, notConfigured } from "./support.js";

const dirs: string[] = [];
const servers: RunningServer[] = [];
const savedDeadAfter = process.env.BERTH_DEAD_AFTER_MS;

afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  await cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  if (savedDeadAfter === undefined) delete process.env.BERTH_DEAD_AFTER_MS;
  else process.env.BERTH_DEAD_AFTER_MS = savedDeadAfter;
});

interface NodeRow {
  node_id: string;
  name: string | null;
  liveness: string;
  last_ok_ms: number | null;
  unreachable_since_ms: number | null;
}

describe("the server's node status tick", () => {
  it("answers the first GET /nodes with the node's name and alive, and follows a killed and restarted daemon without any refresh", async () => {
    requireBuild();
    const { dir, node } = await meshHome("berth-liveness-api-", dirs);
    process.env.BERTH_DEAD_AFTER_MS = "3000";
    const database = await testDatabaseFor(dir);
    const env = { BERTH_HOME: dir, BERTH_DEAD_AFTER_MS: "3000", ...databaseEnv(database) };
    const added = await runNode([MAIN, "nodes", "add", node.address, "--tier", "paired", "--json"], { env });
    expect(added.code, added.stderr).toBe(0);
    const addedAt = (JSON.parse(added.stdout) as NodeRow).last_ok_ms as number;

    const server = await startServer({
      dataDir: dir,
      port: 0,
      logLevel: "silent",
      kubernetes: notConfigured,
      tickMs: 200,
      ...databaseOption(database),
    });
    servers.push(server);
    const nodes = async (): Promise<NodeRow> => {
      const r = await fetch(`${server.url}/api/v1/nodes`, { headers: { authorization: `Bearer ${server.token}` } });
      expect(r.status).toBe(200);
      const list = ((await r.json()) as { nodes: NodeRow[] }).nodes;
      expect(list).toHaveLength(1);
      return list[0] as NodeRow;
    };
    const first = await nodes();
    expect([first.node_id, first.liveness]).toEqual([node.nodeId, "alive"]);
    expect(first.name).toEqual(expect.any(String));
    // The tick, not the CLI's contact: the last answer moves on while no client asks for a refresh.
    await waitFor(async () => ((await nodes()).last_ok_ms as number) > addedAt, "a tick to describe the node", 30_000);

    const events = async () =>
      Number(
        (await readStoreRows<{ n: number | string }>(database, dir, "SELECT COUNT(*) AS n FROM audit_event"))[0]?.n,
      );
    const before = await events();
    const seen = (await nodes()).last_ok_ms as number;
    await waitFor(async () => ((await nodes()).last_ok_ms as number) > seen, "another tick", 30_000);
    expect(await events()).toBe(before);

    await node.kill9();
    const unreachable = await waitFor(
      async () => {
        const n = await nodes();
        return n.liveness === "suspect" ? n : undefined;
      },
      "GET /nodes to read the node unreachable",
      30_000,
    );
    expect(unreachable.unreachable_since_ms).toEqual(expect.any(Number));
    await waitFor(async () => (await nodes()).liveness === "dead", "GET /nodes to read the node dead", 60_000);
    const cli = await runNode([MAIN, "nodes", "list", "--json"], { env });
    expect(
      (JSON.parse(cli.stdout) as { targets: NodeRow[] }).targets.map((t) => [t.liveness, t.unreachable_since_ms]),
    ).toEqual([["dead", unreachable.unreachable_since_ms]]);

    await node.start();
    await waitFor(
      async () => (await nodes()).liveness === "alive",
      "GET /nodes to read the restarted node alive",
      30_000,
    );
  }, 150_000);
});
