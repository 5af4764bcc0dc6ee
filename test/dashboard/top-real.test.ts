/**
 * The top view in chromium on real data (issue 36): `berth up` (three node daemons, the two sample agents), and the Top
 * tab lists each running sample agent with its memory and, from the second reading on, its CPU share: figures its node
 * read from the agent's cgroup, through the API, not a stub (top.test.ts covers the view's arithmetic on a stub mesh).
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { berthUpFixture, shot } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";

const fixture = berthUpFixture("berth-top-real-");
afterEach(() => fixture.stop());
afterAll(() => fixture.remove());

describe("the dashboard's top view against berth up", () => {
  it("shows each sample agent's CPU share and memory from its cgroup", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const { url, browser } = await fixture.start();
    const page = await browser.context.newPage();
    await page.goto(url);
    await page.getByRole("tab", { name: "Top" }).click();
    const table = page.getByRole("table", { name: "top" });
    for (const agent of ["heartbeat", "scout"]) {
      const row = table.getByRole("row").filter({ has: page.getByRole("cell", { name: agent, exact: true }) });
      // CPU needs two readings two seconds apart; memory is there from the first.
      await expect.poll(() => row.textContent(), WAIT).toMatch(/\d+\.\d%/);
      expect(await row.textContent(), agent).toMatch(/\d+(\.\d)?(B|Ki|Mi|Gi)\s*$/);
    }
    expect(await table.getByRole("row").count(), "a header and the two agents").toBe(3);
    await shot(page, "top-real");
  }, 240_000);
});
