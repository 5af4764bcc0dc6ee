/**
 * The controller's CLI verbs against a real node daemon: each `berth` invocation is a fresh controller process on
 * the same store (`$BERTH_HOME/controller.db`, or PostgreSQL in the PG tier), so these also prove that state, trust and placements survive restarts
 * (spec/mesh.md §14.2) and that a restarted controller re-describes a target with its stored key before using it.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, MAIN, NodeProcess, processesWithEnv, requireBuild, tempDir } from "../mesh/harness.js";
import { runNode } from "../support/process.js";
import { databaseEnv, testDatabaseFor } from "../support/test-database.js";
import { probePackage, TEST_PERMIT, writeJson } from "./support/package.js";
import { generateSigningKey } from "../../src/keys/key-file.js";

afterEach(cleanup);

describe("berth place, nodes, instances, instance and unsettled", () => {
  it("places through the CLI, lists and inspects the instance from a new process, and unloads it", async () => {
    requireBuild();
    const home = tempDir("berth-cli-home-");
    // Every call a fresh process on the same store: the home's SQLite file, or PostgreSQL under BERTH_TEST_DATABASE.
    const env = { BERTH_HOME: home, ...databaseEnv(await testDatabaseFor(home)) };
    const berth = async (...args: string[]) => runNode([MAIN, ...args], { env });
    const keys = await berth("keys", "new", "--json");
    expect(keys.code, keys.stderr).toBe(0);
    const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
    const signer = generateSigningKey();
    const pkgDir = join(home, "pkg");
    probePackage(pkgDir, signer);
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
    const node = await NodeProcess.create({
      controllers: [controllerKey],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });

    const added = await berth("nodes", "add", node.address, "--tier", "paired", "--json");
    expect(added.code, added.stderr).toBe(0);
    expect((JSON.parse(added.stdout) as JsonObject).node_id).toBe(node.nodeId);

    const listed = await berth("nodes", "list", "--refresh", "--json");
    const target = (JSON.parse(listed.stdout) as { targets: JsonObject[] }).targets[0];
    expect([target?.tier, target?.liveness]).toEqual(["paired", "alive"]);

    const placed = await berth("place", pkgDir);
    expect(placed.code, placed.stderr).toBe(0);
    expect(placed.stdout).toContain("decision: PLACED on");
    expect(placed.stdout).toContain("decision_id: ");
    expect(placed.stdout).toMatch(/1\. [0-9a-f]{32} via .*: placed as probe-[0-9a-f]{12}/);

    const instances = JSON.parse((await berth("instances", "--json")).stdout) as { placements: JsonObject[] };
    expect(instances.placements).toHaveLength(1);
    const iid = String(instances.placements[0]?.instance_id);
    const decisionId = String(instances.placements[0]?.decision_id);

    const status = await berth("instance", "status", iid, "--json");
    expect(status.code, status.stderr).toBe(0);
    expect(((JSON.parse(status.stdout) as JsonObject).result as { status: JsonObject }).status.state).toBe("running");

    const unload = await berth("instance", "unload", iid, "--json");
    expect(unload.code, unload.stderr).toBe(0);
    expect(
      (JSON.parse((await berth("instances", "--json")).stdout) as { placements: unknown[] }).placements,
    ).toHaveLength(0);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);

    const unsettled = await berth("unsettled", "--settle", "--json");
    expect((JSON.parse(unsettled.stdout) as { unsettled: unknown[] }).unsettled).toHaveLength(0);
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);

  it("a dry run prints the explain and sends nothing; an unknown instance is an error naming it", async () => {
    requireBuild();
    const home = tempDir("berth-cli-home-");
    // Every call a fresh process on the same store: the home's SQLite file, or PostgreSQL under BERTH_TEST_DATABASE.
    const env = { BERTH_HOME: home, ...databaseEnv(await testDatabaseFor(home)) };
    const berth = async (...args: string[]) => runNode([MAIN, ...args], { env });
    await berth("keys", "new");
    const signer = generateSigningKey();
    const pkgDir = join(home, "pkg");
    probePackage(pkgDir, signer);
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    const dry = await berth("place", pkgDir, "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("decision: UNPLACEABLE (no eligible node)");
    expect(dry.stdout).not.toContain("dispatch:");
    const unknown = await berth("instance", "status", "probe-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no placed instance probe-000000000000");
    expect(unknown.stderr).toContain("`berth instances` lists the placed instances");
  });
});
