/**
 * Issue 35: a plain `berth agents` / `berth instances` reads the controller store and asks no node, yet says what the
 * agent is doing: the state its node last reported, as the serve loop's pass (or a deploy, or a `--refresh`) recorded
 * it, with its age; and "unknown (never seen)" when nothing was ever recorded. Judged through the CLI's own output,
 * against a real node daemon, with the store's observations cleared from outside between the steps.
 */
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey, loadKeyFile } from "../../src/keys/key-file.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { startTargetWatch } from "../../src/serve/mesh/watch.js";
import { cleanup, MAIN, NodeProcess, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode } from "../support/process.js";

afterEach(cleanup);

const Database = createRequire(import.meta.url)("better-sqlite3") as new (
  path: string,
) => { exec(sql: string): void; close(): void };

describe("the lists that ask no node, after berth serve's loop observed the nodes", () => {
  it("show a deployed agent running with its age; unknown (never seen) once nothing is recorded; running again after one pass of the serve loop; terminated after a stop", {
    timeout: 180_000,
  }, async () => {
    requireBuild();
    const home = tempDir("berth-stored-state-");
    const env = { BERTH_HOME: home, BERTH_ADDR: "", BERTH_CONTEXT: "", KUBECONFIG: "/nonexistent" };
    const berth = (...args: string[]) => runNode([MAIN, ...args], { env });
    const json = async (...args: string[]): Promise<JsonObject> => {
      const r = await berth(...args, "--json");
      expect(r.code, `berth ${args.join(" ")}: ${r.stderr}`).toBe(0);
      return JSON.parse(r.stdout) as JsonObject;
    };
    const controllerKey = (JSON.parse((await berth("keys", "new", "--json")).stdout) as { public_key: string })
      .public_key;
    const signer = generateSigningKey();
    probePackage(join(home, "pkg"), signer, { script: "#!/bin/sh\necho agent-up\nexec sleep 300\n" });
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
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
    const deployed = await json("deploy", spec);
    expect(deployed.outcome, String(deployed.message)).toBe("started");

    // The deploy saw its instance running on the node and recorded it: the plain list says so, with when.
    const afterDeploy = ((await json("agents")).agents as JsonObject[])[0];
    expect(afterDeploy).toMatchObject({
      name: "scout",
      state: "running",
      lifecycle: "running",
      instance: deployed.instance,
    });
    expect(afterDeploy?.seen_ms).toBeTypeOf("number");

    // Nothing recorded (a store older than the observations, or nothing has watched the nodes): unknown, and said so.
    const forget = () => {
      const db = new Database(join(home, "controller.db"));
      try {
        db.exec("DELETE FROM mesh_observations");
      } finally {
        db.close();
      }
    };
    forget();
    const unseen = ((await json("agents")).agents as JsonObject[])[0];
    expect(unseen).toMatchObject({ name: "scout", state: "unknown", seen_ms: null, instance: deployed.instance });
    const unseenHuman = await berth("agents");
    expect(unseenHuman.stdout).toMatch(/scout\s+mesh\s+unknown \(never seen\)/);
    expect(unseenHuman.stdout).toContain("--refresh asks the nodes now");
    expect((await berth("instances")).stdout).toMatch(
      new RegExp(`${String(deployed.instance)}\\s+scout\\s+\\S+\\s+unknown \\(never seen\\)`),
    );

    // One pass of berth serve's loop, as the store's leader, in this process: it observes the node and records it.
    const key = loadKeyFile(join(home, "keys", "controller.key"));
    const controller = await MeshController.open({
      dataDir: home,
      key,
      connector: new ControllerConnector({ identity: key }),
    });
    try {
      controller.lead({ address: null });
      await waitFor(() => controller.isLeader(), "the leadership", 30_000);
      const watch = startTargetWatch(controller, 3_600_000, (error) => {
        throw error;
      });
      try {
        expect(await watch.pass()).not.toBeNull();
      } finally {
        await watch.stop();
      }
    } finally {
      await controller.close();
    }

    const seen = ((await json("agents")).agents as JsonObject[])[0];
    expect(seen).toMatchObject({
      name: "scout",
      state: "running",
      lifecycle: "running",
      restarts: 0,
      instance: deployed.instance,
    });
    expect(seen?.seen_ms).toBeTypeOf("number");
    const human = await berth("agents");
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/scout\s+mesh\s+running \(seen \d+s ago\)\s+running\s+0\s/);
    expect(human.stdout, "no hint after a list whose every state is fresh").not.toContain(
      "--refresh asks the nodes now",
    );
    const placements = (await json("instances")).placements as JsonObject[];
    expect(placements[0]).toMatchObject({ instance_id: deployed.instance, state: "running", status: { restarts: 0 } });
    expect(placements[0]?.seen_ms).toBeTypeOf("number");
    expect((await berth("instances")).stdout).toMatch(
      new RegExp(`${String(deployed.instance)}\\s+scout\\s+\\S+\\s+running \\(seen \\d+s ago\\)\\s+0\\s`),
    );

    // A stop asks the node once after it: the plain list does not go on saying "running" about a stopped agent.
    expect((await berth("agent", "stop", "scout")).code).toBe(0);
    expect(((await json("agents")).agents as JsonObject[])[0]).toMatchObject({
      name: "scout",
      state: "terminated",
      lifecycle: "stopped",
    });
  });
});
