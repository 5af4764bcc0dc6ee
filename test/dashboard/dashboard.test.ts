/**
 * The dashboard in a real browser against a real berth (issue 8, browser test): `berth up` in a temp home (three
 * node daemons, the sample agents, the API server and the dashboard URL it prints), Debian's chromium driven by
 * playwright-core. From the UI: place a package with a dry-run explain first, see the instance appear with its
 * explain, stop it, see the audit events arrive on the live tail without a reload, verify the chain. Screenshots go
 * to test-artifacts/dashboard/. Ctrl-C ends berth and leaves no process.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { processesUnder } from "../support/processes-under.js";
import { berthUpFixture, shot } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";

const fixture = berthUpFixture("berth-dashboard-");
afterEach(() => fixture.stop());
afterAll(() => fixture.remove());

describe("the dashboard in chromium against berth up", () => {
  it("places a package from the UI with its explain, stops it, shows every view, and receives the audit events live", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const { up, url, browser, home } = await fixture.start();
    const page = await browser.context.newPage();
    await page.goto(url);
    // The token moves to sessionStorage and leaves the address bar.
    await expect.poll(() => page.url(), WAIT).not.toContain("token=");
    // Set once: if the page reloaded, this marker would be gone.
    await page.evaluate("window.__sameDocument = true");

    // The dashboard opens on the overview (overview.test.ts); the sample agents berth up deployed are instances.
    await page.getByRole("tab", { name: "Instances" }).click();
    const instances = page.getByRole("table", { name: "instances" });
    await instances.getByRole("cell", { name: "heartbeat", exact: true }).waitFor();
    await instances.getByRole("cell", { name: "scout", exact: true }).waitFor();
    await shot(page, "1-instances");

    // Place a package: the dry run first (every candidate with its verdict), then the real thing.
    await page.getByRole("tab", { name: "Place a package" }).click();
    const packageBox = page.getByRole("combobox", { name: "Package" });
    await expect.poll(() => packageBox.locator("option", { hasText: "heartbeat" }).count(), WAIT).toBeGreaterThan(0);
    const heartbeat = await packageBox.locator("option", { hasText: "heartbeat" }).first().getAttribute("value");
    await packageBox.selectOption(heartbeat ?? "");
    // A refused request shows the server's message, which names the field.
    await page.getByRole("textbox", { name: "Name" }).fill("Not_A_Name");
    await page.getByRole("button", { name: "Explain (dry run)" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/The dry run failed: .*name/);
    await page.getByRole("textbox", { name: "Name" }).fill("dash-probe");
    await page.getByRole("button", { name: "Explain (dry run)" }).click();
    const dryRun = page.getByRole("region", { name: "Dry-run explain" });
    await dryRun.waitFor();
    await expect(
      dryRun.getByRole("table", { name: "candidates for dash-probe" }).locator("tbody tr").count(),
    ).resolves.toBe(3);
    await expect(dryRun.textContent()).resolves.toContain("nothing was sent");
    await shot(page, "2-dry-run-explain");

    await page.getByRole("button", { name: "Place", exact: true }).click();
    const placed = page.getByText(/^Placed dash-probe as instance (\S+)\.$/);
    await placed.waitFor(WAIT);
    const instanceId = /instance (\S+)\.$/.exec((await placed.textContent()) ?? "")?.[1] ?? "";
    expect(instanceId).not.toBe("");
    const report = page.getByRole("region", { name: "Placement report" });
    await expect(report.getByRole("table", { name: "attempts for dash-probe" }).textContent()).resolves.toContain(
      "placed",
    );
    await shot(page, "3-placed");

    // The instance appears in the list (updated live) with its placement's explain.
    await page.getByRole("tab", { name: "Instances" }).click();
    await page.getByRole("searchbox", { name: "Filter instances" }).fill("dash-probe");
    await page.getByRole("button", { name: "Details of dash-probe" }).click();
    const details = page.getByRole("region", { name: "instance dash-probe" });
    await details
      .getByRole("region", { name: "Explain of dash-probe" })
      .getByRole("table", { name: "candidates for dash-probe" })
      .waitFor();
    await expect(details.textContent()).resolves.toContain(instanceId);
    await shot(page, "4-instance-explain");

    // Stop it; the list learns the new state from the audit event, without a reload.
    // Issue 36: a destructive verb asks first; Cancel leaves the instance running, only the confirm stops it.
    await details.getByRole("button", { name: "Stop", exact: true }).click();
    const question = details.getByRole("group", { name: "confirm Stop" });
    await expect(question.textContent()).resolves.toContain("Stop this instance?");
    await question.getByRole("button", { name: "Cancel" }).click();
    await expect(details.getByRole("group", { name: "confirm Stop" }).count()).resolves.toBe(0);
    await expect(details.getByText("stop: ok").count()).resolves.toBe(0);
    await expect(instances.getByRole("row").filter({ hasText: instanceId }).textContent()).resolves.toMatch(/running/);
    await details.getByRole("button", { name: "Unload", exact: true }).click();
    await expect(details.getByRole("group", { name: "confirm Unload" }).textContent()).resolves.toContain(
      "Unload this instance?",
    );
    await details.getByRole("group", { name: "confirm Unload" }).getByRole("button", { name: "Cancel" }).click();
    await details.getByRole("button", { name: "Stop", exact: true }).click();
    await details.getByRole("button", { name: "Confirm: Stop" }).click();
    await details.getByText("stop: ok").waitFor(WAIT);
    await expect
      .poll(() => instances.getByRole("row").filter({ hasText: instanceId }).textContent(), WAIT)
      .not.toMatch(/running/);
    await shot(page, "5-stopped");

    // Placements: the past decision's explain; unsettled: nothing to settle; Kubernetes: not configured here.
    await page.getByRole("tab", { name: "Placements" }).click();
    await page.getByRole("button", { name: "Explain dash-probe" }).click();
    const past = page.getByRole("region", { name: "Explain of placement dash-probe" });
    await expect(past.getByRole("table", { name: "attempts for dash-probe" }).textContent()).resolves.toContain(
      "placed",
    );
    await page.getByRole("tab", { name: "Unsettled" }).click();
    await page.getByRole("button", { name: "Settle unsettled decisions" }).click();
    await page.getByText("Settled: adopted 0, settled empty 0, still unsettled 0.").waitFor(WAIT);
    await page.getByRole("tab", { name: "Kubernetes" }).click();
    await page.getByText("No Kubernetes context configured").waitFor();

    // Agents: the sample berth up deployed, running, with the logs its node captured.
    await page.getByRole("tab", { name: "Agents" }).click();
    await page.getByRole("button", { name: "Details of agent heartbeat" }).click();
    const agent = page.getByRole("region", { name: "agent heartbeat" });
    await expect(agent.textContent()).resolves.toContain("State running");
    await agent.getByRole("button", { name: "Show agent logs" }).click();
    await expect.poll(() => agent.locator("pre").first().textContent(), WAIT).toContain("heartbeat");

    // Nodes: described on opening (alive, with their names); the operator's tier is set from the list.
    await page.getByRole("tab", { name: "Nodes" }).click();
    const nodes = page.getByRole("table", { name: "nodes" });
    await expect
      .poll(() => nodes.getByRole("row").filter({ hasText: "pi-garage" }).textContent(), WAIT)
      .toContain("alive");
    await page.getByRole("combobox", { name: "Tier of pi-garage" }).selectOption("pinned");
    await expect
      .poll(() => nodes.getByRole("row").filter({ hasText: "pi-garage" }).getByRole("combobox").inputValue(), WAIT)
      .toBe("pinned");
    await shot(page, "6-nodes");

    // The audit tail received the place, the stop and the tier over the stream (it loaded its history before them).
    await page.getByRole("tab", { name: "Audit" }).click();
    const log = page.getByRole("log", { name: "audit events" });
    await expect.poll(() => log.textContent(), WAIT).toContain("peer.tier");
    await expect(log.textContent()).resolves.toContain("workload.stop");
    await expect(log.textContent()).resolves.toContain("name=dash-probe");
    await page.getByRole("button", { name: "Verify chain" }).click();
    await expect.poll(() => page.getByLabel("verify result").textContent(), WAIT).toMatch(/^Verified: \d+ events/);
    await shot(page, "7-audit");
    await expect(page.evaluate("window.__sameDocument")).resolves.toBe(true);

    // A reload keeps the view (named in the address, never the token) and the session's token.
    expect(page.url()).toMatch(/#\/audit$/);
    await page.reload();
    await expect
      .poll(() => page.getByRole("log", { name: "audit events" }).textContent(), WAIT)
      .toContain("workload.stop");

    // Ctrl-C: berth up stops the server, the agents and the nodes, and leaves no process behind.
    up.child.kill("SIGINT");
    expect((await up.exited()).code, up.errors()).toBe(0);
    expect(processesUnder(home)).toEqual([]);
  }, 300_000);
});
