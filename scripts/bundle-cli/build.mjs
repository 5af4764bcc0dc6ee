#!/usr/bin/env node
// Builds dist/src/cli-bundle/: every `berth` verb but `node serve` (src/cli/berth-cli.ts and everything it imports) as
// a few ES modules instead of ~50 per invocation, which the installed `berth` (dist/src/cli/berth.cjs) runs when it is
// at least as new as main.js (cli-bundle.cts). Issue 19: `berth place` through a server spent ~30 ms of its ~110 ms of
// CPU in Node's ES module loader (resolving, reading and compiling each file) before asking the server anything.
//
// ES modules with splitting, not one CommonJS file: a verb's libraries are loaded by `await import(…)` in its action
// (src/cli/README.md), and splitting keeps each of those a chunk loaded only when that verb runs. One 1.8 MB CommonJS
// file measured slower than the unbundled tree, every verb paying to parse every other verb's code.
//
// What stays a package import (node_modules, installed beside dist/): better-sqlite3 (a native addon),
// @kubernetes/client-node (optional: a Pi install omits it, and its absence is answered where it is imported), pino
// (its transports load modules by name at run time, from its own node_modules), fastify (starts pino and resolves its
// plugins), and what only those paths or a terminal use (pg, prom-client, ora), which the bundle would only make bigger.
// The small pure ones the common verbs load are bundled: commander, zod (read as a namespace, as scripts/bundle-node
// does, so esbuild drops what berth's schemas never use), @noble, @scure, canonicalize, yaml.
//
// Each source's `import.meta.url` is rewritten to the URL its unbundled file has in dist/src, so what berth finds beside
// its own files (package.json for the version, dist/web, samples/, berth.cjs, the provider bundle) is found from the
// bundle exactly as from the unbundled tree, whichever chunk the code lands in.
// Usage: node scripts/bundle-cli/build.mjs (after `npm run build`; scripts/prepack and scripts/bench run it).
import { readFile, rm } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const outdir = join(root, "dist", "src", "cli-bundle");

const sources = {
  name: "berth-sources",
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const unbundled = join(root, "dist", relative(root, args.path)).replace(/\.ts$/, ".js");
      const url = `new URL(${JSON.stringify(relative(outdir, unbundled))}, import.meta.url).href`;
      const text = (await readFile(args.path, "utf8")).replace(/^import \{ z \} from "zod";$/m, 'import * as z from "zod";').replaceAll("import.meta.url", url);
      return { contents: text, loader: "ts" };
    });
  },
};

// Chunks from an older build would stay beside the new ones (their names are hashes): start from nothing.
await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { berth: join(root, "src", "cli", "berth-cli.ts") },
  outdir,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // .js: the package is "type": "module", and package.json `files` ships dist/src/**/*.js.
  outExtension: { ".js": ".js" },
  chunkNames: "[name]-[hash]",
  // Whitespace and syntax only: names stay, so stack traces and error names read as in the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  external: ["better-sqlite3", "@kubernetes/client-node", "pino", "fastify", "pg", "prom-client", "ora"],
  plugins: [sources],
  // commander is CommonJS and requires Node's built-ins; in an ES module that needs a require of its own.
  banner: { js: 'import { createRequire as __berthCreateRequire } from "node:module"; const require = __berthCreateRequire(import.meta.url);' },
  logLevel: "warning",
});
console.log(`bundled ${join(outdir, "berth.js")}`);
