/**
 * Issue 33 items 2 and 3, as a user meets them: every step a fresh `berth` process on one `$BERTH_HOME` against a real
 * node daemon, judged by the CLI's own answers and the controller store read read-only.
 *
 * - Nothing half-applied: a deploy the node refuses leaves no agent record (`berth agents` does not list it), only
 *   its `agent.deploy` audit event; a redeploy of a known agent that fails after it was accepted keeps the record and
 *   says why beside its state.
 * - Records that can go: `berth agent delete NAME` is refused, with the reason and the verb that clears it, while an
 *   instance is there (running, or stopped and still loaded); once purged, the record goes, chained as
 *   `agent.delete`, and the agent stops being listed.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { cleanup, MAIN, NodeProcess, requireBuild, tempDir } from "../mesh/harness.js";
import { probePackage, TEST_KIND, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode } from "../support/process.js";

afterEach(cleanup);

/** A home with a controller key, a signer, the probe package and one node daemon (its permits given), paired. */
async function world(nodePermits: JsonObject[]) {
  requireBuild();
  const home = tempDir("berth-records-home-");
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
  probePackage(join(home, "pkg"), signer, { script: "#!/bin/sh\necho agent-up\nexec sleep 300\n" });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  const node = await NodeProcess.create({
    controllers: [controllerKey],
    signers: [signer.publicKey],
    permits: nodePermits as never,
  });
  expect((await berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);
  const spec = (name: string, extra = "") => {
    const path = join(home, `${name}.yaml`);
    writeFileSync(
      path,
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ${name} }\nspec:\n  target: mesh\n  package: ./pkg\n${extra}`,
    );
    return path;
  };
  /** The controller chain's events of a kind, read read-only from the store. */
  const events = (kind: string): JsonObject[] => {
    const db = new Database(join(home, "controller.db"), { readonly: true });
    try {
      return (
        db.prepare("SELECT payload FROM audit_event WHERE kind = ? ORDER BY seq").all(kind) as Array<{
          payload: string;
        }>
      ).map((r) => JSON.parse(r.payload) as JsonObject);
    } finally {
      db.close();
    }
  };
  return { home, berth, json, spec, events };
}

const names = (doc: JsonObject) => (doc.agents as JsonObject[]).map((a) => a.name);

describe("agent records: nothing half-applied, and records that can go (real node daemon, the CLI)", () => {
  it("a deploy the node refuses leaves no agent record, only its audit event", async () => {
    // The node's permit keeps the default max_network (lan); the package reaches the internet (egress).
    const w = await world([{ id: "lan-only", actions: ["workload.*"], kinds: [TEST_KIND] }]);
    const refused = await w.json("deploy", w.spec("refused"));
    expect([refused.code, refused.outcome], String(refused.message)).toEqual([1, "failed"]);
    expect(names(await w.json("agents"))).toEqual([]);
    expect((await w.berth("agent", "status", "refused")).code).toBe(1);
    expect(w.events("agent.deploy").map((e) => [e.agent, e.outcome])).toEqual([["refused", "failed"]]);
    expect(w.events("agent.remember").filter((e) => e.agent === "refused")).toEqual([]);
  }, 120_000);

  it("a known agent whose redeploy fails after it was accepted keeps its record, and its state says why", async () => {
    const w = await world([TEST_PERMIT as unknown as JsonObject]);
    const first = await w.json("deploy", w.spec("scout"));
    expect([first.code, first.outcome], String(first.message)).toEqual([0, "started"]);
    expect((await w.json("agent", "stop", "scout")).code).toBe(0);
    // Accepted (the stopped instance is unloaded for it), then refused by the node: a flag the package does not declare.
    const failed = await w.json("deploy", w.spec("scout", '  config: { args: ["--undeclared"] }\n'));
    expect([failed.code, failed.outcome], String(failed.message)).toEqual([1, "failed"]);
    const listed = (await w.json("agents")).agents as JsonObject[];
    expect(listed.map((a) => a.name)).toEqual(["scout"]);
    expect(String(listed[0]!.last_deploy)).toContain("config.args[0]: argument 0 is not a flag package probe declares");
    expect((await w.berth("agents")).stdout).toContain("last deploy failed");
  }, 120_000);

  it("berth agent delete is refused while an instance is there, naming it and what clears it; once purged the record goes, chained", async () => {
    const w = await world([TEST_PERMIT as unknown as JsonObject]);
    const first = await w.json("deploy", w.spec("scout"));
    expect(first.code, String(first.message)).toBe(0);
    const running = await w.json("agent", "delete", "scout");
    expect(running.code).toBe(1);
    expect(String(running.message)).toContain(`its instance ${String(first.instance)} is running`);
    expect(String(running.message)).toContain("berth agent purge scout");
    expect((await w.json("agent", "stop", "scout")).code).toBe(0);
    const stopped = await w.json("agent", "delete", "scout");
    expect(stopped.code).toBe(1);
    expect(String(stopped.message)).toContain(String(first.instance));
    expect(names(await w.json("agents"))).toEqual(["scout"]);
    expect(w.events("agent.delete")).toEqual([]);
    expect((await w.json("agent", "purge", "scout")).code).toBe(0);
    const deleted = await w.json("agent", "delete", "scout");
    expect([deleted.code, deleted.ok], String(deleted.message)).toEqual([0, true]);
    expect(names(await w.json("agents"))).toEqual([]);
    expect(w.events("agent.delete")).toEqual([
      expect.objectContaining({
        agent: "scout",
        target: "mesh",
        operator: expect.objectContaining({ via: "berth agent delete" }),
      }),
    ]);
    expect((await w.berth("audit", "verify", "--json")).code).toBe(0);
    // Deleted, not forbidden: a deploy makes it again.
    expect((await w.json("deploy", w.spec("scout"))).code).toBe(0);
  }, 120_000);
});
