/**
 * `bash scripts/campaign --seeds A-B [--parallel N] [--world-size K] [--checkpoint FILE] [--verbose]`: runs the seeds (K consecutive seeds per world, N worlds at once), then prints the schedules run, the fault counts by type,
 * the operations, and every violation with its seed, its schedule and how to replay it. Exits 1 when a seed found a
 * violation.
 * - `--parallel N` above 1 runs the worlds in N worker processes (pool.ts); 1 runs in this process.
 * - `--checkpoint FILE`: every outcome is appended to FILE as one JSON line as soon as its world has verified its
 *   chains, and seeds already in FILE are not run again, so an interrupted run resumes and a partial run still
 *   reports its counts (`--report FILE` prints the summary of what FILE holds, running nothing).
 * - `--world net` (issue 37): the network world (net/): nodes in their own network namespaces, kernel faults, one to
 *   three `berth serve` (`--controllers N`, default 2 or 3 by world) on PostgreSQL (`--engine sqlite`: one home);
 *   `--parallel N` runs N worlds side by side in this process, `--world-size` defaults to 6 there.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { runNetSeeds } from "./net/run.js";
import { closeOpenNetWorlds } from "./net/world.js";
import { runSeedsInWorkers } from "./pool.js";
import { type Outcome, replayHint, runSeeds } from "./run.js";
import { closeOpenWorlds } from "./world.js";

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
  const struck = Object.entries(faults)
    .filter(([k]) => !k.endsWith(":unstruck") && !k.endsWith(":observed"))
    .reduce((n, [, v]) => n + v, 0);
  const bad = outcomes.filter((o) => o.violations.length > 0);
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  const pct = (p: number) => ((ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? 0) / 1000).toFixed(1);
  const lines = [
    `schedules: ${outcomes.length}, violations: ${bad.reduce((n, o) => n + o.violations.length, 0)} in ${bad.length} seed(s), faults struck: ${struck}`,
  ];
  lines.push(`schedule wall time (s): min ${pct(0)} median ${pct(0.5)} max ${pct(1)}`);
  const phases: Record<string, number> = {};
  for (const o of outcomes) for (const [k, v] of Object.entries(o.phases ?? {})) phases[k] = (phases[k] ?? 0) + v;
  const phaseTotal = Object.values(phases).reduce((a, b) => a + b, 0);
  if (phaseTotal > 0) {
    const shown = Object.entries(phases)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k}=${(v / 1000).toFixed(0)} (${((100 * v) / phaseTotal).toFixed(0)}%)`);
    lines.push(`wall time by phase, s summed over worlds (${(phaseTotal / 1000).toFixed(0)} s): ${shown.join(" ")}`);
  }
  lines.push(
    `faults: ${Object.entries(faults)
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  );
  lines.push(
    `operations: ${Object.entries(ops)
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  );
  for (const o of bad) {
    lines.push(
      `\nseed ${o.seed} FAILED (${replayHint(o)})`,
      o.schedule,
      ...o.violations.map((v) => `  ✗ ${v}`),
      ...o.notes.map((n) => `  note: ${n}`),
    );
  }
  return lines.join("\n");
}

function readCheckpoint(file: string): Outcome[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Outcome);
}

function option(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const report = option(args, "--report");
  if (report !== undefined) {
    const outcomes = readCheckpoint(report);
    process.stdout.write(`${summarise(outcomes)}\n`);
    process.exitCode = outcomes.some((o) => o.violations.length > 0) ? 1 : 0;
    return;
  }
  const verbose = args.includes("--verbose");
  const seeds = parseSeeds(option(args, "--seeds") ?? "1-10");
  const parallel = Number(option(args, "--parallel") ?? 1);
  if (!Number.isInteger(parallel) || parallel < 1)
    throw new Error("--parallel: expected a whole number of worlds at once, at least 1");
  const worldSize = Number(option(args, "--world-size") ?? 8);
  if (!Number.isInteger(worldSize) || worldSize < 1)
    throw new Error("--world-size: expected a whole number of schedules per world, at least 1");
  const checkpoint = option(args, "--checkpoint");
  const before = checkpoint ? readCheckpoint(checkpoint) : [];
  const done = new Set(before.map((o) => o.seed));
  const todo = seeds.filter((s) => !done.has(s));
  if (checkpoint)
    process.stdout.write(
      `checkpoint ${checkpoint}: ${before.length} outcome(s) already there, ${todo.length} seed(s) to run\n`,
    );
  const started = Date.now();
  const world = option(args, "--world") ?? "proxy";
  if (world !== "proxy" && world !== "net")
    throw new Error(
      `--world: expected proxy (the TCP-proxy world) or net (nodes in network namespaces, issue 37), got ${world}`,
    );
  const engine = option(args, "--engine") ?? "postgres";
  if (engine !== "postgres" && engine !== "sqlite")
    throw new Error(`--engine: expected postgres or sqlite, got ${engine}`);
  const controllers = option(args, "--controllers");
  if (controllers !== undefined && !["1", "2", "3"].includes(controllers))
    throw new Error("--controllers: expected 1, 2 or 3 berth serve per world");
  if (world === "net") {
    for (const signal of ["SIGINT", "SIGTERM"] as const)
      process.once(signal, () => void closeOpenNetWorlds().finally(() => process.exit(130)));
    // The database is killed and restarted under the campaign: a client of a library (pg) that reports a terminated
    // connection as an 'error' event nobody listens to must not end hours of schedules. Noted on stderr, not a verdict.
    process.on("uncaughtException", (e) =>
      process.stderr.write(`campaign: uncaught ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`),
    );
  }
  // The network world's chunk defaults to 6 schedules (a world of three daemons, serves and PostgreSQL), the proxy world's to 8.
  const effectiveWorldSize = world === "net" && option(args, "--world-size") === undefined ? 6 : worldSize;
  const run =
    world === "net"
      ? (s: readonly number[], p: number, each: (o: Outcome) => void, o: { verbose: boolean; worldSize: number }) =>
          runNetSeeds(s, p, each, {
            ...o,
            engine,
            ...(controllers !== undefined ? { controllers: Number(controllers) } : {}),
            worldSize: effectiveWorldSize,
          })
      : parallel > 1
        ? runSeedsInWorkers
        : runSeeds;
  if (parallel === 1 && world === "proxy") {
    for (const signal of ["SIGINT", "SIGTERM"] as const)
      process.once(signal, () => void closeOpenWorlds().finally(() => process.exit(130)));
  }
  const outcomes = await run(
    todo,
    parallel,
    (o) => {
      if (checkpoint) appendFileSync(checkpoint, `${JSON.stringify(o)}\n`);
      const faults = Object.entries(o.faults)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ");
      const stamp = new Date().toISOString().slice(11, 19);
      process.stdout.write(
        `${stamp} seed ${o.seed}: ${o.violations.length === 0 ? "ok" : `${o.violations.length} violation(s)`} in ${(o.ms / 1000).toFixed(1)} s; ${faults}\n`,
      );
      if (verbose || o.violations.length > 0)
        process.stdout.write(
          `${o.schedule}\n${o.notes.map((n) => `  note: ${n}\n`).join("")}${o.violations.map((v) => `  ✗ ${v}\n`).join("")}`,
        );
    },
    { verbose, worldSize },
  );
  const all = [...before.filter((o) => seeds.includes(o.seed)), ...outcomes].sort((a, b) => a.seed - b.seed);
  process.stdout.write(
    `\nthis run: ${outcomes.length} schedule(s) in ${((Date.now() - started) / 1000).toFixed(0)} s at --parallel ${parallel} --world-size ${effectiveWorldSize} (${((outcomes.length * 3_600_000) / Math.max(1, Date.now() - started)).toFixed(0)} schedules/hour)\n${summarise(all)}\n`,
  );
  process.exitCode = all.some((o) => o.violations.length > 0) ? 1 : 0;
}

await main();
