/**
 * Issue 35, the first API answer after `berth serve` starts, at scale: `berth serve` (the installed executable,
 * dist/src/cli/entry/berth.cjs) started on a home of `--nodes` simulated nodes (bench/support/node-sim, the real
 * protocol) and `--agents` placements. Per run, from the spawn: its listening line, its first `GET /healthz`, its
 * first `GET /api/v1/placements` and `GET /api/v1/nodes` (each asked as soon as the line is printed, all at once), and
 * when the first lifecycle pass (describe every target, then one keep pass) has run, read from the server's
 * own log line ("first pass done"). The floor, measured in the same run: a bare fastify server on the same Node
 * (imported, one route, listening, answering) spawned the same way. Min / median / max of `--runs`, the load average,
 * and the ratio to the floor and to the 1 s target. Also the server's resident memory after its first pass, read from
 * /proc (VmRSS, and VmHWM for its peak), beside the floor's (issue 35: ≤ 400 MiB at 50,000 agents, `--agents 50000`).
 * Figures are printed, never asserted.
 *
 *   bash scripts/bench scale/serve-start     node dist/bench/scale/serve-start.js [--nodes 1000] [--agents 10000] [--runs 3] [--keep]
 *
 * Target (issue 35): the first API answer ≤ 1 s at 10,000 agents; the first pass runs behind it, never in front.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { loadOrCreateToken } from "../../src/server/token.js";
import { numberFlag } from "../support.js";
import { scaleWorld, stats } from "./support/world.js";

const NODES = numberFlag("--nodes", 1000);
const AGENTS = numberFlag("--agents", 10_000);
const RUNS = numberFlag("--runs", 3);
const BERTH = resolve("dist/src/cli/entry/berth.cjs");
const TARGET_MS = 1000;
/** Issue 35: controller memory at 50,000 agents (run with --agents 50000). */
const TARGET_RSS_MIB = 400;

interface Run {
  readonly listening: number;
  readonly healthz: number;
  readonly placements: number;
  readonly nodes: number;
  readonly firstPass: number | null;
  readonly memory: Memory | null;
}

/** A process's resident memory from /proc, in MiB: now (VmRSS) and its peak so far (VmHWM). */
interface Memory {
  readonly rss: number;
  readonly peak: number;
}

function memoryOf(pid: number | undefined): Memory | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
  } catch {
    return null;
  }
}

/** Spawns `args`, waits for the first stdout line (`{url}`), then asks `paths` at once; ms from the spawn to each. */
async function startAndAsk(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  paths: readonly string[],
  token: string | null,
  waitForLog: string | null,
): Promise<{ line: number; answers: number[]; log: number | null; memory: Memory | null }> {
  const start = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let logAt: number | null = null;
  const logSeen = new Promise<void>((resolveLog) => {
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      if (waitForLog !== null && logAt === null && err.includes(waitForLog)) {
        logAt = performance.now() - start;
        resolveLog();
      }
      if (err.length > 1_000_000) err = err.slice(-10_000);
    });
    if (waitForLog === null) resolveLog();
  });
  try {
    const line = await new Promise<string>((resolveLine, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf("\n");
        if (nl >= 0) resolveLine(out.slice(0, nl));
      });
      child.once("exit", (code) => reject(new Error(`${args.join(" ").slice(0, 80)} exited ${code}`)));
    });
    const lineAt = performance.now() - start;
    const { url } = JSON.parse(line) as { url: string };
    const answers = await Promise.all(
      paths.map(async (path) => {
        const r = await fetch(`${url}${path}`, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });
        await r.arrayBuffer();
        if (!r.ok) throw new Error(`GET ${path} answered ${r.status}`);
        return performance.now() - start;
      }),
    );
    // Unref'd: a deadline, not a reason to live (it kept the bench alive for ten minutes after its last line).
    await Promise.race([logSeen, new Promise((r) => setTimeout(r, 600_000).unref())]);
    // Read from outside, while it still runs: after its first pass (berth serve) or its first answer (the floor).
    return { line: lineAt, answers, log: logAt, memory: memoryOf(child.pid) };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

const FASTIFY_FLOOR = `
const { default: Fastify } = await import(${JSON.stringify(resolve("node_modules/fastify/fastify.js"))});
const app = Fastify();
app.get("/healthz", async () => ({ ok: true }));
await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(JSON.stringify({ url: "http://127.0.0.1:" + app.server.address().port }) + "\\n");
`;

