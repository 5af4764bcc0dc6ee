/**
 * Issue 35, the read verbs at scale: `berth instances`, `berth agents` and `berth nodes list` from the CLI (the
 * installed `berth`, dist/src/cli/entry/berth.cjs) on a home holding 10,000 agents on 1,000 simulated nodes
 * (bench/support/node-sim, real protocol), and the same with `--refresh` where the verb has it. Per verb: the wall
 * time (min / median / max of --runs) against `node -e 0` measured interleaved in the same run (the floor; target
 * ≤ 3×) and against the verb's data floor (`dataFloor`: reading the same tables and printing them, the least any
 * answer costs), and from one run under strace (outside the process, as test/store/unsynced-commits does): the write
 * syscalls and the fsyncs on the home's files (target 0 and 0 by default). Then two `berth instances` started
 * together on the one home: whether both answered (one used to fail with "another berth process is writing this
 * database"). Then `berth serve` on the home: the time from its start to its first API answer (GET /api/v1/placements),
 * against the time to its listening line (target ≤ 1 s at 10,000 agents). Figures are printed, never asserted.
 *
 *   bash scripts/bench scale/cli-reads        node dist/bench/scale/cli-reads.js [--quick] [--nodes 1000 --agents 10000] [--runs 5]
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { numberFlag } from "../support.js";
import { scaleWorld, stats } from "./support/world.js";

const QUICK = process.argv.includes("--quick");
const NODES = numberFlag("--nodes", QUICK ? 100 : 1000);
const AGENTS = numberFlag("--agents", QUICK ? 1000 : 10_000);
const RUNS = numberFlag("--runs", 5);
const BERTH = resolve("dist/src/cli/entry/berth.cjs");
const hasStrace = spawnSync("strace", ["-V"]).status === 0;
// The machine's node may be older than berth asks for (tests allow it the same way, vitest.config.ts).
const NODE_ENV = { BERTH_UNSUPPORTED_NODE: "allow" };

/** The database and its log: their bytes, size and time (the -shm index is SQLite's shared memory, read marks only). */
function storeFiles(home: string): string {
  return ["controller.db", "controller.db-wal"]
    .map((f) => {
      const path = join(home, f);
      // An absent log and an empty one hold the same (none): the first reader after a clean close makes it empty.
      if (!existsSync(path) || (f.endsWith("-wal") && statSync(path).size === 0)) return `${f}: empty`;
      const st = statSync(path);
      return `${f}: ${createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16)} ${st.size} ${st.mtimeMs}`;
    })
    .join("; ");
}

function timed(args: readonly string[], env: NodeJS.ProcessEnv): { ms: number; ok: boolean; stderr: string } {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, {
    env: { ...process.env, ...NODE_ENV, ...env },
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 600_000,
  });
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, ok: r.status === 0, stderr: r.stderr?.toString() ?? "" };
}

/**
 * Write syscalls and fsyncs on the home's files, made by the whole process tree of one run: on the database and its
 * log (`writes`, `fsyncs`), and apart from them the -shm index's (`shm`): SQLite's shared memory, where every reader of
 * a WAL database takes its read mark and whose pages it touches (one byte each) when it maps them.
 */
