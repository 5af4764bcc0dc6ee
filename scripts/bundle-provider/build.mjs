#!/usr/bin/env node
// Builds dist/buzz-backend-berth.mjs: `buzz-backend-berth` as one self-contained file (issues 13 and 18.3). Everything
// it imports is bundled — the Kubernetes client, zod, the chain — and better-sqlite3's native addon is embedded
// (sqlite-shim.mjs), so a copy of this file alone answers `info`, refuses what it must, and keeps the audit chain.
// The embedded addon matches this machine's platform and Node ABI; `berth provider install` writes the copy with an
// absolute-path shebang to the node that built it. Usage: node scripts/bundle-provider/build.mjs [--out FILE]
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const outIndex = process.argv.indexOf("--out");
const outfile = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : join(root, "dist", "buzz-backend-berth.mjs");
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;

const sqliteShim = {
  name: "berth-sqlite-shim",
  setup(b) {
    b.onResolve({ filter: /^better-sqlite3$/ }, () => ({
      path: join(root, "scripts", "bundle-provider", "sqlite-shim.mjs"),
    }));
  },
};

await build({
  absWorkingDir: root,
  entryPoints: [join(root, "src", "cli", "entry", "buzz-backend.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  legalComments: "none",
  loader: { ".node": "binary" },
  define: { BERTH_BUNDLE_VERSION: JSON.stringify(version) },
  plugins: [sqliteShim],
  // The entry's own `#!/usr/bin/env node` comes first. CommonJS dependencies call require() and read __dirname: give
  // them both in the ESM output.
  banner: {
    js: [
      'import { createRequire as __berthCreateRequire } from "node:module";',
      'import { fileURLToPath as __berthFileURLToPath } from "node:url";',
      "const require = __berthCreateRequire(import.meta.url);",
      "const __filename = __berthFileURLToPath(import.meta.url);",
      'const __dirname = __filename.slice(0, __filename.lastIndexOf("/"));',
    ].join("\n"),
  },
  logLevel: "warning",
});
console.log(`bundled ${outfile}`);
