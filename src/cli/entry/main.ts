#!/usr/bin/env node
/**
 * The `berth` executable unbundled: wires verb groups together; every decision lives in core/ and every effect in a
 * shell. `node serve` runs its own tree; every other verb is berth-cli.ts, which the installed `berth` (berth.cjs)
 * runs from the package build's bundle of it when that is fresh (issue 19: start-up).
 */
const argv = process.argv.slice(2);

if (argv[0] === "node" && argv[1] === "serve") {
  await serveNode();
} else {
  await (await import("./berth-cli.js")).runBerth(argv);
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
