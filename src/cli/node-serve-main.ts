/**
 * The entry of `berth node serve` (main.ts): its own command tree, run like every berth command (run.ts). The package
 * build bundles this file and what it imports into dist/src/node-daemon.bundle.js (scripts/bundle-node), which main.ts
 * starts instead when it is there; both run this same code.
 */
import { runCli } from "./run.js";

export function runNodeServe(argv: readonly string[]): Promise<void> {
  return runCli(argv, async () => (await import("./node-serve.js")).buildNodeServeProgram());
}
