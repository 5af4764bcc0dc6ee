/**
 * Dashboard: time to first render of the instances view with 1,000 instances, in Debian's chromium, against a
 * baseline measured in the same run and browser: a static HTML page holding the same 1,000 rows (no script).
 *
 * Both are timed from navigation start to the moment the first row of `table[aria-label="instances"]` is in the DOM,
 * and to the frame after it (observed by a MutationObserver injected before any page script). The dashboard fetches
 * the 1,000 records from a stub API and renders one page of them (50 rows); filtering all 1,000 is timed too.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import type { Page } from "playwright-core";
import { chromiumMissing, launchChromium } from "../../test/dashboard/chromium.js";
import { repoRoot } from "../../test/support/built.js";
import { ratio } from "../support.js";
import { startStub } from "../../test/dashboard/stub-api.js";

const INSTANCES = 1000;
const RUNS = 7;

/** Records when the first instances row appears and when the next frame after it has run. */
const OBSERVE_FIRST_ROW = `
  window.__firstRow = null;
  new MutationObserver((_, observer) => {
    if (!document.querySelector('table[aria-label="instances"] tbody tr')) return;
    observer.disconnect();
    const dom = performance.now();
    requestAnimationFrame(() => setTimeout(() => { window.__firstRow = { dom, frame: performance.now() }; }, 0));
  }).observe(document, { childList: true, subtree: true });
`;

// Page-side code is written as strings: the root tsconfig is for Node and has no DOM types.
async function timeFirstRow(page: Page, url: string): Promise<{ dom: number; frame: number }> {
  await page.goto(url);
  // A function, not a string: playwright evaluates a string predicate with eval, which the dashboard's CSP forbids.
  await page.waitForFunction(() => (globalThis as { __firstRow?: unknown }).__firstRow != null, undefined, {
    timeout: 30_000,
  });
  return (await page.evaluate("window.__firstRow")) as { dom: number; frame: number };
}

/** Types a filter that matches one of the 1,000 instances and waits for the frame showing the count. */
const FILTER_ONE = `(async () => {
  const input = document.querySelector('input[type="search"]');
  if (input === null) throw new Error("no filter box");
  const start = performance.now();
  input.value = "agent-0999";
  input.dispatchEvent(new Event("input", { bubbles: true }));
  for (;;) {
    await new Promise((r) => requestAnimationFrame(r));
    if (document.body.textContent.includes("1 of 1000 instances")) return performance.now() - start;
  }
})()`;

async function timeFilter(page: Page): Promise<number> {
  return (await page.evaluate(FILTER_ONE)) as number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  const missing = chromiumMissing();
  if (missing !== null) {
    console.log(`  skipped: ${missing}`);
    return;
  }
  // scripts/bench rebuilds dist/ from scratch, which removes the dashboard build.
  if (!existsSync(`${repoRoot}dist/web/index.html`)) {
    const built = spawnSync("bash", [`${repoRoot}scripts/build-web`], { stdio: "inherit" });
    if (built.status !== 0) throw new Error("scripts/build-web failed");
  }
  const stub = await startStub(`${repoRoot}dist/web`, INSTANCES);
  const browser = await launchChromium();
  try {
    await browser.context.addInitScript(OBSERVE_FIRST_ROW);
    const page = await browser.context.newPage();
    const dashboard: Array<{ dom: number; frame: number }> = [];
    const baseline: Array<{ dom: number; frame: number }> = [];
    const filter: number[] = [];
    // One warm-up of each (chromium's first page load pays for its own start-up), then alternate.
    await timeFirstRow(page, `${stub.url}/baseline.html`);
    await timeFirstRow(page, `${stub.url}/#/instances&token=bench`);
    for (let i = 0; i < RUNS; i++) {
      baseline.push(await timeFirstRow(page, `${stub.url}/baseline.html`));
      dashboard.push(await timeFirstRow(page, `${stub.url}/#/instances&token=bench`));
      filter.push(await timeFilter(page));
    }
    const ms = (x: number) => `${x.toFixed(1).padStart(9)} ms`;
    console.log(`  ${INSTANCES} instances, median of ${RUNS} loads each`);
    console.log(
      `  ${"baseline: static 1,000-row table, first row".padEnd(48)} ${ms(median(baseline.map((b) => b.dom)))}`,
    );
    console.log(`  ${"baseline: frame after it".padEnd(48)} ${ms(median(baseline.map((b) => b.frame)))}`);
    console.log(`  ${"dashboard: instances view, first row".padEnd(48)} ${ms(median(dashboard.map((d) => d.dom)))}`);
    console.log(`  ${"dashboard: frame after it".padEnd(48)} ${ms(median(dashboard.map((d) => d.frame)))}`);
    console.log(`  ${"dashboard: filter 1,000 to 1 (frame shown)".padEnd(48)} ${ms(median(filter))}`);
    // As a rate (renders per second), so a ratio above 100% means the dashboard is faster than the static table.
    ratio(
      "dashboard first frame vs static table",
      1 / median(dashboard.map((d) => d.frame)),
      1 / median(baseline.map((b) => b.frame)),
    );
  } finally {
    await browser.close();
    stub.server.closeAllConnections();
    stub.server.close();
  }
}

await main();
