/**
 * The overview's alerts in chromium (issue 13): on a stub mesh with a dead node, an agent running twice, an unsettled
 * decision and a refused workload in the chain (stub-api.ts, `troubled`), the overview lists each as a link to the
 * view that shows it, and following one opens that detail. Served under the server's strict CSP.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { artifacts } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";
import { TROUBLE } from "./stub-api.js";
import { stubBrowserFixture } from "./stub-browser.js";

const fixture = stubBrowserFixture();
afterEach(() => fixture.close());

describe("the overview's alerts", () => {
  it("list a dead node, a duplicated agent, an unsettled decision and a denial, each linking to its detail view", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(12, "", { troubled: true });

    const alerts = page.getByRole("region", { name: "alerts" });
    await expect.poll(() => alerts.getByRole("listitem").count(), WAIT).toBe(4);
    const items = await alerts.getByRole("listitem").allTextContents();
    expect(items[0]).toMatch(/^unsettled agent-0007: decision unsettled since/);
    expect(items[1]).toMatch(/^node unreachable homelab is dead: connect ECONNREFUSED/);
    expect(items[2]).toMatch(/^duplicate agent agent-0001 has 2 live instances/);
    expect(items[3]).toMatch(/^denied #1 agent-0042 refused: the package's signer is not trusted/);
    const links = await alerts.getByRole("link").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    expect(links).toEqual([
      `#/placements/${TROUBLE.unsettledDecision}`,
      `#/nodes/${TROUBLE.deadNode}`,
      `#/agents/${TROUBLE.duplicate}`,
      `#/audit/${TROUBLE.refusedSeq}`,
    ]);
    await page.screenshot({ path: join(artifacts, "alerts-overview.png"), fullPage: true });

    await alerts.getByRole("link", { name: /homelab is dead/ }).click();
    await expect
      .poll(() => page.getByRole("region", { name: "node homelab" }).textContent(), WAIT)
      .toContain("connect ECONNREFUSED");
    await page.goBack();
    await alerts.getByRole("link", { name: /refused/ }).click();
    await expect
      .poll(() => page.getByRole("region", { name: "audit event #1" }).textContent(), WAIT)
      .toContain("the package's signer is not trusted");
  }, 60_000);
});
