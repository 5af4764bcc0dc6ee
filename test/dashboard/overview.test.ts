/**
 * The dashboard people keep open (issue 13), in Debian's chromium against a real `berth up` (three node daemons, the
 * two sample agents): it opens on the overview (agents by state, nodes with humanised resources, recent events, no
 * alert on a healthy mesh); every id is a link to its detail view (agent with its timeline from the chain, instance,
 * node, decision, audit event); an agent's logs follow live; the deploy form refuses a bad spec naming its fields and
 * deploys a good one; every POST the page sends is `application/json`. Screenshots in test-artifacts/dashboard/.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { processesUnder } from "../support/processes-under.js";
import { berthUpFixture, shot } from "./berth-up.js";
import { requireChromium, WAIT } from "./chromium.js";

const fixture = berthUpFixture("berth-overview-");
afterEach(() => fixture.stop());
afterAll(() => fixture.remove());

const BAD_SPEC = `apiVersion: berth/v1
kind: Agent
metadata:
  name: Not_A_Name
spec:
  target: mesh
`;

// A relative package resolves against the server's data directory, where berth up keeps the sample packages.
const GOOD_SPEC = `apiVersion: berth/v1
kind: Agent
metadata:
  name: dash-deploy
spec:
  target: mesh
  package: up/packages/heartbeat
`;

describe("the dashboard's overview, links, live logs and deploy form against berth up", () => {
  it("opens on the overview, links every id to its detail, follows logs, and deploys from a pasted or uploaded spec", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const { up, url, browser, home } = await fixture.start();
    const page = await browser.context.newPage();
    const posts: Array<{ url: string; type: string | undefined }> = [];
    page.on("request", (r) => {
      if (r.method() === "POST") posts.push({ url: r.url(), type: r.headers()["content-type"] });
    });
    await page.goto(url);

    // The overview: both sample agents running, three nodes alive with memory in binary units, recent events.
    const agents = page.getByRole("region", { name: "agents by state" });
    await expect.poll(() => agents.textContent(), WAIT).toContain("2 running");
    const nodes = page.getByRole("table", { name: "nodes at a glance" });
    await expect.poll(() => nodes.locator("tbody tr").count(), WAIT).toBe(3);
    for (const row of await nodes.locator("tbody tr").allTextContents())
      expect(row).toMatch(/alive\d+(\.\d+)? [KMGT]iB of \d+(\.\d+)? [KMGT]iB used \(\d+ %\)/);
    await expect(page.getByRole("region", { name: "alerts" }).textContent()).resolves.toContain("Nothing needs you");
    const recent = page.getByRole("region", { name: "recent events" });
    await expect.poll(() => recent.getByRole("listitem").count(), WAIT).toBeGreaterThan(3);
    await shot(page, "overview-1-overview");

    // An agent: its detail view with the timeline the chain gives (its deploy and its placement, linked).
    await page
      .getByRole("table", { name: "agents overview" })
      .getByRole("link", { name: "heartbeat", exact: true })
      .click();
    expect(page.url()).toMatch(/#\/agents\/heartbeat$/);
    const agent = page.getByRole("region", { name: "agent heartbeat" });
    const timeline = agent.getByRole("region", { name: "timeline of heartbeat" });
    await expect.poll(() => timeline.textContent(), WAIT).toMatch(/deploy.*heartbeat: started/);
    await expect(timeline.textContent()).resolves.toMatch(/placed/);
    await expect(timeline.textContent()).resolves.toMatch(/decision/);

    // Its logs follow: a heartbeat line newer than the first answer arrives without another click.
    await agent.getByRole("checkbox", { name: "Follow logs" }).check();
    const logs = agent.getByRole("region", { name: "logs" });
    await expect.poll(() => logs.locator("pre").first().textContent(), WAIT).toMatch(/heartbeat \d+/);
    const beats = (text: string | null) =>
      Math.max(0, ...[...(text ?? "").matchAll(/heartbeat (\d+)/g)].map((m) => Number(m[1])));
    const seen = beats(await logs.locator("pre").first().textContent());
    await expect
      .poll(async () => beats(await logs.locator("pre").first().textContent()), { timeout: 60_000 })
      .toBeGreaterThan(seen);
    await expect(logs.getByRole("status").textContent()).resolves.toContain("following");
    await shot(page, "overview-2-agent-timeline");

    // The instance named in the timeline, then its node, then its decision, each from a link.
    await timeline
      .getByRole("link", { name: /^heartbeat-/ })
      .first()
      .click();
    expect(page.url()).toMatch(/#\/instances\/heartbeat-[0-9a-f]+$/);
    const instance = page.getByRole("region", { name: "instance heartbeat" });
    await expect.poll(() => instance.textContent(), WAIT).toContain("State running");
    const instanceId = decodeURIComponent(/#\/instances\/(.+)$/.exec(page.url())?.[1] ?? "");
    await shot(page, "overview-3-instance");
    await instance
      .getByRole("link", { name: /^(pi-kitchen|pi-garage|homelab) / })
      .first()
      .click();
    expect(page.url()).toMatch(/#\/nodes\/[0-9a-f]{32}$/);
    const node = page.getByRole("region", { name: /^node (pi-kitchen|pi-garage|homelab)$/ });
    await expect.poll(() => node.textContent(), WAIT).toContain(instanceId);
    await expect(node.textContent()).resolves.toMatch(/memory\d+(\.\d+)? [KMGT]iB of/);
    await shot(page, "overview-4-node");
    await page.goBack();
    await instance
      .getByRole("link", { name: /^[0-9a-f]{12}…$/ })
      .first()
      .click();
    expect(page.url()).toMatch(/#\/placements\/[0-9a-f]{64}$/);
    await page
      .getByRole("region", { name: "Explain of placement heartbeat" })
      .getByRole("table", { name: "candidates for heartbeat" })
      .waitFor(WAIT);
    await shot(page, "overview-5-decision");

    // An audit event from the overview's recent events: the whole event, its payload's objects linked.
    await page.getByRole("tab", { name: "Overview" }).click();
    const firstEvent = recent.getByRole("link", { name: /^#\d+$/ }).first();
    const seq = ((await firstEvent.textContent()) ?? "").slice(1);
    await firstEvent.click();
    expect(page.url()).toMatch(new RegExp(`#/audit/${seq}$`));
    await expect
      .poll(() => page.getByRole("region", { name: `audit event #${seq}` }).textContent(), WAIT)
      .toMatch(/from \w+ at/);

    // Deploy: an uploaded bad spec is refused with the fields the server names; a pasted good one deploys.
    await page.getByRole("tab", { name: "Deploy an agent" }).click();
    await page
      .getByLabel("Spec file")
      .setInputFiles({ name: "bad.yaml", mimeType: "text/yaml", buffer: Buffer.from(BAD_SPEC) });
    await expect.poll(() => page.getByRole("textbox", { name: "Agent spec" }).inputValue(), WAIT).toBe(BAD_SPEC);
    await page.getByRole("button", { name: "Deploy", exact: true }).click();
    await expect
      .poll(() => page.getByRole("alert").textContent(), WAIT)
      .toMatch(/Deploying failed: .*body\.metadata\.name/);
    const fields = page.getByRole("list", { name: "refused fields" });
    await expect(fields.textContent()).resolves.toContain("body.metadata.name");
    await expect(fields.textContent()).resolves.toContain("body.spec.package");
    await shot(page, "overview-6-deploy-refused");

    await page.getByRole("textbox", { name: "Agent spec" }).fill(GOOD_SPEC);
    await page.getByRole("button", { name: "Deploy", exact: true }).click();
    const outcome = page.getByLabel("deploy outcome");
    await expect.poll(() => outcome.textContent(), { timeout: 60_000 }).toMatch(/^Deployed dash-deploy: started\./);
    await shot(page, "overview-7-deployed");
    await outcome.getByRole("link", { name: "dash-deploy", exact: true }).click();
    const deployed = page.getByRole("region", { name: "agent dash-deploy" });
    await expect.poll(() => deployed.textContent(), WAIT).toContain("State running");
    // berth up stops the agents it deployed itself, not this one (issue 13 asks it to stop or list them): stop it here.
    await deployed.getByRole("button", { name: "Stop agent" }).click();
    await expect(deployed.getByRole("group", { name: "confirm Stop agent" }).textContent()).resolves.toContain(
      "Stop dash-deploy?",
    );
    await deployed.getByRole("button", { name: "Confirm: Stop agent" }).click();
    await expect.poll(() => deployed.textContent(), { timeout: 60_000 }).toMatch(/stop: ok/);

    // Issue 33 item 3: deleting the record asks first. Cancel sends nothing; a confirmed delete of an agent whose stopped
    // instance is still loaded is refused, and the page says why.
    const deletes = () => posts.filter((p) => p.url.endsWith("/agents/dash-deploy/delete")).length;
    await deployed.getByRole("button", { name: "Delete agent" }).click();
    await deployed
      .getByRole("group", { name: "confirm deleting agent dash-deploy" })
      .getByRole("button", { name: "Cancel" })
      .click();
    expect(deletes()).toBe(0);
    await deployed.getByRole("button", { name: "Delete agent" }).click();
    await deployed.getByRole("button", { name: "Confirm delete" }).click();
    await expect
      .poll(() => deployed.textContent(), { timeout: 60_000 })
      .toMatch(/delete: not done: dash-deploy was not deleted/);
    expect(deletes()).toBe(1);

    // Every POST the page sent (the deploys) was JSON, as the server's hardened body parser requires.
    expect(posts.length).toBeGreaterThanOrEqual(2);
    for (const p of posts) expect(p.type, p.url).toBe("application/json");

    up.child.kill("SIGINT");
    expect((await up.exited()).code, up.errors()).toBe(0);
    expect(processesUnder(home)).toEqual([]);
  }, 300_000);
});
