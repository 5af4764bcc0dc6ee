/**
 * `bash scripts/campaign --seeds A-B [--parallel N] [--verbose]`: runs the seeds (each in a fresh world, N worlds at
 * once, default 1), then
 * prints the schedules run, the fault counts by type, the operations, and every violation with its seed, its
 * schedule and how to replay it. Exits 1 when a seed found a violation.
 */
import { type Outcome, replayHint, runSeeds } from "./run.js";

function parseSeeds(text: string): number[] {
  const seeds: number[] = [];
  for (const part of text.split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`--seeds: expected N, A-B or a comma list of them, got ${JSON.stringify(text)}`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let s = lo; s <= hi; s++) seeds.push(s);
  }
  return seeds;
}

export function summarise(outcomes: readonly Outcome[]): string {
  const faults: Record<string, number> = {};
  const ops: Record<string, number> = {};
  for (const o of outcomes) {
    for (const [k, v] of Object.entries(o.faults)) faults[k] = (faults[k] ?? 0) + v;
    for (const [k, v] of Object.entries(o.ops)) ops[k] = (ops[k] ?? 0) + v;
  }
  const bad = outcomes.filter((o) => o.violations.length > 0);
  const lines = [`schedules: ${outcomes.length}, violations: ${bad.reduce((n, o) => n + o.violations.length, 0)} in ${bad.length} seed(s)`];
  lines.push(`faults: ${Object.entries(faults).sort().map(([k, v]) => `${k}=${v}`).join(" ")}`);
  lines.push(`operations: ${Object.entries(ops).sort().map(([k, v]) => `${k}=${v}`).join(" ")}`);
  for (const o of bad) {
    lines.push(`\nseed ${o.seed} FAILED (${replayHint(o.seed)})`, o.schedule, ...o.violations.map((v) => `  ✗ ${v}`), ...o.notes.map((n) => `  note: ${n}`));
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const verbose = args.includes("--verbose");
  const at = args.indexOf("--seeds");
  const seeds = parseSeeds(at >= 0 ? (args[at + 1] ?? "") : "1-10");
  const p = args.indexOf("--parallel");
  const parallel = p >= 0 ? Number(args[p + 1]) : 1;
  if (!Number.isInteger(parallel) || parallel < 1) throw new Error("--parallel: expected a whole number of worlds at once, at least 1");
  const outcomes = await runSeeds(seeds, parallel, (o) => {
    const seed = o.seed;
    const faults = Object.entries(o.faults).map(([k, v]) => `${k}=${v}`).join(" ");
    process.stdout.write(`seed ${seed}: ${o.violations.length === 0 ? "ok" : `${o.violations.length} violation(s)`} in ${(o.ms / 1000).toFixed(1)} s; ${faults}\n`);
    if (verbose || o.violations.length > 0) process.stdout.write(`${o.schedule}\n${o.notes.map((n) => `  note: ${n}\n`).join("")}${o.violations.map((v) => `  ✗ ${v}\n`).join("")}`);
  }, { verbose });
  process.stdout.write(`\n${summarise(outcomes)}\n`);
  process.exitCode = outcomes.some((o) => o.violations.length > 0) ? 1 : 0;
}

await main();
