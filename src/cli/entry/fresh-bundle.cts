/**
 * Whether a bundle the package build made (the daemon's, the CLI's) may run in place of the unbundled files it was made
 * from. In a checkout: when it is at least as new as main.js, since a later `tsc` alone rewrites every file it emits
 * and leaves an older bundle behind, which must not run in place of what was just built. In an installed package
 * (under node_modules): whenever it is there, since npm's install writes every file at the time it extracts it, in
 * the tarball's order, which puts both bundles before main.js; and nothing rebuilds an installed package. CommonJS,
 * so that berth.cjs can ask before any ES module loads.
 */
import { statSync } from "node:fs";
import { join, sep } from "node:path";

/** `cliDir`: dist/src/cli/entry, where main.js is (its real path: Node resolves the symlinks of the bin and of a link). */
export function bundleIsFresh(bundle: string, cliDir: string): boolean {
  try {
    const built = statSync(bundle).mtimeMs;
    return cliDir.split(sep).includes("node_modules") || built >= statSync(join(cliDir, "main.js")).mtimeMs;
  } catch {
    return false;
  }
}
