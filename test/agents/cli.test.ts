/**
 * `berth deploy`, `berth agents` and `berth agent …` as a user runs them: each invocation a fresh process on the same
 * `$BERTH_HOME` (so every deploy is also a controller restart), against a real node daemon.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { cleanup, MAIN, NodeProcess, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode } from "../support/process.js";

afterEach(cleanup);

describe("berth deploy / agents / agent with a real node daemon", () => {
  it("deploys once however often it is asked, reports state, stops, redeploys and replaces, all audited", async () => {
    requireBuild();
    const home = tempDir("berth-agents-home-");
    const berth = async (...args: string[]) => runNode([MAIN, ...args], { env: { BERTH_HOME: home } });
    const json = async (...args: string[]): Promise<JsonObject & { code: number | null }> => {
      const r = await berth(...args, "--json");
      try {
        return { ...(JSON.parse(r.stdout) as JsonObject), code: r.code };
      } catch {
        throw new Error(`berth ${args.join(" ")} printed no JSON (exit ${r.code}): ${r.stdout} ${r.stderr}`);
      }
    };
    const keys = await berth("keys", "new", "--json");
    const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
    const signer = generateSigningKey();
    const pkgDir = join(home, "pkg");
    probePackage(pkgDir, signer, { script: "#!/bin/sh\necho agent-up\nexec sleep 300\n" });
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
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n`,
    );

    const first = await json("deploy", spec);
    expect([first.code, first.outcome, first.row], String(first.message)).toEqual([0, "started", "no-instance"]);
    const second = await json("deploy", spec);
    expect([second.code, second.outcome, second.row, second.instance]).toEqual([
      0,
      "unchanged",
      "started",
      first.instance,
    ]);
    const human = await berth("deploy", spec);
    expect(human.stdout).toContain("nothing to do");

    // Issue 35: the plain list reads the store, where the deploy recorded what its node reported.
    const listed = (await json("agents")).agents as JsonObject[];
    expect(listed.map((a) => [a.name, a.target, a.state, a.instance])).toEqual([
      ["scout", "mesh", "running", first.instance],
    ]);
    const status = await json("agent", "status", "scout");
    expect([status.state, status.row, status.next]).toEqual(["running", "started", "no-op"]);
    await waitFor(
      async () => String((await json("agent", "logs", "scout")).stdout ?? "").includes("agent-up"),
      "the agent's log line",
    );

    // An edit to a running agent is reported, not applied.
    writeFileSync(
      spec,
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n  config: { args: ["--v2"] }\n`,
    );
    const edited = await berth("deploy", spec);
    expect(edited.code).toBe(0);
    expect(edited.stdout).toContain("takes effect after it stops");

    const stopped = await json("agent", "stop", "scout");
    expect(stopped.code, JSON.stringify(stopped)).toBe(0);
    const restarted = await json("deploy", spec);
    expect([restarted.code, restarted.outcome, restarted.row], String(restarted.message)).toEqual([
      0,
      "started",
      "terminated",
    ]);
    expect((restarted.fence as JsonObject).instance_id).toBe(first.instance);

    const replaced = await json("agent", "replace", "scout");
    expect([replaced.code, replaced.outcome, replaced.action], String(replaced.message)).toEqual([
      0,
      "started",
      "replace (user)",
    ]);
    expect((await json("agents")).agents).toMatchObject([
      { name: "scout", state: "running", instance: replaced.instance },
    ]);

    const bad = await berth("agent", "status", "nobody");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('no agent "nobody"');
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);
});
