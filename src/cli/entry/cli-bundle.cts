/**
 * Where every `berth` verb but `node serve` comes from (issue 19: start-up): the package build's bundle of the CLI
 * (scripts/bundle-cli: dist/src/cli-bundle/berth.cjs, CommonJS chunks) when it is fresh (fresh-bundle.cts says when), else the same
 * code unbundled. CommonJS, so that berth.cjs can ask before any ES module loads.
 */
import { join } from "node:path";
import { bundleIsFresh } from "./fresh-bundle.cjs";

/** The bundle's entry when it is fresh, else null (a build without the package step: npm run build:test, tsc). */
export function freshCliBundle(): string | null {
  const bundle = join(__dirname, "..", "..", "cli-bundle", "berth.cjs");
  return bundleIsFresh(bundle, __dirname) ? bundle : null;
}

/** Runs the command line through the bundle (it exports what berth-cli.ts does), without Node's ES module loader. */
export function runFromCliBundle(bundle: string, argv: readonly string[]): Promise<void> {
  return (require(bundle) as typeof import("./berth-cli.js")).runBerth(argv);
}
