#!/usr/bin/env node
/**
 * The `berth` executable: wires verb groups together; every decision lives in core/ and every effect in a shell.
 *
 * Start-up is kept near `node -e 0` (issue 19): `berth --version` answers before anything else is loaded, and the
 * command tree is built from registration files that load a verb's libraries only when that verb runs.
 */
import { berthVersion } from "../version.js";

const argv = process.argv.slice(2);

if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  process.stdout.write(`${berthVersion()}\n`);
} else if (argv[0] === "node" && argv[1] === "serve") {
  await serveNode();
} else {
  await run();
}

/**
 * `berth node serve` runs its own tree (node-serve.ts): the daemon stays up for months on a 512 MB board and loads no
 * other verb (issue 19: memory), from the package build's bundle of it when that is fresh (daemon-bundle.cts). The
 * installed `berth` (berth.cjs) starts the bundle without this file, so without Node's ES module loader.
 */
async function serveNode(): Promise<void> {
  const { freshDaemonBundle, serveFromBundle } = await import("./daemon-bundle.cjs");
  const bundle = freshDaemonBundle();
  if (bundle) await serveFromBundle(bundle, argv);
  else await (await import("./node-serve-main.js")).runNodeServe(argv);
}

async function run(): Promise<void> {
  const { runCli } = await import("./run.js");
  await runCli(argv, async () => (await import("./program.js")).buildProgram());
}
