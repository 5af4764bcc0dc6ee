/**
 * The top view in chromium (issue 36, `berth top` on the dashboard): on a stub mesh whose running instances report
 * cgroup usage (stub-api.ts: CPU counters growing at 10, 20 and 30 % of a core), the Top tab lists every running agent
 * with its memory at once and its CPU share from the second reading on, and no stopped one.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { artifacts } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";
import { stubBrowserFixture } from "./stub-browser.js";

const fixture = stubBrowserFixture();
afterEach(() => fixture.close());

describe("the dashboard's top view", () => {
  it("lists each running agent's CPU share and memory from its cgroup, read again every two seconds", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    // Six instances: agent-0000 is stopped (stub-api: every tenth), the other five run.
    const page = await fixture.open(6, "/top");
    const table = page.getByRole("table", { name: "top" });
    await expect.poll(() => table.getByRole("row").count(), WAIT).toBe(6);
    expect(await table.textContent()).not.toContain("agent-0000");
    // agent-0002 runs at 30 % of a core (n % 3 = 2) with 3 MiB: its CPU shows once two readings are in.
    const row = table.getByRole("row").filter({ hasText: "agent-0002" });
    await expect.poll(() => row.textContent(), WAIT).toMatch(/\b(29|30|31)\.\d%/);
    expect(await row.textContent()).toContain("3.0Mi");
    expect(await table.getByRole("row").nth(1).textContent(), "busiest first").toMatch(/agent-000[25]/);
    await page.screenshot({ path: join(artifacts, "top.png"), fullPage: true });
  }, 60_000);
});
