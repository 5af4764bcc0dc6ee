/**
 * Where every `berth` verb but `node serve` comes from (issue 19: start-up): the package build's bundle of the CLI
 * (scripts/bundle-cli: dist/src/cli-bundle/berth.js) when that is at least as new as main.js, else the same code
 * unbundled. A later `tsc` alone leaves an older bundle behind, which must not run in place of what was just built.
 * CommonJS, so that berth.cjs can ask before any ES module loads.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** The bundle's entry when it is fresh, else null (a build without the package step: npm run build:test, tsc). */
export function freshCliBundle(): string | null {
  const bundle = join(__dirname, "..", "cli-bundle", "berth.js");
  try {
    return statSync(bundle).mtimeMs >= statSync(join(__dirname, "main.js")).mtimeMs ? bundle : null;
  } catch {
    return null;
  }
}

/** Runs the command line through the bundle (it exports what berth-cli.ts does). */
export async function runFromCliBundle(bundle: string, argv: readonly string[]): Promise<void> {
  const cli = (await import(pathToFileURL(bundle).href)) as typeof import("./berth-cli.js");
  await cli.runBerth(argv);
}
