/**
 * First paint after a controller restart (issue 13): the controller knows its nodes' addresses but has described
 * none, so until someone asks `GET /nodes?refresh=true` every instance reads state "unknown" on node "unnamed". The
 * dashboard asks for that describe when it opens and paints the instances and the overview only after it, so the
 * first rows a person sees carry the real states and names. A stub API plays the restarted controller
 * (stub-api.ts, `restarted`), and serves the dashboard under the server's strict Content-Security-Policy: the test
 * also fails on any CSP violation (an inline script or style the policy blocks).
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { artifacts } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";
import { stubBrowserFixture } from "./stub-browser.js";

const fixture = stubBrowserFixture();
afterEach(() => fixture.close());

/**
 * Injected before any page script: keeps the text of the first instances rows and of the first overview node rows
 * the page ever put in the DOM, and every CSP violation the page reports. (Page-side code is a string: the root
 * tsconfig has no DOM types.)
 */
const RECORD_FIRST_PAINT = `
  window.__firstPaint = { instances: null, nodes: null, violations: [] };
  document.addEventListener("securitypolicyviolation", (e) => window.__firstPaint.violations.push(e.violatedDirective + " " + e.blockedURI));
  new MutationObserver(() => {
    const p = window.__firstPaint;
    const rows = (label) => Array.from(document.querySelectorAll('table[aria-label="' + label + '"] tbody tr')).map((r) => r.textContent);
    if (p.instances === null && rows("instances").length > 0) p.instances = rows("instances");
    if (p.nodes === null && rows("nodes at a glance").length > 0) p.nodes = rows("nodes at a glance");
  }).observe(document, { childList: true, subtree: true, characterData: true });
`;

interface FirstPaint {
  instances: string[] | null;
  nodes: string[] | null;
  violations: string[];
}

describe("the dashboard's first paint after a controller restart", () => {
  it("shows every instance's real state and node name in its first rows, never unknown or unnamed", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(30, "/instances", { restarted: true }, RECORD_FIRST_PAINT);

    await page
      .getByRole("table", { name: "instances" })
      .getByRole("cell", { name: "agent-0001", exact: true })
      .waitFor(WAIT);
    const first = (await page.evaluate("window.__firstPaint")) as FirstPaint;
    expect(first.instances?.length).toBe(30);
    for (const row of first.instances ?? []) {
      expect(row).not.toMatch(/unknown|unnamed/);
      expect(row).toMatch(/running|stopped/);
      expect(row).toMatch(/pi-kitchen|pi-garage|homelab/);
    }
    await page.screenshot({ path: join(artifacts, "first-paint-instances.png"), fullPage: false });
    expect(first.violations).toEqual([]);
  }, 60_000);

  it("opens the overview on named, alive nodes with their memory in GiB, under the strict CSP", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const page = await fixture.open(30, "", { restarted: true }, RECORD_FIRST_PAINT);

    await page.getByRole("table", { name: "nodes at a glance" }).getByRole("link", { name: "pi-garage" }).waitFor(WAIT);
    const first = (await page.evaluate("window.__firstPaint")) as FirstPaint;
    expect(first.nodes).toHaveLength(3);
    for (const row of first.nodes ?? [])
      expect(row).toMatch(/^(pi-kitchen|pi-garage|homelab)alive1\.97 GiB of 7\.88 GiB used \(25 %\)0\.25 on 4 CPUs/);
    await page.screenshot({ path: join(artifacts, "first-paint-overview.png"), fullPage: false });
    expect(first.violations).toEqual([]);
  }, 60_000);
});
