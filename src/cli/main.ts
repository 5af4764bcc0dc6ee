#!/usr/bin/env node
/**
 * The `berth` executable: wires verb groups together; every decision lives in core/ and every effect in a shell.
 *
 * Start-up is kept near `node -e 0` (issue 19): `berth --version` answers before anything else is loaded, and the
 * command tree is built from registration files that load a verb's libraries only when that verb runs.
 */
import { statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
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
 * other verb (issue 19: memory). From the package build's bundle of it when that is at least as new as this file (a
 * later `tsc` alone leaves an older bundle behind, which must not run in place of what was just built).
 */
async function serveNode(): Promise<void> {
  const bundle = fileURLToPath(new URL("../node-daemon.bundle.js", import.meta.url));
  let fresh = false;
  try {
    fresh = statSync(bundle).mtimeMs >= statSync(fileURLToPath(import.meta.url)).mtimeMs;
  } catch {
    // no bundle: a build without the package step (npm run build:test, tsc) runs the same code unbundled
  }
  const { runNodeServe } = (await import(fresh ? pathToFileURL(bundle).href : "./node-serve-main.js")) as typeof import("./node-serve-main.js");
  await runNodeServe(argv);
}

async function run(): Promise<void> {
  const { runCli } = await import("./run.js");
  await runCli(argv, async () => (await import("./program.js")).buildProgram());
}
