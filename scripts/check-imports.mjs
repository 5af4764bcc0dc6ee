#!/usr/bin/env node
// The import check of the test command (issue 32): no import circle among berth's source files, and no import that
// runs back up the house. Reads every TypeScript file of src/ (tests beside the code are left out: they may reach
// test/support and wire what they test), takes each relative import, export-from, dynamic import() and
// `typeof import()`, and fails naming the files.
//
// The floors, lowest first; a file may import its own floor and any floor below it, never one above:
//
//   1  kit/, version.ts     what every part uses and no target owns (clock, logger, tick); nothing else of berth
//   2  core/                pure decisions: no clock, no I/O (CONVENTIONS.md); imports core/ and kit/ only
//   3  keys/, store/        key files; the store engines (SQLite, PostgreSQL), lease and leadership
//   4  chain/               the audit chain's store and verifier, on the store's engines
//   5  mesh/, kubernetes/   the two targets' shells (controller, node daemon, transport; cluster client, loop)
//   6  agents/              agents on either target, over both shells
//   7  serve/, ops/, up/    the loops `berth serve` keeps running; operations over whole stores (`berth migrate`);
//                           what `berth up` starts
//   8  server/              the HTTP API
//   9  cli/                 the commands, on top: they only wire
//
// Beside the floors, two rules the folders' READMEs state: mesh/ and kubernetes/ import nothing of each other (two
// targets, one floor), and serve/mesh/ and serve/kubernetes/ neither (one folder per target; serve/index.ts wires).
//
// Usage: node scripts/check-imports.mjs [--graph]   (--graph prints the folder-to-folder imports and exits 0)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");

/** Longest prefix wins; paths are relative to src/, with "/". */
const FLOORS = [
  ["kit/", 1],
  ["version.ts", 1],
  ["core/", 2],
  ["keys/", 3],
  ["store/", 3],
  ["chain/", 4],
  ["mesh/", 5],
  ["kubernetes/", 5],
  ["agents/", 6],
  ["serve/", 7],
  ["ops/", 7],
  ["up/", 7],
  ["server/", 8],
  ["cli/", 9],
];
const APART = [
  ["mesh/", "kubernetes/"],
  ["serve/mesh/", "serve/kubernetes/"],
];

function sources(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|cts|mts|tsx)$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The text with comments blanked, strings kept (a specifier is a string; "//" inside one is not a comment). */
function withoutComments(text) {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
      out += " ";
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(["'])(\.{1,2}\/[^"']+)\1/gm;

function resolveSpecifier(from, spec) {
  const abs = resolve(dirname(from), spec);
  const candidates = [
    abs.replace(/\.js$/, ".ts"),
    abs.replace(/\.js$/, ".tsx"),
    abs.replace(/\.cjs$/, ".cts"),
    abs.replace(/\.mjs$/, ".mts"),
    abs,
    `${abs}.ts`,
    join(abs, "index.ts"),
  ];
  for (const c of candidates) {
    try {
      if (statSync(c).isFile()) return c;
    } catch {}
  }
  return null;
}

const rel = (path) => relative(src, path).split(sep).join("/");
const files = sources(src);
const edges = new Map(files.map((f) => [f, new Set()]));
for (const file of files) {
  const text = withoutComments(readFileSync(file, "utf8"));
  for (const m of text.matchAll(SPECIFIER)) {
    const target = resolveSpecifier(file, m[2]);
    if (target?.startsWith(src + sep) && edges.has(target) && target !== file) edges.get(file).add(target);
  }
}

function floorOf(path) {
  let best = null;
  for (const [prefix, floor] of FLOORS)
    if ((path === prefix || path.startsWith(prefix)) && (!best || prefix.length > best[0].length))
      best = [prefix, floor];
  return best;
}

if (process.argv.includes("--graph")) {
  const top = (p) => (p.includes("/") ? `${p.split("/")[0]}/` : p);
  const pairs = new Map();
  for (const [from, tos] of edges)
    for (const to of tos) {
      const key = `${top(rel(from))} -> ${top(rel(to))}`;
      if (top(rel(from)) !== top(rel(to))) pairs.set(key, (pairs.get(key) ?? 0) + 1);
    }
  for (const [k, n] of [...pairs].sort()) console.log(`${k}  ${n}`);
  process.exit(0);
}

const problems = [];

// Files no floor names: a new top folder must be given its floor here before anything imports it.
for (const f of files)
  if (!floorOf(rel(f))) problems.push(`${rel(f)}: no floor (add its folder to FLOORS in scripts/check-imports.mjs)`);

// Imports that run back up, and imports between folders kept apart.
for (const [from, tos] of edges) {
  const a = floorOf(rel(from));
  for (const to of tos) {
    const b = floorOf(rel(to));
    if (a && b && b[1] > a[1])
      problems.push(`${rel(from)} -> ${rel(to)}: runs back up (${a[0]} is on floor ${a[1]}, ${b[0]} on floor ${b[1]})`);
    for (const [x, y] of APART) {
      const rf = rel(from);
      const rt = rel(to);
      if ((rf.startsWith(x) && rt.startsWith(y)) || (rf.startsWith(y) && rt.startsWith(x)))
        problems.push(`${rf} -> ${rt}: ${x} and ${y} import nothing of each other`);
    }
  }
}

// Circles: strongly connected components of more than one file (Tarjan, iterative).
const index = new Map();
const low = new Map();
const onStack = new Set();
const stack = [];
let counter = 0;
const circles = [];
for (const start of files) {
  if (index.has(start)) continue;
  const work = [[start, [...edges.get(start)], 0]];
  index.set(start, counter);
  low.set(start, counter++);
  stack.push(start);
  onStack.add(start);
  while (work.length > 0) {
    const frame = work[work.length - 1];
    const [node, succ] = frame;
    if (frame[2] < succ.length) {
      const next = succ[frame[2]++];
      if (!index.has(next)) {
        index.set(next, counter);
        low.set(next, counter++);
        stack.push(next);
        onStack.add(next);
        work.push([next, [...edges.get(next)], 0]);
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), index.get(next)));
      continue;
    }
    work.pop();
    if (work.length > 0) {
      const parent = work[work.length - 1][0];
      low.set(parent, Math.min(low.get(parent), low.get(node)));
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let x;
      do {
        x = stack.pop();
        onStack.delete(x);
        component.push(x);
      } while (x !== node);
      if (component.length > 1) circles.push(component);
    }
  }
}
for (const c of circles) {
  const inside = new Set(c);
  const ties = c.flatMap((f) => [...edges.get(f)].filter((t) => inside.has(t)).map((t) => `${rel(f)} -> ${rel(t)}`));
  problems.push(`import circle of ${c.length} files: ${ties.join(", ")}`);
}

if (problems.length > 0) {
  console.error(`check-imports: ${problems.length} problem(s) in src/ (floors and rules: scripts/check-imports.mjs)`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
const arrows = [...edges.values()].reduce((n, s) => n + s.size, 0);
console.log(`check-imports: ${files.length} files, ${arrows} imports: no circle, none runs back up`);
