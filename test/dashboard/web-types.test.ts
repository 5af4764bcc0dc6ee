/**
 * The dashboard's API types (web/src/openapi.ts) are generated from docs/api/openapi.json by
 * `node scripts/gen-web-types.mjs`: CI fails when the committed file drifts from the document, with the command that
 * regenerates it, the way test/server/openapi.test.ts holds the document to the route schemas.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/built.js";

const SCRIPT = join(repoRoot, "scripts", "gen-web-types.mjs");

function check(from?: string) {
  const r = spawnSync(process.execPath, [SCRIPT, "--check", ...(from ? ["--from", from] : [])], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe("the dashboard's generated API types", () => {
  it("committed at web/src/openapi.ts are the ones docs/api/openapi.json generates", () => {
    const r = check();
    if (r.status !== 0) expect.fail(r.output);
  });

  it("are reported out of date, with the command that regenerates them, when the document changes", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-web-types-"));
    try {
      const doc = JSON.parse(readFileSync(join(repoRoot, "docs", "api", "openapi.json"), "utf8"));
      doc.paths["/api/v1/health"].get.summary = "a summary the committed types do not have";
      const changed = join(dir, "openapi.json");
      writeFileSync(changed, JSON.stringify(doc));
      const r = check(changed);
      expect(r.status).toBe(1);
      expect(r.output).toContain("node scripts/gen-web-types.mjs");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
