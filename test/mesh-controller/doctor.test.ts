/**
 * `berth doctor` against a store in the wedged state of issue 21 case 2 (a placed decision marked unsettled again, as
 * main's dispatch left it after a settle had adopted the instance): every verb still works and says so on stderr,
 * settle skips the decision with the advice instead of failing on `mesh_placements.decision_id`, the doctor's dry run
 * changes nothing, and `--repair` marks it placed, chained with who asked.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, NodeProcess } from "../mesh/harness.js";
import { cliHome } from "./support/cli-home.js";
import { TEST_PERMIT } from "./support/package.js";

afterEach(cleanup);

describe("berth doctor", () => {
  it("finds a wedged decision, leaves it alone on a dry run, and repairs it with --repair, chained; no verb fails on it meanwhile", async () => {
    const { berth, store, controllerKey, signer, pkgDir } = await cliHome("berth-doctor-home-");
    const node = await NodeProcess.create({
      controllers: [controllerKey],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);
    const placed = await berth("place", pkgDir, "--json");
    expect(placed.code, placed.stderr).toBe(0);
    const decisionId = String((JSON.parse(placed.stdout) as JsonObject).decision_id);

    // What main's dispatch did after a settle adopted the instance: the decision back to unsettled.
    await store((e) =>
      e.transaction((tx) => tx.run("UPDATE mesh_decisions SET state = 'unsettled' WHERE id = ?", [decisionId])),
    );

    const settle = await berth("unsettled", "--settle", "--json");
    expect(settle.code, settle.stderr).toBe(0);
    expect(settle.stderr).toContain("berth doctor --repair");
    const skipped = ((JSON.parse(settle.stdout) as { settled: { skipped: JsonObject[] } }).settled.skipped ?? []).map(
      (s) => s.reason,
    );
    expect(skipped).toEqual([expect.stringContaining("wedged")]);

    const dry = await berth("doctor", "--json");
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      repaired: false,
      wedged: [{ decision_id: decisionId, name: "probe" }],
    });
    const still = await berth("doctor");
    expect(still.stdout).toContain("would repair: decision");

    const repaired = await berth("doctor", "--repair", "--json");
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(JSON.parse(repaired.stdout)).toMatchObject({ repaired: true, wedged: [{ decision_id: decisionId }] });
    const after = await berth("doctor");
    expect(after.stdout).toContain("no wedged decisions");
    const list = await berth("instances", "--json");
    expect([list.code, list.stderr]).toEqual([0, ""]);

    const { state, repairs } = await store((e) =>
      e.read(async (q) => ({
        state: await q.get<{ state: string }>("SELECT state FROM mesh_decisions WHERE id = ?", [decisionId]),
        repairs: await q.all<{ payload: string }>("SELECT payload FROM audit_event WHERE kind = 'controller.repair'"),
      })),
    );
    expect(state?.state).toBe("placed");
    expect(repairs.map((r) => JSON.parse(r.payload) as JsonObject)).toMatchObject([
      { decision_id: decisionId, from: "unsettled", to: "placed", operator: { via: "berth doctor" } },
    ]);
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);
});
