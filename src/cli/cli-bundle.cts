/**
 * Where every `berth` verb but `node serve` comes from (issue 19: start-up): the package build's bundle of the CLI
 * (scripts/bundle-cli: dist/src/cli-bundle/berth.js) when it is fresh (fresh-bundle.cts says when), else the same
 * code unbundled. CommonJS, so that berth.cjs can ask before any ES module loads.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { bundleIsFresh } from "./fresh-bundle.cjs";

/** The bundle's entry when it is fresh, else null (a build without the package step: npm run build:test, tsc). */
export function freshCliBundle(): string | null {
  const bundle = join(__dirname, "..", "cli-bundle", "berth.js");
  return bundleIsFresh(bundle, __dirname) ? bundle : null;
}

/** Runs the command line through the bundle (it exports what berth-cli.ts does). */
export async function runFromCliBundle(bundle: string, argv: readonly string[]): Promise<void> {
  const cli = (await import(pathToFileURL(bundle).href)) as typeof import("./berth-cli.js");
  await cli.runBerth(argv);
}
