// scripts/up's build tools (issue 36): a package.json and package-lock.json for esbuild and Vite alone, at exactly the
// versions (theirs and every package they need) the checkout's package-lock.json pins, written into the folder given.
// `npm ci` there installs them from npm's cache without resolving anything, so the run command can install the
// checkout's dependencies with --omit=dev (about 120 of 345 MB) and still build: the rest of the dev dependencies
// (TypeScript, Vitest, Biome, Knip, Playwright) are for the test command, which installs them itself.
// Usage: node scripts/lib/build-tools-lock.mjs DIR (from the checkout's root).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const TOOLS = ["esbuild", "vite"];
const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
const packages = lock.packages;

/** Where Node would find `name` from the package at `from` ("" is the root), in the lock's paths. */
function locate(name, from) {
  let base = from;
  for (;;) {
    const path = `${base === "" ? "" : `${base}/`}node_modules/${name}`;
    if (packages[path] !== undefined) return path;
    if (base === "") return undefined;
    const cut = base.lastIndexOf("/node_modules/");
    base = cut === -1 ? "" : base.slice(0, cut);
  }
}

const wanted = new Set();
const queue = TOOLS.map((name) => locate(name, ""));
while (queue.length > 0) {
  const path = queue.pop();
  if (path === undefined || wanted.has(path)) continue;
  wanted.add(path);
  const entry = packages[path];
  for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
    const found = locate(name, path);
    if (found !== undefined) queue.push(found);
  }
}

const dependencies = Object.fromEntries(TOOLS.map((name) => [name, packages[`node_modules/${name}`].version]));
const out = process.argv[2];
mkdirSync(out, { recursive: true });
const manifest = { name: "berth-build-tools", private: true, dependencies };
writeFileSync(join(out, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
const entries = [...wanted].sort().map((path) => {
  const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = packages[path];
  return [path, entry];
});
writeFileSync(
  join(out, "package-lock.json"),
  `${JSON.stringify({ name: manifest.name, lockfileVersion: 3, requires: true, packages: { "": { name: manifest.name, dependencies }, ...Object.fromEntries(entries) } }, null, 2)}\n`,
);
console.log(`${wanted.size} packages for ${TOOLS.join(" and ")}`);
