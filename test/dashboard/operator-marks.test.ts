/**
 * The operator's marks in chromium (issue 16): on a stub mesh where pi-garage is cordoned and homelab forgotten
 * (stub-api.ts, `marked`), the nodes view says so in its own column and in the node's details, and the instances view
 * lists the placement taken off homelab under the instances, with who moved it and what replaced it. Without marks
 * the column is empty and no moved list is drawn.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { artifacts } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";
import { MARKED } from "./stub-api.js";
import { stubBrowserFixture } from "./stub-browser.js";

const fixture = stubBrowserFixture();
afterEach(() => fixture.close());

describe("the dashboard shows the operator's marks on nodes", () => {
  it("a cordoned and a forgotten node say so, with their reasons, in the list and in the details", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(6, "/nodes", { marked: true });
    const table = page.getByRole("table", { name: "nodes" });
    await expect.poll(() => table.getByRole("row").count(), WAIT).toBe(4);
    const rowText = (name: string) => table.getByRole("row").filter({ hasText: name }).textContent();
    expect(await rowText("pi-garage")).toContain(`cordoned (${MARKED.cordonReason})`);
    expect(await rowText("homelab")).toMatch(new RegExp(`forgotten .*\\(${MARKED.forgetReason}\\)`));
    expect(await rowText("pi-kitchen")).not.toMatch(/cordoned|forgotten/);
    await page.screenshot({ path: join(artifacts, "nodes-marked.png"), fullPage: true });

    await table.getByRole("link", { name: "pi-garage" }).click();
    await expect
      .poll(() => page.getByRole("region", { name: "node pi-garage" }).textContent(), WAIT)
      .toContain(`cordoned (${MARKED.cordonReason}): nothing new is placed here`);
  }, 60_000);

  it("a placement taken off a forgotten node is listed under the instances, with who moved it and its successor", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(6, "/instances", { marked: true });
    const moved = page.getByRole("table", { name: "moved" });
    await expect.poll(() => moved.getByRole("row").count(), WAIT).toBe(2);
    const row = await moved.getByRole("row").nth(1).textContent();
    expect(row).toContain(MARKED.movedInstance);
    expect(row).toContain("homelab");
    expect(row).toContain("node forgotten");
    expect(await moved.getByRole("link", { name: MARKED.successor.slice(0, 12) }).getAttribute("href")).toBe(
      `#/placements/${MARKED.successor}`,
    );
    await page.screenshot({ path: join(artifacts, "instances-moved.png"), fullPage: true });
  }, 60_000);

  it("without marks there is no moved list and the operator column is empty", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(6, "/instances");
    await expect
      .poll(() => page.getByRole("table", { name: "instances" }).getByRole("row").count(), WAIT)
      .toBeGreaterThan(1);
    expect(await page.getByRole("table", { name: "moved" }).count()).toBe(0);
    await page.getByRole("tab", { name: "Nodes", exact: true }).click();
    const table = page.getByRole("table", { name: "nodes" });
    await expect.poll(() => table.getByRole("row").count(), WAIT).toBe(4);
    expect(await table.textContent()).not.toMatch(/cordoned|forgotten/);
  }, 60_000);
});
