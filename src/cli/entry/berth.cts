#!/usr/bin/env node
/**
 * The `berth` executable as installed (package.json `bin`). CommonJS on purpose: `berth node serve` runs the daemon's
 * CommonJS bundle from here, so a daemon that stays up for months on a 512 MB board never starts Node's ES module
 * loader (issue 19: 1.4 MiB resident; src/mesh/node/README.md). Every other verb runs from the package build's bundle
 * of the CLI, CommonJS chunks too (cli-bundle.cts; issue 19: start-up, ~50 ES modules before). Without a fresh
 * bundle, either way, it is main.js, which behaves as it always did when run directly (`node dist/src/cli/entry/main.js`).
 */
import { homedir } from "node:os";
import { freshCliBundle, runFromCliBundle } from "./cli-bundle.cjs";
import { enableCompileCache } from "./compile-cache.cjs";
import { freshDaemonBundle, serveFromBundle } from "./daemon-bundle.cjs";
import { runtimeRefusal } from "./runtime.cjs";

// Issue 36: one clear line on a Node berth does not support, before anything else loads.
const refusal = runtimeRefusal(process.versions.node, process.env);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const nodeServe = argv[0] === "node" && argv[1] === "serve";
if (!nodeServe) enableCompileCache(process.env, homedir());
const daemon = nodeServe ? freshDaemonBundle() : null;
const cli = nodeServe ? null : freshCliBundle();
// runCli (run.ts) turns every failure into its message and exit code; what escapes it is a bug, shown as one.
const started = daemon ? serveFromBundle(daemon, argv) : cli ? runFromCliBundle(cli, argv) : import("./main.js");
started.catch((error: unknown) => {
  process.stderr.write(`berth: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
