/**
 * Node liveness lives in the controller store (issue 16): every `berth` call below is a fresh controller process on
 * the same home, and a node's liveness as one process last saw it is what the next one shows, without contacting
 * the node again. A short `dead_after` (BERTH_DEAD_AFTER_MS, shared by every process on the home) keeps it brief.
 */
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, MAIN, NodeProcess, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { runNode } from "../support/process.js";
import { databaseEnv, testDatabaseFor } from "../support/test-database.js";

afterEach(cleanup);

interface Listed {
  node_id: string;
  name: string | null;
  liveness: string;
  unreachable_since_ms: number | null;
  last_ok_ms: number | null;
}

describe("node liveness read from the controller store", () => {
  it("a killed daemon reads unreachable and then dead from fresh CLI processes, and alive again once restarted", async () => {
    requireBuild();
    const home = tempDir("berth-liveness-home-");
    const env = { BERTH_HOME: home, BERTH_DEAD_AFTER_MS: "3000", ...databaseEnv(await testDatabaseFor(home)) };
    const berth = async (...args: string[]) => runNode([MAIN, ...args], { env });
    const list = async (...flags: string[]): Promise<Listed> => {
      const r = await berth("nodes", "list", "--json", ...flags);
      expect(r.code, r.stderr).toBe(0);
      const targets = (JSON.parse(r.stdout) as { targets: Listed[] }).targets;
      expect(targets).toHaveLength(1);
      return targets[0] as Listed;
    };
    const keys = await berth("keys", "new", "--json");
    expect(keys.code, keys.stderr).toBe(0);
    const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
    const node = await NodeProcess.create({ controllers: [controllerKey], signers: [] });
    const added = await berth("nodes", "add", node.address, "--tier", "paired", "--json");
    expect(added.code, added.stderr).toBe(0);

    // A fresh process, no refresh: what `nodes add` saw (today's code: unknown, no name).
    const first = await list();
    expect([first.node_id, first.liveness, first.unreachable_since_ms]).toEqual([node.nodeId, "alive", null]);
    expect(first.name).toEqual(expect.any(String));

    await node.kill9();
    const refreshed = await list("--refresh");
    expect(refreshed.liveness).toBe("suspect");
    expect(refreshed.unreachable_since_ms).toEqual(expect.any(Number));
    const later = await list();
    expect([later.liveness, later.unreachable_since_ms, later.name]).toEqual([
      "suspect",
      refreshed.unreachable_since_ms,
      first.name,
    ]);
    // Nobody contacts the node from here on: the stored "unreachable since" alone turns into dead.
    const dead = await waitFor(
      async () => {
        const t = await list();
        return t.liveness === "dead" ? t : undefined;
      },
      "the stored liveness to read dead",
      60_000,
    );
    expect(dead.unreachable_since_ms).toBe(refreshed.unreachable_since_ms);

    await node.start();
    expect((await list("--refresh")).liveness).toBe("alive");
    const back = await list();
    expect([back.liveness, back.unreachable_since_ms]).toEqual(["alive", null]);
  }, 120_000);
});