async function main(): Promise<void> {
  console.log(
    `berth serve's first answer (issue 35): ${NODES} simulated nodes, ${AGENTS} agents, ${RUNS} runs; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const w = await scaleWorld({ nodes: NODES, agents: AGENTS, log: console.log });
  try {
    await w.controller.close();
    w.connector.closeWarm();
    const env = { BERTH_HOME: w.home, KUBECONFIG: "/nonexistent", BERTH_UNSUPPORTED_NODE: "allow" };
    const token = loadOrCreateToken(w.home);
    const floors: number[] = [];
    const floorMemory: Memory[] = [];
    const runs: Run[] = [];
    for (let i = 0; i < RUNS; i++) {
      const floor = await startAndAsk(["--input-type=module", "-e", FASTIFY_FLOOR], {}, ["/healthz"], null, null);
      floors.push(floor.answers[0] ?? Number.NaN);
      if (floor.memory !== null) floorMemory.push(floor.memory);
      const r = await startAndAsk(
        [BERTH, "serve", "--port", "0", "--json", "--log-level", "info", "--log-format", "json", "--data-dir", w.home],
        env,
        ["/healthz", "/api/v1/placements", "/api/v1/nodes"],
        token,
        "first pass done",
      );
      runs.push({
        listening: r.line,
        healthz: r.answers[0] ?? Number.NaN,
        placements: r.answers[1] ?? Number.NaN,
        nodes: r.answers[2] ?? Number.NaN,
        firstPass: r.log,
        memory: r.memory,
      });
    }
    const f = stats(floors);
    const show = (label: string, values: readonly number[]) => {
      const s = stats(values);
      console.log(
        `  ${label.padEnd(44)} ${s.min.toFixed(0).padStart(6)} / ${s.median.toFixed(0).padStart(6)} / ${s.max.toFixed(0).padStart(6)} ms   ${(s.median / f.median).toFixed(1)}× the floor, ${((100 * s.median) / TARGET_MS).toFixed(0)}% of the ${TARGET_MS} ms target`,
      );
    };
    console.log("  (min / median / max from the spawn)");
    show("fastify floor: listening and answering", floors);
    show(
      "berth serve: listening line",
      runs.map((r) => r.listening),
    );
    show(
      "berth serve: first GET /healthz",
      runs.map((r) => r.healthz),
    );
    show(
      "berth serve: first GET /api/v1/placements",
      runs.map((r) => r.placements),
    );
    show(
      "berth serve: first GET /api/v1/nodes",
      runs.map((r) => r.nodes),
    );
    const passes = runs.map((r) => r.firstPass).filter((x): x is number => x !== null);
    if (passes.length > 0) {
      const p = stats(passes);
      console.log(
        `  ${"berth serve: first pass done (its log line)".padEnd(44)} ${p.min.toFixed(0).padStart(6)} / ${p.median.toFixed(0).padStart(6)} / ${p.max.toFixed(0).padStart(6)} ms`,
      );
    } else console.log("  berth serve: no 'first pass done' line was logged");
    const memories = runs.map((r) => r.memory).filter((m): m is Memory => m !== null);
    if (memories.length > 0) {
      const rss = stats(memories.map((m) => m.rss));
      const peak = stats(memories.map((m) => m.peak));
      const floorRss = stats(floorMemory.map((m) => m.rss)).median;
      console.log(
        `  ${"berth serve: RSS after its first pass".padEnd(44)} ${rss.min.toFixed(0).padStart(6)} / ${rss.median.toFixed(0).padStart(6)} / ${rss.max.toFixed(0).padStart(6)} MiB  (peak ${peak.median.toFixed(0)} MiB) at ${AGENTS} agents; ${((100 * rss.median) / TARGET_RSS_MIB).toFixed(0)}% of the ${TARGET_RSS_MIB} MiB target; the fastify floor ${floorRss.toFixed(0)} MiB`,
      );
    }
    const worst = stats(runs.map((r) => Math.max(r.placements, r.nodes))).median;
    console.log(
      `  first API answer (the later of placements and nodes, median) ${worst.toFixed(0)} ms: target ≤ ${TARGET_MS} ms ${worst <= TARGET_MS ? "met" : "NOT met"}; floor ${f.median.toFixed(0)} ms`,
    );
  } finally {
    if (process.argv.includes("--keep")) {
      // For profiling by hand: the home stays (its simulated nodes are gone, so every describe of them fails fast).
      await w.sim.close();
      console.log(`  kept the home: ${w.home}`);
    } else await w.close();
  }
  console.log(
    `  load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}

await main();
