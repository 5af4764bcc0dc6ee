/**
 * Issue 37 (campaign seeds 11246 and 11525): a deploy killed (kill -9) after the node started the agent and the
 * controller recorded the placement, but before the registry took the agent's record. Before the fix `berth agent
 * stop NAME` answered "no agent was deployed" while the agent ran: it could be stopped only by instance id. Judged
 * from outside: the agent's process found in /proc by its instance id, every verb a fresh `berth` process on the home.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, NodeProcess, processesWithEnv, waitFor } from "../mesh/harness.js";
import { cliHome } from "../mesh-controller/support/cli-home.js";
import { TEST_PERMIT } from "../mesh-controller/support/package.js";
import { builtPath } from "../support/built.js";
import { runNode } from "../support/process.js";

afterEach(cleanup);

describe("a deploy killed between the node's start and the agent's record", () => {
  it("leaves an agent that berth agent stop NAME finds by name and stops, with the record had back from its placement and chained", async () => {
    // The shared CLI home (keys, signed probe package, signers and permits; the tier's store, PostgreSQL or SQLite).
    const { home, env, berth, controllerKey, signer } = await cliHome("berth-killed-deploy-", {
      script: "#!/bin/sh\necho agent-up\nexec sleep 300\n",
    });
    const json = async (...args: string[]): Promise<JsonObject & { code: number | null }> => {
      const r = await berth(...args, "--json");
      try {
        return { ...(JSON.parse(r.stdout) as JsonObject), code: r.code };
      } catch {
        throw new Error(`berth ${args.join(" ")} printed no JSON (exit ${r.code}): ${r.stdout} ${r.stderr}`);
      }
    };
    const node = await NodeProcess.create({
      controllers: [controllerKey],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);
    const spec = join(home, "scout.yaml");
    writeFileSync(
      spec,
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n",
    );

    const killed = await runNode([builtPath("test/agents/support/deploy-killed-worker.js"), spec], { env });
    expect(killed.signal, `the deploy should die at agent.remember: ${killed.stdout} ${killed.stderr}`).toBe("SIGKILL");

    // What the deploy left: one placement, and its agent running, seen in /proc.
    const placed = (await json("instances")).placements as JsonObject[];
    expect(placed.map((p) => p.name)).toEqual(["scout"]);
    const instance = String(placed[0]?.instance_id);
    const live = () => processesWithEnv(`BERTH_INSTANCE_ID=${instance}`);
    expect(live().length, "the agent runs").toBeGreaterThan(0);

    // The name finds it: the record comes back from the placement, and the stop ends the process.
    const stopped = await json("agent", "stop", "scout");
    expect([stopped.code, stopped.instance], JSON.stringify(stopped)).toEqual([0, instance]);
    await waitFor(async () => live().length === 0, "the agent's process to end", 20_000);

    const listed = (await json("agents")).agents as JsonObject[];
    expect(listed.map((a) => a.name)).toEqual(["scout"]);
    const events = (await json("events", "-n", "200")).events as JsonObject[];
    const remembered = events.filter((e) => e.kind === "agent.remember").map((e) => e.payload as JsonObject);
    expect(remembered).toHaveLength(1);
    expect(remembered[0]).toMatchObject({ agent: "scout", target: "mesh", outcome: "started" });
    expect(String(remembered[0]?.recovered_from)).toMatch(/^[0-9a-f]{64}$/);

    // A deploy of the same spec now places the stopped agent again, as for any stopped agent: one instance.
    const again = await json("deploy", spec);
    expect([again.code, again.outcome, again.row], String(again.message)).toEqual([0, "started", "terminated"]);
    const next = String(again.instance);
    await waitFor(
      async () => processesWithEnv(`BERTH_INSTANCE_ID=${next}`).length > 0,
      "the agent to run again",
      20_000,
    );
    expect(live(), "the stopped copy stays stopped").toEqual([]);
    expect(((await json("instances")).placements as JsonObject[]).map((p) => p.instance_id)).toEqual([next]);
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);
});
