/**
 * Labels on the nodes list (issue 36): `berth nodes list -l SELECTOR` and `GET /nodes?labelSelector=` select on the
 * labels each node declares in node.json (carried in its signed facts), with the agents list's selector syntax, the same
 * answer through a `berth serve`, and the same refusal of a bad selector both ways.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { clientHome, run, serve } from "../cli/remote-support.js";
import { cleanup, NodeProcess, requireBuild, tempDir } from "../mesh/harness.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

describe("labels on nodes", { timeout: 120_000 }, () => {
  it("berth nodes list -l selects by the nodes' labels, locally and through a server, and refuses a bad selector the same way", async () => {
    requireBuild();
    const home = tempDir("berth-node-labels-");
    const env = { BERTH_HOME: home };
    const key = String((await run(env, ["keys", "new", "--json"])).doc.public_key);
    const gpu = await NodeProcess.create({
      controllers: [key],
      signers: [],
      permits: [],
      config: { labels: { zone: "lab", gpu: "yes" } },
    });
    const plain = await NodeProcess.create({
      controllers: [key],
      signers: [],
      permits: [],
      config: { labels: { zone: "attic" } },
    });
    for (const n of [gpu, plain])
      expect((await run(env, ["nodes", "add", n.address, "--tier", "paired"])).code).toBe(0);
    // No --refresh: the labels come with the nodes' signed facts, and -l describes the nodes itself.
    const ids = (doc: JsonObject) => ((doc.targets ?? doc.nodes) as JsonObject[]).map((t) => t.node_id).sort();
    const cases: Array<[string, string[]]> = [
      ["gpu=yes", [gpu.nodeId]],
      ["zone!=lab", [plain.nodeId]],
      ["zone", [gpu.nodeId, plain.nodeId].sort()],
      ["!gpu", [plain.nodeId]],
      ["zone=lab,gpu", [gpu.nodeId]],
    ];
    for (const [selector, expected] of cases) {
      const r = await run(env, ["nodes", "list", "-l", selector, "--json"]);
      expect([r.code, ids(r.doc)], `${selector}: ${r.stderr}`).toEqual([0, expected]);
    }
    const badLocal = await run(env, ["nodes", "list", "-l", "zone=a b", "--json"]);
    expect(badLocal.code).toBe(2);

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
    for (const [selector, expected] of cases) {
      const r = await run(client.env, ["nodes", "list", "-l", selector, "--json"]);
      expect([r.code, ids(r.doc)], `${selector} through the server: ${r.stderr}`).toEqual([0, expected]);
    }
    const badRemote = await run(client.env, ["nodes", "list", "-l", "zone=a b", "--json"]);
    expect([badRemote.code, badRemote.doc.error]).toEqual([badLocal.code, badLocal.doc.error]);
    // The API refuses it by itself too, naming the query parameter.
    const token = (await import("node:fs")).readFileSync(client.tokenFile, "utf8").trim();
    const api = await fetch(`${url}/api/v1/nodes?labelSelector=${encodeURIComponent("zone=a b")}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(api.status).toBe(400);
    expect(JSON.stringify(await api.json())).toContain("query.labelSelector");
  });
});
