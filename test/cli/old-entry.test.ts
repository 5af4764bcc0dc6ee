/**
 * Issue 32 moved the executables into src/cli/entry/; unit files and aliases written before name
 * `node dist/src/cli/main.js`, which must still start the same berth.
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { builtPath, repoRoot } from "../support/built.js";
import { runNode } from "../support/process.js";

describe("the path of the executable before issue 32", () => {
  it("dist/src/cli/main.js still answers as berth does", async () => {
    const version = (JSON.parse(readFileSync(`${repoRoot}package.json`, "utf8")) as { version: string }).version;
    const r = await runNode([builtPath("src/cli/main.js"), "--version"], { cwd: tmpdir() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(version);
  });
});
