/**
 * Issue 35, the read verbs at scale: `berth instances`, `berth agents` and `berth nodes list` from the CLI (the
 * installed `berth`, dist/src/cli/berth.cjs) on a home holding 10,000 agents on 1,000 simulated nodes
 * (bench/support/node-sim, real protocol), and the same with `--refresh` where the verb has it. Per verb: the wall
 * time (min / median / max of --runs) against `node -e 0` measured interleaved in the same run (the floor; target
 * ≤ 3×), and from one run under strace (outside the process, as test/store/unsynced-commits does): the write
 * syscalls and the fsyncs on the home's files (target 0 and 0 by default). Then two `berth instances` started
 * together on the one home: whether both answered (one used to fail with "another berth process is writing this
 * database"). Then `berth serve` on the home: the time from its start to its first API answer (GET /api/v1/placements),
 * against the time to its listening line (target ≤ 1 s at 10,000 agents). Figures are printed, never asserted.
 *
 *   bash scripts/bench scale/cli-reads        node dist/bench/scale/cli-reads.js [--quick] [--nodes 1000 --agents 10000] [--runs 5]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { numberFlag } from "../support.js";
import { scaleWorld, stats } from "./support/world.js";

const QUICK = process.argv.includes("--quick");
const NODES = numberFlag("--nodes", QUICK ? 100 : 1000);
const AGENTS = numberFlag("--agents", QUICK ? 1000 : 10_000);
const RUNS = numberFlag("--runs", 5);
const BERTH = resolve("dist/src/cli/berth.cjs");
const hasStrace = spawnSync("strace", ["-V"]).status === 0;

function timed(args: readonly string[], env: NodeJS.ProcessEnv): { ms: number; ok: boolean; stderr: string } {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"], timeout: 600_000 });
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, ok: r.status === 0, stderr: r.stderr?.toString() ?? "" };
}

/** Write syscalls and fsyncs on files under `home`, made by the whole process tree of one run. */
function writesUnder(home: string, args: readonly string[], env: NodeJS.ProcessEnv): { writes: number; fsyncs: number } | null {
  if (!hasStrace) return null;
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-strace-"));
  try {
    const trace = join(dir, "trace");
    spawnSync("strace", ["-f", "-qq", "-y", "-e", "trace=write,pwrite64,writev,pwritev,fsync,fdatasync", "-o", trace, process.execPath, ...args], {
      env: { ...process.env, ...env },
      stdio: "ignore",
      timeout: 600_000,
    });
    let writes = 0;
    let fsyncs = 0;
    for (const line of readFileSync(trace, "utf8").split("\n")) {
      if (!line.includes(`<${home}`)) continue;
      if (/\b(fsync|fdatasync)\(/.test(line)) fsyncs++;
      else if (/\b(write|pwrite64|writev|pwritev)\(/.test(line)) writes++;
    }
    return { writes, fsyncs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function firstApiAnswer(home: string, env: NodeJS.ProcessEnv): Promise<{ listening: number; answered: number }> {
  const start = performance.now();
  const child = spawn(process.execPath, [BERTH, "serve", "--port", "0", "--json", "--log-level", "silent", "--data-dir", home], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  try {
    const line = await new Promise<string>((resolveLine, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf("\n");
        if (nl >= 0) resolveLine(out.slice(0, nl));
      });
      child.once("exit", (code) => reject(new Error(`berth serve exited ${code}`)));
    });
    const listening = performance.now() - start;
    const { url } = JSON.parse(line) as { url: string };
    const token = readFileSync(join(home, "api.token"), "utf8").trim();
    const r = await fetch(`${url}/api/v1/placements`, { headers: { authorization: `Bearer ${token}` } });
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`GET /api/v1/placements answered ${r.status}`);
    return { listening, answered: performance.now() - start };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

async function main(): Promise<void> {
  console.log(`read verbs at scale (issue 35): ${NODES} simulated nodes, ${AGENTS} agents, ${RUNS} runs each; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const w = await scaleWorld({ nodes: NODES, agents: AGENTS, log: console.log });
  try {
    await w.controller.close();
    const env = { BERTH_HOME: w.home, KUBECONFIG: "/nonexistent" };
    const cases = [
      { label: "node -e 0 (floor)", args: ["-e", "0"] },
      { label: "berth instances --json", args: [BERTH, "instances", "--json"] },
      { label: "berth agents --json", args: [BERTH, "agents", "--json"] },
      { label: "berth nodes list --json", args: [BERTH, "nodes", "list", "--json"] },
      { label: "berth nodes list --refresh --json", args: [BERTH, "nodes", "list", "--refresh", "--json"] },
    ];
    const times = cases.map(() => [] as number[]);
    for (let i = 0; i < RUNS; i++) {
      for (const [k, c] of cases.entries()) {
        const r = timed(c.args, env);
        if (!r.ok) console.log(`    ${c.label} failed: ${r.stderr.slice(0, 300)}`);
        times[k]?.push(r.ms);
      }
    }
    const floor = stats(times[0] ?? []).median;
    for (const [k, c] of cases.entries()) {
      const s = stats(times[k] ?? []);
      const io = k === 0 ? null : writesUnder(w.home, c.args, env);
      const ioText = io === null ? "" : `  writes ${io.writes}, fsyncs ${io.fsyncs} on the home`;
      console.log(`  ${c.label.padEnd(38)} ${s.min.toFixed(0)} / ${s.median.toFixed(0)} / ${s.max.toFixed(0)} ms  ${(s.median / floor).toFixed(1)}× node -e 0${ioText}`);
    }
    const both = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<{ code: number | null; stderr: string }>((done) => {
            const child = spawn(process.execPath, [BERTH, "instances", "--json"], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
            let stderr = "";
            child.stderr.on("data", (d: Buffer) => {
              stderr += d.toString();
            });
            child.once("exit", (code) => done({ code, stderr }));
          }),
      ),
    );
    const failed = both.filter((b) => b.code !== 0);
    console.log(`  two \`berth instances\` at once on one home: ${failed.length === 0 ? "both answered" : `${failed.length} failed: ${failed[0]?.stderr.slice(0, 200)}`}`);
    const serve: Array<{ listening: number; answered: number }> = [];
    for (let i = 0; i < Math.min(RUNS, 3); i++) serve.push(await firstApiAnswer(w.home, env));
    const l = stats(serve.map((s) => s.listening));
    const a = stats(serve.map((s) => s.answered));
    console.log(`  berth serve: listening after ${l.min.toFixed(0)} / ${l.median.toFixed(0)} / ${l.max.toFixed(0)} ms; first API answer after ${a.min.toFixed(0)} / ${a.median.toFixed(0)} / ${a.max.toFixed(0)} ms (target ≤ 1000 ms; ${(a.median / floor).toFixed(1)}× node -e 0)`);
  } finally {
    await w.close();
  }
  console.log(`  load average after: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
}

await main();
