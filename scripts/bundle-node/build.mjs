#!/usr/bin/env node
// Builds dist/src/node-daemon.bundle.cjs: `berth node serve` (src/cli/entry/node-serve-main.ts) and everything it imports as
// one file, which `berth` (dist/src/cli/entry/berth.cjs) and dist/src/cli/entry/main.js start for `berth node serve` (issue 19: the
// daemon's resident memory; the figures are in src/mesh/node/README.md). CommonJS, so that a daemon started by the
// CommonJS `berth` never starts Node's ES module loader (1.4 MiB resident for its life, README). One module instead of
// ~640 (each kept by V8 with its source), and zod cut
// to what the daemon's schemas use: berth writes `import { z } from "zod"`, a namespace esbuild cannot shake, so this
// build reads it as `import * as z from "zod"` (the same namespace, which it can). better-sqlite3 stays a package
// import: the bundle sits in the package beside dist/src, whose dependencies are installed with it (the provider
// bundle embeds the addon because it must work as a lone copy). It sits in dist/src so that what its code finds
// beside itself (package.json for the version) is where the unbundled dist/src/version.js finds it.
// Usage: node scripts/bundle-node/build.mjs (after `npm run build`; scripts/prepack and scripts/bench run it).
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const outfile = join(root, "dist", "src", "node-daemon.bundle.cjs");

const zodNamespace = {
  name: "berth-zod-namespace",
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      return { contents: text.replace(/^import \{ z \} from "zod";$/m, 'import * as z from "zod";'), loader: "ts" };
    });
  },
};

await build({
  absWorkingDir: root,
  entryPoints: [join(root, "src", "cli", "entry", "node-serve-main.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  // Whitespace and syntax only: names stay, so stack traces and error names read as in the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  external: ["better-sqlite3"],
  plugins: [zodNamespace],
  // import.meta.url has no CommonJS form of its own: src/version.ts finds package.json from it, beside this file.
  define: { "import.meta.url": "__berthModuleUrl" },
  banner: { js: 'const __berthModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  logLevel: "warning",
});
console.log(`bundled ${outfile}`);
