/**
 * `berth node cordon|uncordon|forget|drain NODE --reason TEXT` as a user runs them (issue 16), real processes: a node
 * daemon, the CLI on a controller home, then the same verbs through the `berth serve` running on that home (judged by
 * its chained `api.call`s). Judged from outside: exit statuses, the JSON documents, the explain, the chain.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { cleanup, MAIN, NodeProcess, requireBuild, tempDir } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { killAll, runNode, spawnNode } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

type Answer = { code: number | null; doc: JsonObject; stdout: string; stderr: string };

async function run(home: string, args: readonly string[]): Promise<Answer> {
  const r = await runNode([MAIN, ...args], {
    env: { BERTH_HOME: home, KUBECONFIG: "/nonexistent/berth-node-admin-test" },
  });
  let doc: JsonObject = {};
  try {
    doc = JSON.parse(r.stdout) as JsonObject;
  } catch {
    // a text answer
  }
  return { code: r.code, doc, stdout: r.stdout, stderr: r.stderr };
}

const apiRoutes = async (home: string): Promise<string[]> => {
  const tail = await run(home, ["audit", "tail", "-n", "1000", "--json", "--data-dir", home]);
  return (tail.doc.events as JsonObject[])
    .filter((e) => e.kind === "api.call" && (e.payload as JsonObject).phase === "request")
    .map((e) => String((e.payload as JsonObject).route));
};

describe("berth node cordon, uncordon, forget and drain", () => {
  it("are chained with who and why on the home's files and through its berth serve, and say plainly what they did", async () => {
    requireBuild();
    const home = tempDir("berth-node-admin-");
    const keys = await run(home, ["keys", "new", "--json"]);
    const signer = generateSigningKey();
    const pkg = join(home, "pkg");
    probePackage(pkg, signer, { script: "#!/bin/sh\nexec sleep 300\n" });
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
    const node = await NodeProcess.create({
      controllers: [String(keys.doc.public_key)],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await run(home, ["nodes", "add", node.address, "--tier", "paired"])).code).toBe(0);

    // Without --reason: a usage error naming the flag; an unknown node: exit 1, nothing chained.
    const noReason = await run(home, ["node", "cordon", node.nodeId, "--json"]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr + noReason.stdout).toContain("--reason");
    const blank = await run(home, ["node", "forget", node.nodeId, "--reason", "  ", "--json"]);
    expect([blank.code, String(blank.doc.error)]).toEqual([2, expect.stringContaining("--reason")]);
    const unknown = await run(home, ["node", "drain", "nowhere", "--reason", "x", "--json"]);
    expect([unknown.code, String(unknown.doc.error)]).toEqual([1, expect.stringContaining("no known node nowhere")]);

    // cordon on the files: the explain says why the node is not eligible.
    const cordon = await run(home, ["node", "cordon", node.nodeId, "--reason", "disk check", "--json", "--local"]);
    expect([cordon.code, cordon.doc], cordon.stderr).toEqual([0, { node: node.nodeId, cordoned: true, changed: true }]);
    const again = await run(home, ["node", "cordon", node.nodeId, "--reason", "disk check", "--local"]);
    expect(again.stdout).toContain("already cordoned; nothing changed");
    const dry = await run(home, ["place", pkg, "--dry-run", "--local"]);
    expect(dry.stdout).toContain("cordoned: the operator cordoned this node");
    // The lists people read say so too: `berth nodes list` in its NOTE and its document.
    const marked = await run(home, ["nodes", "list", "--json", "--local"]);
    expect(marked.doc.targets).toEqual([
      expect.objectContaining({
        node_id: node.nodeId,
        cordoned: true,
        cordon_reason: "disk check",
        forgotten_ms: null,
      }),
    ]);
    expect((await run(home, ["nodes", "list", "--local"])).stdout).toContain("cordoned (disk check)");

    // Through the berth serve running on the home: uncordon, place, then forget releases the placement at once.
    const serve = spawnNode([MAIN, "serve", "--port", "0", "--json"], { env: { BERTH_HOME: home } });
    await serve.waitForOutput(/"url"/, 30_000);
    const before = (await apiRoutes(home)).length;
    const uncordon = await run(home, ["node", "uncordon", node.address, "--reason", "disk fine", "--json"]);
    expect([uncordon.code, uncordon.doc.changed], uncordon.stderr).toEqual([0, true]);
    const placed = await run(home, ["place", pkg, "--name", "scout", "--json"]);
    expect(placed.code, placed.stderr).toBe(0);
    const instance = String((placed.doc.placed as JsonObject).instance_id);
    // forget is for a node gone for good: its daemon and agent die first, so berth cannot stop the old copy yet.
    await node.killWithInstances();
    const forget = await run(home, ["node", "forget", node.nodeId, "--reason", "the Pi lost power for good", "--json"]);
    expect([forget.code, forget.doc.released], forget.stderr).toEqual([0, [{ instance_id: instance, name: "scout" }]]);
    // The placement taken off the forgotten node is listed as moved until its old copy is known gone, and the node
    // says it is forgotten, with why.
    const listed = await run(home, ["instances", "--json"]);
    expect(listed.doc.moved, listed.stderr).toEqual([
      expect.objectContaining({ instance_id: instance, name: "scout", node_id: node.nodeId, authority: "forget" }),
    ]);
    const listedText = (await run(home, ["instances"])).stdout;
    expect(listedText).toContain("moved off their node");
    expect(listedText).toMatch(new RegExp(`${instance}.*scout.*node forgotten`));
    expect((await run(home, ["nodes", "list"])).stdout).toContain("(the Pi lost power for good)");
    const text = await run(home, ["node", "uncordon", node.nodeId, "--reason", "back in service"]);
    expect(text.stdout).toContain(`node ${node.nodeId}: uncordoned`);
    const routes = (await apiRoutes(home)).slice(before);
    expect(routes.filter((r) => r.includes("/nodes/")).length, routes.join(", ")).toBeGreaterThanOrEqual(3);
    expect((await run(home, ["instances", "--json"])).doc.placements).toEqual([]);

    // The chain names who and why for each.
    serve.child.kill("SIGTERM");
    await serve.exited();
    const tail = await run(home, ["audit", "tail", "-n", "1000", "--json", "--data-dir", home]);
    const events = (tail.doc.events as JsonObject[]).map((e) => [e.kind, (e.payload as JsonObject).reason]);
    expect(events).toEqual(
      expect.arrayContaining([
        ["node.cordon", "disk check"],
        ["node.uncordon", "disk fine"],
        ["node.forget", "the Pi lost power for good"],
      ]),
    );
    const forgetEvent = (tail.doc.events as JsonObject[]).find((e) => e.kind === "node.forget")?.payload as JsonObject;
    expect(forgetEvent.operator).toMatchObject({
      via: "api (berth node forget)",
      token: expect.stringMatching(/^token:/),
      claimed: expect.objectContaining({ via: "berth node forget" }),
    });
    expect((await run(home, ["audit", "verify", "--json", "--data-dir", home])).code).toBe(0);
  }, 180_000);
});
