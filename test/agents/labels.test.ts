/**
 * Labels and selectors on the agents list (issue 36), with a real node daemon: `metadata.labels` in a spec (Kubernetes'
 * syntax, refused with the key named), `berth agents -l SELECTOR`, and `GET /agents?labelSelector=` through a
 * `berth serve` giving the same answer and the same refusal.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { clientHome, controllerHome, run, serve } from "../cli/remote-support.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

const names = (doc: JsonObject) => (doc.agents as JsonObject[]).map((a) => a.name);

describe("labels on agents", { timeout: 120_000 }, () => {
  it("berth agents -l selects by metadata.labels, locally and through a server, and a bad label or selector is refused the same way", async () => {
    requireBuild();
    const { home, env, spec } = await controllerHome();
    writeFileSync(
      spec,
      readFileSync(spec, "utf8").replace(
        "metadata: { name: scout }",
        "metadata: { name: scout, labels: { team: ops } }",
      ),
    );
    expect((await run(env, ["deploy", spec, "--json"])).code).toBe(0);
    const ranger = join(home, "ranger.yaml");
    writeFileSync(
      ranger,
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ranger, labels: { team: research, berth.dev/tier: gold } }\nspec:\n  target: mesh\n  package: ./pkg\n",
    );
    expect((await run(env, ["deploy", ranger, "--json"])).code).toBe(0);

    const bad = join(home, "bad.yaml");
    writeFileSync(
      bad,
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: bad, labels: { -team: x } }\nspec:\n  target: mesh\n  package: ./pkg\n",
    );
    const refused = await run(env, ["deploy", bad, "--json"]);
    expect(refused.code).toBe(2);
    expect(String(refused.doc.error)).toContain("-team");

    const cases: Array<[string, string[]]> = [
      ["team=research", ["ranger"]],
      ["team!=research", ["scout"]],
      ["team", ["ranger", "scout"]],
      ["!team", []],
      ["team=research,berth.dev/tier=gold", ["ranger"]],
    ];
    const local: Record<string, unknown> = {};
    for (const [selector, expected] of cases) {
      const r = await run(env, ["agents", "-l", selector, "--json"]);
      expect([r.code, names(r.doc)], `${selector}: ${r.stderr}`).toEqual([0, expected]);
      local[selector] = names(r.doc);
    }
    const badSelector = await run(env, ["agents", "-l", "team=a b", "--json"]);

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
    for (const [selector] of cases) {
      const r = await run(client.env, ["agents", "-l", selector, "--json"]);
      expect([r.code, names(r.doc)], `${selector} through the server: ${r.stderr}`).toEqual([0, local[selector]]);
    }
    const remoteBad = await run(client.env, ["agents", "-l", "team=a b", "--json"]);
    expect([remoteBad.code, remoteBad.doc.error]).toEqual([badSelector.code, badSelector.doc.error]);
    expect(badSelector.code).toBe(2);
    const token = readFileSync(join(home, "api.token"), "utf8").trim();
    const api = await fetch(`${url}/api/v1/agents?labelSelector=${encodeURIComponent("team=research")}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(names((await api.json()) as JsonObject)).toEqual(["ranger"]);
  });
});

const instanceNames = (doc: JsonObject) => (doc.placements as JsonObject[]).map((p) => String(p.name)).sort();

describe("labels on instances", { timeout: 180_000 }, () => {
  it("berth instances -l selects the instances of agents whose labels match, the same locally and through a server; one placed by hand has none", async () => {
    requireBuild();
    const { home, env, spec } = await controllerHome();
    writeFileSync(
      spec,
      readFileSync(spec, "utf8").replace(
        "metadata: { name: scout }",
        "metadata: { name: scout, labels: { team: ops } }",
      ),
    );
    expect((await run(env, ["deploy", spec, "--json"])).code).toBe(0);
    const ranger = join(home, "ranger.yaml");
    writeFileSync(
      ranger,
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ranger, labels: { team: research } }\nspec:\n  target: mesh\n  package: ./pkg\n",
    );
    expect((await run(env, ["deploy", ranger, "--json"])).code).toBe(0);
    const byHand = await run(env, ["place", join(home, "pkg"), "--name", "byhand", "--json"]);
    expect(byHand.code, byHand.stderr).toBe(0);

    const cases: Array<[string, string[]]> = [
      ["team=research", ["ranger"]],
      ["team", ["ranger", "scout"]],
      ["!team", ["byhand"]],
      ["team!=ops", ["byhand", "ranger"]],
    ];
    const { url } = await serve(home);
    for (const [selector, expected] of cases) {
      const [through, local] = await Promise.all([
        run(env, ["instances", "-l", selector, "--json"]),
        run(env, ["instances", "-l", selector, "--json", "--local"]),
      ]);
      expect([through.code, instanceNames(through.doc)], `${selector} through the server: ${through.stderr}`).toEqual([
        0,
        expected,
      ]);
      expect([local.code, instanceNames(local.doc)], `${selector} on the files: ${local.stderr}`).toEqual([
        0,
        expected,
      ]);
    }
    expect(instanceNames((await run(env, ["instances", "--json"])).doc), "without -l: all").toEqual([
      "byhand",
      "ranger",
      "scout",
    ]);
    const [badThrough, badLocal] = await Promise.all([
      run(env, ["instances", "-l", "team=a b"]),
      run(env, ["instances", "-l", "team=a b", "--local"]),
    ]);
    expect([badThrough.code, badThrough.stderr]).toEqual([2, badLocal.stderr]);
    expect(badThrough.stderr).toMatch(/^berth: -l: /);
    const token = readFileSync(join(home, "api.token"), "utf8").trim();
    const api = await fetch(`${url}/api/v1/instances?labelSelector=${encodeURIComponent("team=ops")}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(((await api.json()) as { instances: JsonObject[] }).instances.map((p) => p.name)).toEqual(["scout"]);
  });
});
