#!/usr/bin/env node
/**
 * The `berth` executable as installed (package.json `bin`). CommonJS on purpose: `berth node serve` runs the daemon's
 * CommonJS bundle from here, so a daemon that stays up for months on a 512 MB board never starts Node's ES module
 * loader (issue 19: 1.4 MiB resident; src/mesh/node/README.md). Everything else, and `node serve` without a fresh
 * bundle, is main.js, which behaves as it always did when run directly (`node dist/src/cli/main.js …`).
 */
import { freshDaemonBundle, serveFromBundle } from "./daemon-bundle.cjs";

const argv = process.argv.slice(2);
const bundle = argv[0] === "node" && argv[1] === "serve" ? freshDaemonBundle() : null;
// runCli (run.ts) turns every failure into its message and exit code; what escapes it is a bug, shown as one.
const started = bundle ? serveFromBundle(bundle, argv) : import("./main.js");
started.catch((error: unknown) => {
  process.stderr.write(`berth: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
