/**
 * The entry of `berth node serve` (berth.cts, main.ts): its own command tree, run like every berth command (run.ts).
 * The package build bundles this file and what it imports into dist/src/node-daemon.bundle.cjs (scripts/bundle-node),
 * which they start instead when it is there and fresh (daemon-bundle.cts); both run this same code.
 */
import { runCli } from "../run.js";

export function runNodeServe(argv: readonly string[]): Promise<void> {
  return runCli(argv, async () => (await import("../node-serve.js")).buildNodeServeProgram());
}
