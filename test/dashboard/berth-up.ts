/**
 * What the browser tests against a real berth share: a temp home, `berth up` in it (three node daemons, the sample
 * agents, the API and the dashboard URL it prints; no Kubernetes), Debian's chromium, screenshots into
 * test-artifacts/dashboard/, and a cleanup that leaves no process and no folder behind.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { berthBin, repoRoot } from "../support/built.js";
import { killAll, type Spawned, spawnNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";
import { builtDashboard } from "./built-web.js";
import { type Browser, launchChromium } from "./chromium.js";

export const artifacts = join(repoRoot, "test-artifacts", "dashboard");

const DASHBOARD_LINE = /dashboard: (http:\/\/\S+#token=\S+)/;

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

export interface BerthUp {
  readonly home: string;
  readonly up: Spawned;
  /** The dashboard URL berth up printed, token included. */
  readonly url: string;
  readonly browser: Browser;
}

/** One per test file: `start()` in the test, `stop()` in afterEach, `remove()` in afterAll. */
export function berthUpFixture(prefix: string) {
  const home = mkdtempSync(join(tmpdir(), prefix));
  // No kubeconfig: the Kubernetes view must say so plainly.
  const env = { BERTH_HOME: home, KUBECONFIG: join(home, "no-kubeconfig") };
  let browser: Browser | null = null;
  return {
    home,
    async start(): Promise<BerthUp> {
      builtDashboard();
      mkdirSync(artifacts, { recursive: true });
      // A free port: other berths (or tests) may hold the usual one; no Kubernetes probe, these tests are about the mesh.
      const up = spawnNode([berthBin(), "up", "--data-dir", home, "--port", "0", "--no-kubernetes"], { env });
      await up.waitForOutput("ready; press Ctrl-C", 120_000);
      const url = DASHBOARD_LINE.exec(up.output())?.[1];
      if (url === undefined) throw new Error(`berth up printed no dashboard URL:\n${up.output()}`);
      browser = await launchChromium();
      return { home, up, url, browser };
    },
    async stop(): Promise<void> {
      await browser?.close();
      browser = null;
      killAll();
    },
    remove(): void {
      for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
      rmSync(home, { recursive: true, force: true });
    },
  };
}
