/**
 * Issue 36: a read verb in a shell whose BERTH_HOME names no home (a second terminal without the export) makes none:
 * it says where it looked and how to start one, exits 1, and leaves no directory behind.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";

const scratch = mkdtempSync(join(tmpdir(), "berth-no-home-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("a read verb on a home that does not exist", () => {
  it.each([
    ["agents"],
    ["agent", "status", "heartbeat"],
    ["agent", "logs", "heartbeat"],
    ["nodes", "list"],
    ["instances"],
    ["doctor"],
    ["audit", "tail"],
    ["audit", "verify"],
  ])("berth %s makes no home and says where it looked", async (...verb) => {
    const home = join(scratch, verb.join("-"));
    const run = await runNode([berthBin(), ...verb, "--local"], {
      env: { BERTH_HOME: home, BERTH_ADDR: "", BERTH_CONTEXT: "" },
    });
    expect(run.stderr).toContain(`no berth home at ${home} ($BERTH_HOME): nothing to read, and nothing was made`);
    expect(run.stderr).toContain("berth up");
    expect(run.code).toBe(1);
    expect(existsSync(home)).toBe(false);
  });

  it("names the home in --data-dir when the flag chose it", async () => {
    const home = join(scratch, "flagged");
    const run = await runNode([berthBin(), "agents", "--local", "--data-dir", home], {
      env: { BERTH_HOME: join(scratch, "other") },
    });
    expect(run.stderr).toContain(`no berth home at ${home} (--data-dir)`);
    expect(existsSync(home)).toBe(false);
  });
});
