/**
 * Debian's chromium (never a downloaded browser) driven by playwright-core, for the dashboard's browser test and its
 * benchmark: the flags of the brief, and a fresh profile folder per launch, removed when the browser closes.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing (install Debian's chromium: apt-get install chromium)`;
}

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Playwright takes the profile folder as launchPersistentContext's argument (it refuses --user-data-dir in args). */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "berth-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Without chromium a browser test cannot run: with CI=true that fails it, elsewhere it skips with the reason. */
export function requireChromium(skip: (reason: string) => void): void {
  const missing = chromiumMissing();
  if (missing === null) return;
  if (process.env.CI === "true") throw new Error(`the dashboard's browser test cannot run: ${missing}`);
  skip(missing);
}

/** How long a browser test waits for a condition on the page: the same deadline as playwright's own actions. */
export const WAIT = { timeout: 30_000 } as const;
