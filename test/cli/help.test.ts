/** `berth --help`: commands grouped by topic, every command in a topic, the exit codes at the end. */
import { afterAll, describe, expect, it } from "vitest";
import { commandTree } from "../../src/cli/command-tree.js";
import { TOPICS, topicOf } from "../../src/cli/help.js";
import { buildProgram } from "../../src/cli/program.js";
import { berth, removeHomes, tempHome } from "./support.js";

afterAll(removeHomes);

/** The help text's sections: heading → the command names listed under it. */
function sections(help: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of help.split("\n")) {
    if (/^\S.*:$/.test(line)) {
      current = [];
      out.set(line, current);
    } else if (current && /^ {2}[a-z0-9]/.test(line)) {
      current.push(line.trim().split(/\s+/)[0] as string);
    } else if (line.trim() === "") {
      current = null;
    }
  }
  return out;
}

describe("berth --help", () => {
  it("groups the commands by topic, in the topics' order", async () => {
    const r = await berth(tempHome(), ["--help"]);
    expect(r.code, r.stderr).toBe(0);
    const s = sections(r.stdout);
    const headings = [...s.keys()].filter((h) => TOPICS.some((t) => t.heading === h));
    expect(headings).toEqual(TOPICS.map((t) => t.heading).filter((h) => s.has(h)));
    expect(s.get("Agents:")).toEqual(["deploy", "agents", "agent"]);
    expect(s.get("Mesh:")).toEqual([
      "nodes",
      "place",
      "instances",
      "instance",
      "top",
      "unsettled",
      "doctor",
      "package",
      "node",
      "revoke",
      "unrevoke",
    ]);
    expect(s.get("Kubernetes:")).toEqual(["k8s", "provider"]);
    expect(s.get("Audit and keys:")).toEqual(["audit", "events", "keys"]);
    expect(s.get("Run:")).toContain("up");
    expect(s.get("Shell:")).toEqual(["completion", "help"]);
    expect(s.has("Commands:"), "no command is left outside a topic").toBe(false);
  });

  it("ends with the exit codes and what --json prints on failure", async () => {
    const r = await berth(tempHome(), ["--help"]);
    expect(r.stdout).toMatch(
      /Exit status:\n {2}0 {2}done.*\n {2}1 {2}berth looked and the answer is no.*\n(.*\n)* {2}2 {2}the request could not be made/,
    );
    expect(r.stdout).toContain('{"ok":false,"error":…,"kind":…}');
  });

  it("every top-level command belongs to a topic, so a new verb cannot land in a catch-all group", () => {
    const root = commandTree(buildProgram()).find((n) => n.path.length === 0);
    const orphans = (root?.subcommands ?? []).map((s) => s.name).filter((name) => topicOf(name) === "Other commands:");
    expect(orphans).toEqual([]);
  });

  it("a subcommand's help keeps its own list, ungrouped", async () => {
    const r = await berth(tempHome(), ["audit", "--help"]);
    expect(r.code).toBe(0);
    expect(sections(r.stdout).get("Commands:")).toEqual(expect.arrayContaining(["verify", "tail", "export"]));
  });
});

describe("berth writing into a closed pipe", () => {
  it("ends quietly with status 0 when the reader has gone (berth --help | head -1)", async () => {
    const { spawn } = await import("node:child_process");
    const { berthBin } = await import("../support/built.js");
    const child = spawn(process.execPath, [berthBin(), "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    // The reader closes its end before berth has started, so berth's first write meets a closed pipe (EPIPE).
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((done) => child.on("exit", (c) => done(c)));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
