/**
 * Issue 36: the installed `berth` refuses a Node older than berth supports, in one line, before anything loads; the
 * test suite's own runs on an older machine Node are allowed by BERTH_UNSUPPORTED_NODE=allow (vitest.config.ts).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { builtPath, repoRoot } from "../support/built.js";
import { runNode } from "../support/process.js";

type Runtime = { SUPPORTED_NODE: string; runtimeRefusal: (version: string, env: NodeJS.ProcessEnv) => string | null };
const runtime = () => createRequire(import.meta.url)(builtPath("src/cli/entry/runtime.cjs")) as Runtime;

describe("the Node berth runs on", () => {
  it("has the floor package.json's engines names", () => {
    const pkg = JSON.parse(readFileSync(`${repoRoot}package.json`, "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${runtime().SUPPORTED_NODE}`);
  });

  it("refuses an older Node in one line naming the version, the floor and how to get a supported one", () => {
    const { runtimeRefusal } = runtime();
    const refusal = runtimeRefusal("20.20.2", {});
    expect(refusal).toContain("Node 20.20.2 is older than berth supports (>= 22.12.0)");
    expect(refusal).toContain("bash scripts/up");
    expect(refusal).not.toContain("\n");
    expect(runtimeRefusal("22.11.9", {})).not.toBeNull();
    for (const v of ["22.12.0", "22.13.1", "23.0.0", "24.11.1"]) expect(runtimeRefusal(v, {})).toBeNull();
    expect(runtimeRefusal("20.20.2", { BERTH_UNSUPPORTED_NODE: "allow" })).toBeNull();
  });

  it("is what the installed berth says and exits 2 with on this Node when it is older, and nothing else", async () => {
    const refusal = runtime().runtimeRefusal(process.versions.node, {});
    const run = await runNode([builtPath("src/cli/entry/berth.cjs"), "--version"], {
      env: { BERTH_UNSUPPORTED_NODE: "" },
    });
    if (refusal === null) {
      expect(run.code).toBe(0);
    } else {
      expect(run.stderr).toBe(`${refusal}\n`);
      expect(run.stdout).toBe("");
      expect(run.code).toBe(2);
    }
  });
});
