/**
 * Supervision and the workspace as a user meets them (issue 15): `berth deploy` of an agent keeps it alive (restart
 * `always` by default), `berth agents` and `berth instances` show the node's lifecycle state and restart count, the
 * workspace survives `berth agent replace`, and only `berth agent purge` removes it, chained on both sides.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode } from "../support/process.js";
import { cleanup, MAIN, NodeProcess, processesWithEnv, requireBuild, tempDir, waitFor } from "./harness.js";

afterEach(cleanup);

describe("a deployed agent under supervision, through the CLI", () => {
  it("is restarted after kill -9 and shown so, keeps its workspace through a replace, and loses it only to purge", async () => {
    requireBuild();
    const home = tempDir("berth-supervise-home-");
    const berth = async (...args: string[]) => runNode([MAIN, ...args], { env: { BERTH_HOME: home } });
    const json = async (...args: string[]): Promise<JsonObject & { code: number | null }> => {
      const r = await berth(...args, "--json");
      try {
        return { ...(JSON.parse(r.stdout) as JsonObject), code: r.code };
      } catch {
        throw new Error(`berth ${args.join(" ")} printed no JSON (exit ${r.code}): ${r.stdout} ${r.stderr}`);
      }
    };
    const controllerKey = (JSON.parse((await berth("keys", "new", "--json")).stdout) as { public_key: string })
      .public_key;
    const signer = generateSigningKey();
    probePackage(join(home, "pkg"), signer, { script: '#!/bin/sh\necho "run $$" >> "$HOME/runs"\nexec sleep 300\n' });
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
    const node = await NodeProcess.create({
      controllers: [controllerKey],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);
    const spec = join(home, "scout.yaml");
    // No `restart:` line: an agent's default is `always`.
    writeFileSync(
      spec,
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n",
    );
    const deployed = await json("deploy", spec);
    expect([deployed.code, deployed.outcome], String(deployed.message)).toEqual([0, "started"]);
    const id = String(deployed.instance);
    const runs = join(node.dataDir, "workspaces", "scout", "runs");
    await waitFor(() => existsSync(runs), "the agent's first run in its workspace");

    const [leader] = processesWithEnv(`BERTH_INSTANCE_ID=${id}`);
    process.kill(-(leader as number), "SIGKILL");
    await waitFor(
      async () => {
        const a = ((await json("agents", "--refresh")).agents as JsonObject[])[0];
        return a?.lifecycle === "running" && a.restarts === 1;
      },
      "berth agents to show one restart",
      30_000,
    );
    const human = await berth("instances", "--refresh");
    expect(human.stdout).toMatch(/INSTANCE\s+NAME\s+NODE\s+STATE\s+RESTARTS\s+AGE\s+VARIANT\s+NOTE/);
    expect(human.stdout).toMatch(new RegExp(`${id}\\s+scout\\s+\\S+\\s+running\\s+1\\s+.*restart always`));
    const listed = (await json("instances", "--refresh")).placements as JsonObject[];
    expect(listed[0]).toMatchObject({ state: "running", status: { restarts: 1, restart_policy: "always" } });

    const replaced = await json("agent", "replace", "scout");
    expect([replaced.code, replaced.outcome], String(replaced.message)).toEqual([0, "started"]);
    expect(replaced.instance).not.toBe(id);
    await waitFor(
      () => readFileSync(runs, "utf8").trim().split("\n").length === 3,
      "the replacement's run beside the two before it",
    );

    const purged = await json("agent", "purge", "scout");
    expect(purged.code, JSON.stringify(purged)).toBe(0);
    expect(String(purged.message)).toContain("removed its workspace");
    expect(existsSync(join(node.dataDir, "workspaces", "scout"))).toBe(false);
    expect(processesWithEnv(`BERTH_INSTANCE_ID=${String(replaced.instance)}`)).toEqual([]);
    // Chained on both sides: the controller's request names the purge, the node's unload says what it removed.
    const db = openDatabase(join(home, "controller.db"), { readonly: true });
    const requests = (
      db.prepare("SELECT payload FROM audit_event WHERE kind = 'workload.unload'").all() as Array<{ payload: string }>
    ).map((r) => JSON.parse(r.payload) as JsonObject);
    db.close();
    expect(requests.filter((p) => p.phase === "request" && p.purge === true)).toHaveLength(1);
    expect(node.events({ source: "runtime", kind: "workload.unload" }).map((e) => e.payload.workspace ?? null)).toEqual(
      [null, "purged"],
    );
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 180_000);
});
