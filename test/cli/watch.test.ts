/**
 * `--watch` on a list verb, as a person leaves it running in a pipe: the first answer at once, nothing more while the
 * answer does not change, and Ctrl-C (SIGINT) ends it with status 0.
 */
import { afterAll, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { killAll, spawnNode } from "../support/process.js";
import { berth, removeHomes, tempHome } from "./support.js";

afterAll(() => {
  killAll();
  removeHomes();
});

describe("--watch", () => {
  it("prints the list once while it does not change, one document per line with --json, and stops on SIGINT with status 0", async () => {
    const home = tempHome();
    expect((await berth(home, ["keys", "new"])).code).toBe(0);
    const watch = spawnNode([berthBin(), "unsettled", "--watch", "--interval", "0.2", "--json"], {
      env: { BERTH_HOME: home, KUBECONFIG: "/nonexistent" },
    });
    await watch.waitForOutput('"unsettled"', 60_000);
    // Several intervals pass; the answer is the same, so nothing more is printed.
    const settleUntil = Date.now() + 2_000;
    while (Date.now() < settleUntil) await new Promise((r) => setTimeout(r, 100));
    watch.child.kill("SIGINT");
    const { code } = await watch.exited();
    expect(code).toBe(0);
    const lines = watch.output().split("\n").filter(Boolean);
    expect(lines).toEqual([JSON.stringify({ settled: null, unsettled: [] })]);
  }, 90_000);

  it("refuses --settle with --watch (settle once, then watch)", async () => {
    const home = tempHome();
    const r = await berth(home, ["unsettled", "--watch", "--settle"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--settle and --watch");
  });
});
