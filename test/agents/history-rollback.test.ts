/**
 * `berth agent history NAME` and `berth agent rollback NAME [REV]` (issue 36), with a real node daemon: the revisions
 * come from the chain's `agent.remember` events (one per change of spec, repeated deploys of one spec counted in it),
 * each with the lines that changed; a rollback deploys an earlier text and is chained as a deploy that names the
 * revision it came from. The same documents through a `berth serve`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { clientHome, controllerHome, run, serve } from "../cli/remote-support.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

describe("an agent's spec revisions", { timeout: 120_000 }, () => {
  it("lists each spec deployed with what changed, and a rollback deploys the one before, chained with the revision it came from", async () => {
    requireBuild();
    const { home, env, spec } = await controllerHome();
    const first = readFileSync(spec, "utf8");
    expect((await run(env, ["deploy", spec, "--json"])).code, "the same spec again: still revision 1").toBe(0);
    writeFileSync(spec, `${first}  config: { args: ["--v2"] }\n`);
    const edited = await run(env, ["deploy", spec, "--json"]);
    expect(edited.code, edited.stderr).toBe(0);

    const history = await run(env, ["agent", "history", "scout", "--json"]);
    expect(history.code, history.stderr).toBe(0);
    const revisions = history.doc.revisions as JsonObject[];
    expect(revisions.map((r) => [r.revision, r.deploys, r.kept, r.rollback_of])).toEqual([
      [1, 2, true, null],
      [2, 1, true, null],
    ]);
    expect([history.doc.current, revisions[1]?.diff]).toEqual([2, ['+   config: { args: ["--v2"] }']]);
    const text = await run(env, ["agent", "history", "scout"]);
    expect(text.stdout).toContain("--- revision 1 → 2");

    const rolled = await run(env, ["agent", "rollback", "scout", "--json"]);
    expect([rolled.code, rolled.doc.ok, rolled.doc.rollback_of], rolled.stderr).toEqual([0, true, 1]);
    const after = await run(env, ["agent", "history", "scout", "--json"]);
    const now = after.doc.revisions as JsonObject[];
    expect(now.map((r) => [r.revision, r.rollback_of])).toEqual([
      [1, null],
      [2, null],
      [3, 1],
    ]);
    expect(now[2]?.spec_sha256, "revision 3 is revision 1's text").toBe(now[0]?.spec_sha256);
    const tail = await run(env, ["audit", "tail", "-n", "5", "--json"]);
    const remembered = (tail.doc.events as JsonObject[]).filter((e) => e.kind === "agent.remember").at(-1)
      ?.payload as JsonObject;
    expect([remembered.agent, remembered.rollback_of, remembered.spec_sha256]).toEqual([
      "scout",
      1,
      now[0]?.spec_sha256,
    ]);
    expect(
      (await run(env, ["agent", "rollback", "scout", "3", "--json"])).code,
      "revision 3 is deployed now: nothing to roll back",
    ).toBe(1);

    // Through a server: the same history document.
    const { url } = await serve(home);
    const client = clientHome(home);
    expect(
      (
        await run(client.env, [
          "context",
          "add",
          "lab",
          "--server",
          url,
          "--token-file",
          client.tokenFile,
          "--use",
          "--json",
        ])
      ).code,
    ).toBe(0);
    const remote = await run(client.env, ["agent", "history", "scout", "--json"]);
    expect([remote.code, remote.doc], remote.stderr).toEqual([0, after.doc]);
    const back = await run(client.env, ["agent", "rollback", "scout", "2", "--json"]);
    expect([back.code, back.doc.rollback_of], back.stderr).toEqual([0, 2]);
  });
});
