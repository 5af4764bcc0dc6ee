/**
 * Issue 36 item 9: describe output. Every `status` verb prints aligned `Key: value` lines for people (no JSON block in
 * them), made from the document `-o json` prints, and both are the same whether the verb runs on the home's files
 * (--local) or through a real `berth serve` on it. An agent whose instance was stopped reads STATE `stopped` beside
 * LIFECYCLE `stopped` (one word for an ended instance, not `terminated`). Judged from outside: the built `berth`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { controllerHome, run, serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** A describe line: `Key: value`, `Key:` opening a block, or a `- ` item; never JSON. */
const DESCRIBE_LINE = /^ *(- )?[A-Z][A-Za-z0-9µ -]*:( +\S.*)?$|^ *- \S.*$/;

/** A running instance's cgroup figures change between two reads a moment apart: everything else must not. */
const withoutUsage = (text: string) => text.replace(/^( *)Usage:\n(\1 +.*\n?)*/gm, "");
function dropUsage(doc: unknown): unknown {
  if (Array.isArray(doc)) return doc.map(dropUsage);
  if (doc === null || typeof doc !== "object") return doc;
  return Object.fromEntries(
    Object.entries(doc)
      .filter(([k]) => k !== "usage")
      .map(([k, v]) => [k, dropUsage(v)]),
  );
}

describe("describe output of the status verbs", () => {
  it("prints Key: value lines by default and one JSON shape with -o json, the same locally and through a berth serve", async () => {
    requireBuild();
    const { home, env } = await controllerHome();
    await serve(home);
    const instance = String(
      ((await run(env, ["agents", "--json", "--local"])).doc.agents as JsonObject[])[0]?.instance,
    );
    expect(instance).toMatch(/^scout-/);

    const both = async (args: string[]) => {
      const [through, local, throughJson, localJson, throughO, localAlias] = await Promise.all([
        run(env, args),
        run(env, [...args, "--local"]),
        run(env, [...args, "-o", "json"]),
        run(env, [...args, "-o", "json", "--local"]),
        run(env, [...args, "--json"]),
        run(env, [...args, "--json", "--local"]),
      ]);
      const what = `berth ${args.join(" ")}`;
      for (const r of [through, local, throughJson, localJson, throughO, localAlias])
        expect(r.code, `${what}: ${r.stderr}`).toBe(0);
      for (const line of through.stdout.trimEnd().split("\n"))
        expect(line, `${what}: a describe line`).toMatch(DESCRIBE_LINE);
      expect(through.stdout, `${what}: no JSON in the text`).not.toMatch(/[{}"]/);
      return { what, through, local, throughJson, localJson, throughO, localAlias };
    };

    // Running: the same text and document both ways (but the cgroup figures, read a moment apart).
    for (const args of [
      ["agent", "status", "scout"],
      ["instance", "status", instance],
    ]) {
      const r = await both(args);
      expect(withoutUsage(r.through.stdout), `${r.what}: the same text both ways`).toBe(withoutUsage(r.local.stdout));
      expect(dropUsage(r.throughJson.doc), `${r.what} -o json: the same document both ways`).toEqual(
        dropUsage(r.localJson.doc),
      );
      expect(dropUsage(r.throughO.doc), `${r.what}: --json is -o json`).toEqual(dropUsage(r.throughJson.doc));
      expect(dropUsage(r.localAlias.doc)).toEqual(dropUsage(r.localJson.doc));
    }
    const agent = await both(["agent", "status", "scout"]);
    expect(agent.through.stdout).toMatch(/^Name: +scout$/m);
    expect(agent.through.stdout).toMatch(/^State: +running$/m);
    expect(agent.through.stdout).toMatch(/^Lifecycle: +running$/m);
    expect(agent.throughJson.doc).toMatchObject({
      name: "scout",
      target: "mesh",
      state: "running",
      lifecycle: "running",
      row: "started",
      instance,
    });
    const status = await both(["instance", "status", instance]);
    expect(status.through.stdout).toMatch(new RegExp(`^Instance ID: +${instance}$`, "m"));
    expect(status.through.stdout).toMatch(/^State: +running$/m);
    expect(status.throughJson.doc).toMatchObject({
      ok: true,
      kind: "ok",
      verb: "status",
      instance_id: instance,
      result: { instance_id: instance, status: { state: "running", name: "scout" } },
    });

    // Stopped: nothing moves any more, so text and document are byte for byte the same both ways.
    expect((await run(env, ["agent", "stop", "scout", "--local"])).code).toBe(0);
    for (const args of [
      ["agent", "status", "scout"],
      ["instance", "status", instance],
    ]) {
      const r = await both(args);
      expect(r.through.stdout, `${r.what}: the same text both ways`).toBe(r.local.stdout);
      expect(r.throughJson.stdout, `${r.what} -o json: the same document both ways`).toBe(r.localJson.stdout);
      expect(r.throughO.stdout, `${r.what}: --json is -o json`).toBe(r.throughJson.stdout);
    }
    const stopped = await both(["agent", "status", "scout"]);
    expect(stopped.through.stdout, "one word for an ended instance").toMatch(/^State: +stopped$/m);
    expect(stopped.through.stdout).toMatch(/^Lifecycle: +stopped$/m);
    expect(stopped.through.stdout).not.toMatch(/^State: +terminated/m);
    expect(stopped.throughJson.doc).toMatchObject({ state: "stopped", lifecycle: "stopped", row: "terminated" });
    const listed = await run(env, ["agents", "--json"]);
    expect((listed.doc.agents as JsonObject[])[0]).toMatchObject({
      name: "scout",
      state: "stopped",
      lifecycle: "stopped",
    });
  }, 300_000);
});
