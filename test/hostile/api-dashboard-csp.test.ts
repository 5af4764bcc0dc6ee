/**
 * issue 12: the dashboard runs under its strict Content-Security-Policy (scripts, styles and connections from its
 * own origin, nothing inline) — checked in Debian's chromium against a real listener serving the built dashboard:
 * the page renders, talks to the API, and the browser reports no policy violation. And no page can frame it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { builtDashboard } from "../dashboard/built-web.js";
import { type Browser, launchChromium, requireChromium, WAIT } from "../dashboard/chromium.js";
import { notConfigured } from "../server/support.js";

let browser: Browser | null = null;
let server: RunningServer | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await browser?.close();
  browser = null;
  await server?.close();
  server = null;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the dashboard under its Content-Security-Policy", { timeout: 120_000 }, () => {
  it("renders and reads the API with no policy violation, and refuses to be framed", async (ctx) => {
    requireChromium((reason) => ctx.skip(reason));
    const dir = mkdtempSync(join(tmpdir(), "berth-csp-"));
    dirs.push(dir);
    server = await startServer({
      dataDir: dir,
      port: 0,
      logLevel: "silent",
      kubernetes: notConfigured,
      webRoot: builtDashboard(),
    });
    browser = await launchChromium();
    const page = await browser.context.newPage();
    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    await page.exposeFunction("__cspViolation", (text: string) => violations.push(text));
    // Page code as text: this tsconfig has no DOM types.
    await page.addInitScript(
      'document.addEventListener("securitypolicyviolation", (e) => window.__cspViolation(e.violatedDirective + " " + e.blockedURI))',
    );
    const api: number[] = [];
    page.on("response", (r) => {
      if (r.url().includes("/api/v1/")) api.push(r.status());
    });
    await page.goto(server.dashboardUrl);
    await expect.poll(() => page.url(), WAIT).not.toContain("token=");
    await expect
      .poll(() => page.evaluate<number>('document.querySelectorAll("#app *").length'), WAIT)
      .toBeGreaterThan(5);
    await expect.poll(() => api.filter((s) => s === 200).length, WAIT).toBeGreaterThan(0);
    expect(violations).toEqual([]);
    // The listener is live: an inline script (what an injection would add) is refused and reported.
    await page.addScriptTag({ content: "window.__inline = true" }).catch(() => undefined);
    await expect.poll(() => violations.length, WAIT).toBeGreaterThan(0);
    expect(await page.evaluate<boolean>("window.__inline === true")).toBe(false);

    // A page elsewhere that frames the dashboard gets nothing rendered in the frame.
    const framer = await browser.context.newPage();
    await framer.setContent(`<iframe id="f" src="${server.url}/"></iframe>`, { waitUntil: "load" });
    const child = framer.frames().find((f) => f !== framer.mainFrame());
    expect(child?.url() ?? "", "the frame shows the browser's error page").not.toContain(server.url);
    const rendered =
      child === undefined
        ? 0
        : await child.evaluate<number>('document.querySelectorAll("#app *").length').catch(() => 0);
    expect(rendered, "nothing of the dashboard renders inside a frame").toBe(0);
  });
});
