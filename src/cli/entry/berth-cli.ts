/**
 * Every `berth` verb but `node serve` (which main.ts and berth.cts start from its own tree): what main.ts runs, and
 * the entry of the package build's bundle of the CLI (scripts/bundle-cli: dist/src/cli-bundle/berth.cjs), which the
 * installed `berth` runs when it is fresh (cli-bundle.cts). `berth --version` answers before anything else is loaded,
 * and the command tree is built from registration files that load a verb's libraries only when that verb runs.
 */
import { berthVersion } from "../../version.js";

export async function runBerth(argv: readonly string[]): Promise<void> {
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
    process.stdout.write(`${berthVersion()}\n`);
    return;
  }
  const { runCli } = await import("../run.js");
  // Only the verb's own group is registered when the command line names one (program.ts).
  await runCli(argv, async () => (await import("../program.js")).buildProgram(argv[0]));
}
