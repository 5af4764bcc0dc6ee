/**
 * The instances view with 1,000 instances in chromium (the built dashboard against a stub API that serves only the
 * list): the DOM holds one page of rows, paging walks the list, and the filter finds one instance among them.
 * The full path against a real berth is dashboard.test.ts; this one is about staying usable with long lists.
 */
import { afterEach, describe, expect, it } from "vitest";
import { requireChromium, WAIT } from "./chromium.js";
import { stubBrowserFixture } from "./stub-browser.js";

const fixture = stubBrowserFixture();
afterEach(() => fixture.close());

describe("the instances view with 1,000 instances", () => {
  it("renders one page of 50 rows, pages through the list, and filters it to one", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(1000, "/instances");

    const table = page.getByRole("table", { name: "instances" });
    await table.getByRole("cell", { name: "agent-0000", exact: true }).waitFor();
    await expect(table.locator("tbody tr").count()).resolves.toBe(50);
    await expect(page.getByText("1–50 of 1000 (page 1 of 20)").count()).resolves.toBe(1);

    await page.getByRole("button", { name: "Next page" }).click();
    await table.getByRole("cell", { name: "agent-0050", exact: true }).waitFor();
    await expect(table.locator("tbody tr").count()).resolves.toBe(50);

    await page.getByRole("searchbox", { name: "Filter instances" }).fill("agent-0999");
    await expect.poll(() => table.locator("tbody tr").count(), WAIT).toBe(1);
    await expect(page.getByRole("status").filter({ hasText: "1 of 1000 instances" }).count()).resolves.toBe(1);
    await expect(page.getByRole("navigation", { name: "instances pages" }).count()).resolves.toBe(0);
  }, 60_000);
});
