#!/usr/bin/env node
// Builds dist/src/cli-bundle/: every `berth` verb but `node serve` (src/cli/entry/berth-cli.ts and everything it imports) as
// a few CommonJS files instead of ~50 ES modules per invocation, which the installed `berth` (dist/src/cli/entry/berth.cjs)
// runs when it is fresh (fresh-bundle.cts). Issue 19: `berth place` through a server spent ~30 ms of its ~110 ms of
// CPU in Node's ES module loader (resolving, reading, linking and compiling each file) before asking the server
// anything.
//
// Split, not one file: a verb's libraries are loaded by `await import(…)` in its action (src/cli/README.md), and
// esbuild's splitting keeps each of those a chunk loaded only when that verb runs; one 1.8 MB file measured slower
// than the unbundled tree, every verb paying to parse every other verb's code. esbuild splits ES modules only, so the
// chunks are built as ES modules in memory, then each is turned into CommonJS (esbuild's transform), its imports of
// other chunks into require() and its `import("./chunk")` into a require() in a promise: a verb then runs without
// starting Node's ES module loader at all (measured: ~25 ms less CPU per `berth place` than the same chunks as ES
// modules). Dynamic imports of packages stay import(): ora is an ES module only.
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
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, transform } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const outdir = join(root, "dist", "src", "cli-bundle");

const sources = {
  name: "berth-sources",
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      if (!args.path.startsWith(join(root, "src", "/"))) return undefined;
      const unbundled = join(root, "dist", relative(root, args.path)).replace(/\.ts$/, ".js");
      const url = `new URL(${JSON.stringify(relative(outdir, unbundled))}, import.meta.url).href`;
      const text = (await readFile(args.path, "utf8"))
        .replace(/^import \{ z \} from "zod";$/m, `import * as z from "${ZOD}";`)
        .replace(/^export \{ z \} from "zod";$/m, `import * as z from "${ZOD}";\nexport { z };`)
        .replaceAll('import("zod")', `import("${ZOD}").then((z) => ({ z }))`)
        .replaceAll("import.meta.url", url);
      return { contents: text, loader: "ts" };
    });
  },
};

// zod as berth's schemas use it (issue 35). A namespace import shared between chunks is built as a whole object, so
// `import * as z from "zod"` here carried every zod export into the CLI's chunks (every locale, the JSON-schema
// converters, the compiler: ~600 KB that every verb parsed, about a third of a list's start). The sources read this
// module instead: zod's own exports, only those berth calls (types are erased; a member missing here fails the
// build, not a run). zod's English messages come with it, as with "zod" (its classic entry configures them).
const ZOD = "berth:zod";
const ZOD_MEMBERS = [
  "array",
  "boolean",
  "coerce",
  "custom",
  "discriminatedUnion",
  "enum",
  "int",
  "literal",
  "looseObject",
  "number",
  "object",
  "record",
  "strictObject",
  "string",
  "toJSONSchema",
  "union",
  "unknown",
];
const zodMembers = {
  name: "berth-zod-members",
  setup(b) {
    b.onResolve({ filter: /^berth:zod$/ }, () => ({ path: ZOD, namespace: "berth-zod" }));
    b.onLoad({ filter: /.*/, namespace: "berth-zod" }, () => ({
      contents: `export { ${ZOD_MEMBERS.join(", ")} } from "zod";`,
      resolveDir: root,
      loader: "js",
    }));
  },
};

const esm = await build({
  absWorkingDir: root,
  entryPoints: { berth: join(root, "src", "cli", "entry", "berth-cli.ts") },
  outdir,
  write: false,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  chunkNames: "[name]-[hash]",
  // Whitespace and syntax only: names stay, so stack traces and error names read as in the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  external: ["better-sqlite3", "@kubernetes/client-node", "pino", "fastify", "pg", "prom-client", "ora"],
  plugins: [sources, zodMembers],
  metafile: true,
  logLevel: "warning",
});
// A zod member the sources call but ZOD_MEMBERS leaves out is only a warning to esbuild ("will always be undefined"),
// and an undefined at run time: fail the build instead, naming it.
const undefinedImports = esm.warnings.filter((w) => /will always be undefined|no matching export/.test(w.text));
if (undefinedImports.length > 0) {
  for (const w of undefinedImports) console.error(`bundle-cli: ${w.location?.file ?? "?"}: ${w.text}`);
  console.error("bundle-cli: add the member to ZOD_MEMBERS (scripts/bundle-cli/build.mjs)");
  process.exit(1);
}

// Every chunk by the name its importers spell ("./chunk-ABC.js"), and how many imports of each kind esbuild reports,
// so that a change in how esbuild spells them fails this build instead of leaving an ES import in a CommonJS file.
const chunks = new Set(esm.outputFiles.map((f) => `./${basename(f.path)}`));
const expected = { static: 0, dynamic: 0 };
for (const output of Object.values(esm.metafile.outputs)) {
  for (const i of output.imports) {
    if (i.external) continue;
    if (i.kind === "dynamic-import") expected.dynamic++;
    else expected.static++;
  }
}
const found = { static: 0, dynamic: 0 };
const cjsName = (specifier) => specifier.replace(/\.js$/, ".cjs");
const quoted = /"(\.\/[A-Za-z0-9_-]+\.js)"/g;

// Chunks from an older build would stay beside the new ones (their names are hashes): start from nothing.
await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });
for (const file of esm.outputFiles) {
  const text = file.text
    .replace(/\bimport\("(\.\/[A-Za-z0-9_-]+\.js)"\)/g, (all, specifier) => {
      if (!chunks.has(specifier)) return all;
      found.dynamic++;
      return `Promise.resolve().then(()=>require(${JSON.stringify(cjsName(specifier))}))`;
    })
    .replace(quoted, (all, specifier) => {
      if (!chunks.has(specifier)) return all;
      found.static++;
      return JSON.stringify(cjsName(specifier));
    });
  const cjs = await transform(text, {
    loader: "js",
    format: "cjs",
    target: "node20",
    minifyWhitespace: true,
    minifySyntax: true,
    // The source rewrite above made every import.meta.url the chunk's own URL plus a relative path; __filename is that.
    define: { "import.meta.url": "__berthChunkUrl" },
    banner: text.includes("import.meta.url")
      ? 'const __berthChunkUrl=require("node:url").pathToFileURL(__filename).href;'
      : "",
    logLevel: "warning",
  });
  await writeFile(join(outdir, cjsName(basename(file.path))), cjs.code);
}
if (found.static !== expected.static || found.dynamic !== expected.dynamic) {
  throw new Error(
    `scripts/bundle-cli: esbuild reported ${JSON.stringify(expected)} imports between chunks, and ${JSON.stringify(found)} were turned into require(): the chunks' import syntax changed; look at ${outdir}`,
  );
}
console.log(`bundled ${join(outdir, "berth.cjs")} (${esm.outputFiles.length} files)`);