function writesUnder(
  home: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): { writes: number; fsyncs: number; shm: number } | null {
  if (!hasStrace) return null;
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-strace-"));
  try {
    const trace = join(dir, "trace");
    spawnSync(
      "strace",
      [
        "-f",
        "-qq",
        "-y",
        "-e",
        "trace=write,pwrite64,writev,pwritev,fsync,fdatasync",
        "-o",
        trace,
        process.execPath,
        ...args,
      ],
      {
        env: { ...process.env, ...NODE_ENV, ...env },
        stdio: "ignore",
        timeout: 600_000,
      },
    );
    let writes = 0;
    let fsyncs = 0;
    let shm = 0;
    for (const line of readFileSync(trace, "utf8").split("\n")) {
      if (!line.includes(`<${home}`)) continue;
      if (line.includes("-shm>")) shm++;
      else if (/\b(fsync|fdatasync)\(/.test(line)) fsyncs++;
      else if (/\b(write|pwrite64|writev|pwritev)\(/.test(line)) writes++;
    }
    return { writes, fsyncs, shm };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function firstApiAnswer(home: string, env: NodeJS.ProcessEnv): Promise<{ listening: number; answered: number }> {
  const start = performance.now();
  const child = spawn(
    process.execPath,
    [BERTH, "serve", "--port", "0", "--json", "--log-level", "silent", "--data-dir", home],
    { env: { ...process.env, ...NODE_ENV, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
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

/** The floor for the first answer: a fresh node process listening with fastify, one empty handler, answering once. */
async function fastifyFirstAnswer(): Promise<{ listening: number; answered: number }> {
  const fastify = createRequire(import.meta.url).resolve("fastify");
  const script = `const app = require(${JSON.stringify(fastify)})(); app.get("/", async () => ({})); app.listen({ host: "127.0.0.1", port: 0 }).then((url) => process.stdout.write(JSON.stringify({ url }) + "\\n"));`;
  const start = performance.now();
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const line = await new Promise<string>((resolveLine, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf("\n");
        if (nl >= 0) resolveLine(out.slice(0, nl));
      });
      child.once("exit", (code) => reject(new Error(`fastify floor exited ${code}`)));
    });
    const listening = performance.now() - start;
    const r = await fetch(`${(JSON.parse(line) as { url: string }).url}/`);
    await r.arrayBuffer();
    return { listening, answered: performance.now() - start };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

/** A writer in the middle of a transaction on the store (a deploy, a serve's pass): holds SQLite's write lock until released. */
async function holdWriteLock(home: string): Promise<() => Promise<void>> {
  const sqlite = createRequire(import.meta.url).resolve("better-sqlite3");
  const script = `const db = new (require(${JSON.stringify(sqlite)}))(${JSON.stringify(join(home, "controller.db"))}); db.pragma("busy_timeout = 10000"); db.exec("BEGIN IMMEDIATE"); db.exec("CREATE TABLE IF NOT EXISTS bench_probe (x INTEGER)"); db.prepare("INSERT INTO bench_probe (x) VALUES (1)").run(); process.stdout.write("holding\\n"); process.stdin.on("end", () => { db.exec("ROLLBACK"); db.close(); }); process.stdin.resume();`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  await new Promise<void>((held, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      if (d.toString().includes("holding")) held();
    });
    child.once("exit", (code) => reject(new Error(`the lock holder exited ${code}`)));
  });
  return async () => {
    child.stdin.end();
    await new Promise((r) => child.once("exit", r));
  };
}

/**
 * The fair floor of a list (issue 35's "≤ 3× `node -e 0`" is below what any answer at 10,000 agents costs): a fresh
 * node that opens the controller's file read-only with better-sqlite3, reads every row of the tables the verb's
 * answer comes from (`SELECT *`, no join, no ordering) and writes them to stdout as one JSON text. No process that
 * prints those rows from that file can do less; the verb's ratio to it is what berth adds (its own start-up, the
 * checks of what it reads, the shaping of the answer).
 */
function dataFloor(db: string, tables: readonly string[]): string[] {
  const sqlite = createRequire(import.meta.url).resolve("better-sqlite3");
  const reads = tables.map((t) => `${JSON.stringify(t)}: db.prepare("SELECT * FROM ${t}").all()`).join(", ");
  return [
    "-e",
    `const db = new (require(${JSON.stringify(sqlite)}))(${JSON.stringify(db)}, { readonly: true }); process.stdout.write(JSON.stringify({ ${reads} }) + "\\n");`,
  ];
}
const INSTANCES_TABLES = ["mesh_placements", "mesh_observations", "mesh_moved"];
const AGENTS_TABLES = ["agent_registry", "mesh_placements", "mesh_observations"];
const NODES_TABLES = ["mesh_targets", "mesh_node_admin"];

async function main(): Promise<void> {
  console.log(
    `read verbs at scale (issue 35): ${NODES} simulated nodes, ${AGENTS} agents, ${RUNS} runs each; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const w = await scaleWorld({ nodes: NODES, agents: AGENTS, registry: true, log: console.log });
  try {
    await w.controller.close();
    const env = { BERTH_HOME: w.home, KUBECONFIG: "/nonexistent", BERTH_ADDR: "", BERTH_CONTEXT: "" };
    const db = join(w.home, "controller.db");
    const cases = [
      { label: "node -e 0 (floor)", args: ["-e", "0"] },
      { label: "berth instances --json", args: [BERTH, "instances", "--json"] },
      { label: "  its data floor", args: dataFloor(db, INSTANCES_TABLES), floorOf: 1 },
      { label: "berth agents --json", args: [BERTH, "agents", "--json"] },
      { label: "  its data floor", args: dataFloor(db, AGENTS_TABLES), floorOf: 3 },
      { label: "berth nodes list --json", args: [BERTH, "nodes", "list", "--json"] },
      { label: "  its data floor", args: dataFloor(db, NODES_TABLES), floorOf: 5 },
      { label: "berth nodes list --refresh --json", args: [BERTH, "nodes", "list", "--refresh", "--json"] },
      { label: "berth instances --refresh --json", args: [BERTH, "instances", "--refresh", "--json"] },
    ];
    const times = cases.map(() => [] as number[]);
    const failed = cases.map(() => 0);
    for (let i = 0; i < RUNS; i++) {
      for (const [k, c] of cases.entries()) {
        // The --refresh rows ask every node (minutes at 1,000 nodes on a loaded machine): one run each, plus strace's.
        if (i > 0 && c.args.includes("--refresh")) continue;
        const r = timed(c.args, env);
        if (!r.ok) {
          failed[k] = (failed[k] ?? 0) + 1;
          if (failed[k] === 1) console.log(`    ${c.label} FAILED: ${r.stderr.slice(0, 300)}`);
        }
        times[k]?.push(r.ms);
      }
    }
    const floor = stats(times[0] ?? []).median;
    for (const [k, c] of cases.entries()) {
      const s = stats(times[k] ?? []);
      const before = storeFiles(w.home);
      const io = k === 0 || "floorOf" in c ? null : writesUnder(w.home, c.args, env);
      const same = k === 0 || storeFiles(w.home) === before;
      const ioText =
        io === null
          ? ""
          : `  writes ${io.writes}, fsyncs ${io.fsyncs} on the home's files (strace -f; -shm page touches ${io.shm})${same ? "; db and wal unchanged" : "; db or wal CHANGED"}`;
      const bad = (failed[k] ?? 0) > 0 ? `  (${failed[k]} of ${RUNS} FAILED)` : "";
      const verb = "floorOf" in c && c.floorOf !== undefined ? stats(times[c.floorOf] ?? []).median : null;
      const fair = verb === null ? "" : `; the verb is ${(verb / s.median).toFixed(1)}× its data floor`;
      console.log(
        `  ${c.label.padEnd(38)} ${s.min.toFixed(0)} / ${s.median.toFixed(0)} / ${s.max.toFixed(0)} ms  ${(s.median / floor).toFixed(1)}× node -e 0${fair}${ioText}${bad}`,
      );
    }
    const release = await holdWriteLock(w.home);
    let both: Array<{ code: number | null; stderr: string }>;
    try {
      both = await Promise.all(
        [0, 1].map(
          () =>
            new Promise<{ code: number | null; stderr: string }>((done) => {
              const child = spawn(process.execPath, [BERTH, "instances", "--json"], {
                env: { ...process.env, ...NODE_ENV, ...env },
                stdio: ["ignore", "ignore", "pipe"],
              });
              let stderr = "";
              child.stderr.on("data", (d: Buffer) => {
                stderr += d.toString();
              });
              child.once("exit", (code) => done({ code, stderr }));
            }),
        ),
      );
    } finally {
      await release();
    }
    const bad = both.filter((b) => b.code !== 0);
    console.log(
      `  two \`berth instances\` at once, a third process holding the write lock: ${bad.length === 0 ? "both answered" : `${bad.length} failed: ${bad[0]?.stderr.slice(0, 200)}`}`,
    );
    const serve: Array<{ listening: number; answered: number }> = [];
    const floors: Array<{ listening: number; answered: number }> = [];
    for (let i = 0; i < Math.min(RUNS, 3); i++) {
      floors.push(await fastifyFirstAnswer());
      serve.push(await firstApiAnswer(w.home, env));
    }
    const l = stats(serve.map((s) => s.listening));
    const a = stats(serve.map((s) => s.answered));
    const f = stats(floors.map((s) => s.answered));
    console.log(
      `  berth serve: listening after ${l.min.toFixed(0)} / ${l.median.toFixed(0)} / ${l.max.toFixed(0)} ms; first API answer after ${a.min.toFixed(0)} / ${a.median.toFixed(0)} / ${a.max.toFixed(0)} ms (target ≤ 1000 ms)`,
    );
    console.log(
      `  floor: a fresh node with fastify and one empty handler, first answer after ${f.min.toFixed(0)} / ${f.median.toFixed(0)} / ${f.max.toFixed(0)} ms; ratio ${(a.median / f.median).toFixed(1)}×`,
    );
  } finally {
    if (process.argv.includes("--keep")) {
      // For profiling by hand: the home stays (its simulated nodes are gone, so every describe of them fails fast).
      await w.sim.close();
      w.connector.closeWarm();
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
