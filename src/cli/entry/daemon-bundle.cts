/**
 * Where `berth node serve` comes from (issue 19: the daemon's resident memory; figures in src/mesh/node/README.md):
 * the package build's CommonJS bundle of it (scripts/bundle-node: dist/src/node-daemon.bundle.cjs) when it is fresh
 * (fresh-bundle.cts says when), else the same code unbundled. CommonJS itself, so that berth.cjs can use it before any
 * ES module loads.
 */
import { join } from "node:path";
import { bundleIsFresh } from "./fresh-bundle.cjs";

/** The bundle's path when it is fresh, else null (a build without the package step: npm run build:test, tsc). */
export function freshDaemonBundle(): string | null {
  const bundle = join(__dirname, "..", "..", "node-daemon.bundle.cjs");
  return bundleIsFresh(bundle, __dirname) ? bundle : null;
}

/** Runs `berth node serve` from the bundle (it exports what node-serve-main.ts does). */
export function serveFromBundle(bundle: string, argv: readonly string[]): Promise<void> {
  return (require(bundle) as typeof import("./node-serve-main.js")).runNodeServe(argv);
}
