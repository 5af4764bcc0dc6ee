/**
 * Every verb answers programs with --json: one JSON document on one line of stdout, failures included. The tree is
 * walked (so a new verb without --json fails here), then the cheap verbs run with --json in one temp berth home,
 * answers and refusals alike.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandTree } from "../../src/cli/command-tree.js";
import { buildProgram } from "../../src/cli/program.js";
import { berth, oneDocument, removeHomes, tempHome } from "./support.js";

afterAll(removeHomes);

// The only verbs without --json, and why.
const EXEMPT: Record<string, string> = {
  "provider kubernetes": "Buzz Desktop's provider protocol: its one output line is always JSON, fixed by that protocol",
};

const leaves = () => commandTree(buildProgram()).filter((n) => n.leaf && n.path.length > 0);

describe("--json on every verb", () => {
  it("every verb in the command tree declares --json, except the exempt ones", () => {
    const missing = leaves()
      .filter((n) => !n.options.some((o) => o.flag === "--json"))
      .map((n) => n.path.join(" "));
    expect(missing.filter((verb) => !(verb in EXEMPT))).toEqual([]);
    expect(missing, "the provider protocol keeps its own JSON line").toContain("provider kubernetes");
  });

  // The cheap verbs, in one berth home: answers and refusals alike are one document.
  let home: string;
  let pub: string;
  let pkg: string;
  const json = async (
    verb: string,
    args: readonly string[],
    expected: { code: number; ok?: boolean; kind?: string },
  ) => {
    const r = await berth(home, [...verb.split(" "), ...args, "--json"]);
    expect(r.code, `${verb} ${args.join(" ")}: ${r.stderr}`).toBe(expected.code);
    const doc = oneDocument(r, verb);
    if (expected.ok !== undefined) expect(doc.ok, verb).toBe(expected.ok);
    if (expected.kind !== undefined) expect(doc.kind, `${verb}: ${String(doc.error)}`).toBe(expected.kind);
    if (expected.ok === false) expect(typeof doc.error, `${verb}: the error says what happened`).toBe("string");
    return doc;
  };

  it("keys, node and package verbs answer with one document each", async () => {
    home = tempHome();
    pkg = join(home, "pkg");
    pub = String((await json("keys new", [], { code: 0 })).public_key);
    await Promise.all([
      json("keys show", [], { code: 0 }),
      json("node init", ["--data-dir", join(home, "node"), "--controller", pub], { code: 0 }),
    ]);
    mkdirSync(pkg);
    await json("package init", [pkg, "--name", "probe"], { code: 0 });
    writeFileSync(join(pkg, "run.sh"), "#!/bin/sh\nexec sleep 30\n");
    chmodSync(join(pkg, "run.sh"), 0o755);
    await json("package build", [pkg], { code: 0 });
    await json("package sign", [pkg, "--key", join(home, "keys", "controller.key")], { code: 0 });
    await json("package verify", [pkg, "--signer", pub], { code: 0, ok: true });
  });

  it("mesh and agent verbs answer with one document, and so do their refusals", async () => {
    writeFileSync(join(home, "signers.json"), JSON.stringify([{ key: pub, name: "test" }]));
    const placed = await json("place", [pkg, "--dry-run"], { code: 0 });
    expect(placed.placed).toBeNull();
    await Promise.all([
      json("nodes list", [], { code: 0 }),
      json("instances", [], { code: 0 }),
      json("agents", [], { code: 0 }),
      json("instance", ["status", "probe-000000000000"], { code: 1, ok: false, kind: "unknown_instance" }),
      json("agent", ["status", "nobody"], { code: 1, ok: false, kind: "unknown_agent" }),
      json("deploy", [join(home, "missing.yaml")], { code: 2, ok: false }),
      json("k8s status", ["--pubkey", "not-a-key", "--namespace", "ns"], { code: 2, ok: false, kind: "usage" }),
    ]);
  });

  it("audit verbs answer with one document (export too, instead of JSON lines)", async () => {
    await json("audit verify", ["--key-file", join(home, "keys", "controller.key")], { code: 0, ok: true });
    const [tail, exported] = await Promise.all([
      json("audit tail", [], { code: 0 }),
      json("audit export", [], { code: 0 }),
    ]);
    expect((tail.events as unknown[]).length).toBeGreaterThan(0);
    expect(exported.events).toEqual(tail.events);
    expect((await json("audit checkpoint", [], { code: 0 })).checkpoint).not.toBeNull();
    expect((await json("completion", ["bash"], { code: 0 })).script).toMatch(/^# berth completion for bash/);
  });

  it("a usage error is a JSON document too, with exit status 2", async () => {
    const r = await berth(tempHome(), ["nodes", "list", "--no-such-flag", "--json"]);
    expect(r.code).toBe(2);
    expect(oneDocument(r, "usage error")).toMatchObject({
      ok: false,
      kind: "usage",
      error: expect.stringMatching(/unknown option '--no-such-flag'/),
    });
  });
});
