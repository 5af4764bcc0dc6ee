/**
 * Issue 36: `berth nodes remove NODE` takes a forgotten node off the list. Refused, naming the node's state, while it
 * is not forgotten (the same words and exit status through a berth serve and on the files); after `berth node forget`
 * it is removed, chained as `peer.remove` with who and why, and no list shows it any more: not the server's own (for a
 * node removed through it, and for one removed on the files beside it), not the files'. Real processes, judged from
 * outside: exit statuses, stderr, the documents, the chain.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, NodeProcess, requireBuild, tempDir } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { run, serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

describe("berth nodes remove", () => {
  it("refuses a node that is not forgotten, naming its state, and takes a forgotten one off every list", async () => {
    requireBuild();
    const home = tempDir("berth-nodes-remove-");
    const env = { BERTH_HOME: home, NO_COLOR: "1" };
    const keys = await run(env, ["keys", "new", "--json"]);
    const controller = String(keys.doc.public_key);
    const a = await NodeProcess.create({ controllers: [controller], signers: [], permits: [] });
    const b = await NodeProcess.create({ controllers: [controller], signers: [], permits: [] });
    for (const n of [a, b]) expect((await run(env, ["nodes", "add", n.address, "--tier", "paired"])).code).toBe(0);
    await serve(home);
    const listed = async (local: boolean) =>
      ((await run(env, ["nodes", "list", "--json", ...(local ? ["--local"] : [])])).doc.targets as JsonObject[])
        .map((t) => t.node_id)
        .sort();

    // Not forgotten: refused both ways in the same words, naming the state; nothing removed.
    const [through, local] = await Promise.all([
      run(env, ["nodes", "remove", a.nodeId]),
      run(env, ["nodes", "remove", a.nodeId, "--local"]),
    ]);
    expect([through.code, local.code], through.stderr).toEqual([1, 1]);
    expect(through.stderr).toBe(local.stderr);
    expect(through.stderr).toMatch(
      new RegExp(
        `^berth: node ${a.nodeId} is (alive|stale|unknown|dead)[^\\n]*, not forgotten: only a forgotten node can be removed`,
      ),
    );
    expect(through.stderr).toContain(`berth node forget ${a.nodeId}`);
    const refusedDoc = await run(env, ["nodes", "remove", a.nodeId, "--json"]);
    expect([refusedDoc.code, refusedDoc.doc.ok, refusedDoc.doc.kind]).toEqual([1, false, "refused"]);
    const cordoned = await run(env, ["node", "cordon", b.nodeId, "--reason", "disk check", "--local"]);
    expect(cordoned.code, cordoned.stderr).toBe(0);
    expect((await run(env, ["nodes", "remove", b.address])).stderr, "the cordon is named too").toMatch(
      /is cordoned, \w+, not forgotten/,
    );
    expect(await listed(false)).toEqual([a.nodeId, b.nodeId].sort());

    // Forgotten: removed through the server (a by id) and on the files beside it (b by address).
    for (const n of [a, b]) {
      await n.killWithInstances();
      const forgot = await run(env, ["node", "forget", n.nodeId, "--reason", "gone for good", "--local"]);
      expect(forgot.code, forgot.stderr).toBe(0);
    }
    const removedA = await run(env, ["nodes", "remove", a.nodeId, "--reason", "sold the Pi", "--json"]);
    expect([removedA.code, removedA.doc], removedA.stderr).toEqual([
      0,
      { node: a.nodeId, addr: a.address, removed: true },
    ]);
    const removedB = await run(env, ["nodes", "remove", b.address, "--local"]);
    expect([removedB.code, removedB.stdout.trim()], removedB.stderr).toEqual([
      0,
      `node ${b.nodeId} removed: ${b.address} is no longer listed (\`berth nodes add ${b.address}\` would meet it as a new node)`,
    ]);
    expect(await listed(false), "the server lists neither").toEqual([]);
    expect(await listed(true), "the files list neither").toEqual([]);
    const again = await run(env, ["nodes", "remove", a.nodeId]);
    expect([again.code, again.stderr]).toEqual([1, expect.stringContaining(`no known node ${a.nodeId}`)]);

    const tail = await run(env, ["audit", "tail", "-n", "1000", "--json", "--local"]);
    const removes = (tail.doc.events as JsonObject[])
      .filter((e) => e.kind === "peer.remove")
      .map((e) => e.payload as JsonObject);
    expect(removes.map((p) => [p.node, p.addr, p.reason])).toEqual([
      [a.nodeId, a.address, "sold the Pi"],
      [b.nodeId, b.address, "no longer part of the mesh"],
    ]);
    expect(removes[0]?.operator).toMatchObject({ via: "api (berth nodes remove)" });
    expect((await run(env, ["audit", "verify", "--json", "--local"])).code).toBe(0);
  }, 240_000);
});
