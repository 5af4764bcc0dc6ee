/**
 * What the stub browser tests share: the built dashboard behind a stub API (stub-api.ts) and Debian's chromium on
 * it, opened at one view with the token, and closed (browser and server) after each test.
 */
import type { Server } from "node:http";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import { artifacts } from "./berth-up.js";
import { builtDashboard } from "./built-web.js";
import { type Browser, launchChromium } from "./chromium.js";
import { type StubOptions, startStub } from "./stub-api.js";

export function stubBrowserFixture() {
  let browser: Browser | null = null;
  let server: Server | null = null;
  return {
    /** Opens `#<view>&token=stub` on a stub of `count` instances; `initScript` runs before any page script. */
    async open(count: number, view: string, options: StubOptions = {}, initScript?: string): Promise<Page> {
      mkdirSync(artifacts, { recursive: true });
      const stub = await startStub(builtDashboard(), count, options);
      server = stub.server;
      browser = await launchChromium();
      if (initScript !== undefined) await browser.context.addInitScript(initScript);
      const page = await browser.context.newPage();
      await page.goto(`${stub.url}/${view === "" ? "#" : `#${view}&`}token=stub`);
      return page;
    },
    async close(): Promise<void> {
      await browser?.close();
      browser = null;
      server?.closeAllConnections();
      server?.close();
      server = null;
    },
  };
}
