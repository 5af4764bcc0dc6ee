/**
 * Supervision figures (issue 15), each against a baseline measured in the same run:
 * - exit → running again: an agent placed with `restart: always` is killed (kill -9 of its group); the time until its
 *   restarted entry writes its first line, median and p99, against a bare child_process.spawn of the same entry
 *   until it writes the same line;
 * - the supervision loop's CPU: the daemon's CPU time (utime + stime from /proc) over a quiet interval with 100
 *   instances under `never` (nothing supervised), under `always`, and under `always` with a health check every 10 s.
 * Figures are printed, never asserted. Run after `npm run build:test` from the repository root (scripts/bench does).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { RestartPolicy } from "../../src/core/node/restart-policy.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { numberFlag } from "../support.js";

const MAIN = resolve("dist/src/cli/entry/main.js");
const dir = mkdtempSync(join(tmpdir(), "berth-bench-restart-"));
const controller = generateSigningKey();
const signer = generateSigningKey();
const SAMPLES = numberFlag("--samples", 40);
const INSTANCES = numberFlag("--instances", 100);
// /proc counts CPU in clock ticks (10 ms): a 20 s window resolves 0.5 ms of CPU per second.
const CPU_WINDOW_MS = numberFlag("--cpu-window-ms", 20_000);
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** The entry writes the wall clock in ms (date +%s%3N) to $HOME/starts on every start, then sleeps. */
const SCRIPT = '#!/bin/sh\ndate +%s%3N >> "$HOME/starts"\nexec sleep 600\n';

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS; // utime, stime (fields 14, 15)
}

async function readyLine(proc: ReturnType<typeof spawn>): Promise<Record<string, unknown>> {
  let out = "";
  return new Promise((res, rej) => {
    proc.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line && out.includes("\n")) res(JSON.parse(line) as Record<string, unknown>);
    });
    proc.once("exit", (code) => rej(new Error(`exited ${code}`)));
  });
}

function lines(path: string): number[] {
  return existsSync(path) ? readFileSync(path, "utf8").trim().split("\n").filter(Boolean).map(Number) : [];
}

async function until<T>(probe: () => T | undefined, deadlineMs = 30_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 1));
  }
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const quantile = (xs: number[], q: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number;
const row = (label: string, value: string) => console.log(`  ${label.padEnd(52)} ${value.padStart(10)}`);

function makePackage(name: string, health: { exec: string[]; interval_s: number; misses: number } | null): string {
  const pkgDir = join(dir, name);
  mkdirSync(pkgDir, { recursive: true });
  writeFileSync(join(pkgDir, "run.sh"), SCRIPT);
  chmodSync(join(pkgDir, "run.sh"), 0o755);
  initPackage(pkgDir, {
    name: "probe",
    kind: "probe",
    files: ["run.sh"],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
    network: "egress",
    health,
  });
  buildPackage(pkgDir);
  signPackage(pkgDir, signer);
  return pkgDir;
}

async function withDaemon<T>(
  label: string,
  fn: (ctx: {
    client: NodeClient;
    target: TargetRef;
    daemonPid: number;
    nodeDir: string;
    pids: number[];
  }) => Promise<T>,
): Promise<T> {
  const nodeDir = join(dir, label);
  execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", nodeDir, "--json"]);
  writeFileSync(
    join(nodeDir, "node.json"),
    JSON.stringify({ ...JSON.parse(readFileSync(join(nodeDir, "node.json"), "utf8")), max_instances: 256 }),
  );
  writeFileSync(
    join(nodeDir, "permits.json"),
    JSON.stringify([{ id: "bench", actions: ["workload.*"], kinds: ["probe"], max_network: "egress" }]),
  );
  const args = [
    MAIN,
    "node",
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--data-dir",
    nodeDir,
    "--controller",
    controller.publicKey,
    "--signer",
    signer.publicKey,
  ];
  if (process.getuid?.() === 0) args.push("--allow-root-agents");
  const daemon = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
  const pids: number[] = [];
  try {
    const ready = await readyLine(daemon);
    const client = new NodeClient({
      key: controller,
      connector: new TlsConnector({ identity: controller }),
      authority: () => ({ store_id: "b".repeat(32), epoch: 0 }),
    });
    const described = await client.describe(ready.address as string, null);
    if (described.kind !== "described") throw new Error(`describe failed: ${JSON.stringify(described)}`);
    const target: TargetRef = {
      addr: ready.address as string,
      nodeId: described.nodeId,
      key: described.key,
      bootId: described.bootId,
    };
    return await fn({ client, target, daemonPid: daemon.pid as number, nodeDir, pids });
  } finally {
    daemon.kill("SIGKILL");
    for (const pid of pids) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

let decisions = 0;
async function place(
  client: NodeClient,
  target: TargetRef,
  pkgDir: string,
  name: string,
  restart: RestartPolicy,
): Promise<number> {
  const source = new PackageDirSource(pkgDir);
  decisions++;
  const r = await client.call(
    target,
    "place",
    {
      package_id: source.packageId,
      name,
      variant: "any-linux",
      config: { mode: "service", args: [], env: {} },
      restart,
    },
    { decisionId: decisions.toString(16).padStart(64, "0"), package: source },
  );
  if (r.kind !== "ok") throw new Error(JSON.stringify(r));
  return r.result.pid as number;
}

async function restartTimes(): Promise<number[]> {
  const pkg = makePackage("pkg-restart", null);
  return withDaemon("restart", async ({ client, target, nodeDir, pids }) => {
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const name = `agent-${i}`;
      const starts = join(nodeDir, "workspaces", name, "starts");
      const pid = await place(client, target, pkg, name, "always");
      await until(() => (lines(starts).length === 1 ? true : undefined));
      const killedAt = Date.now();
      process.kill(-pid, "SIGKILL");
      const again = await until(() => lines(starts)[1]);
      times.push(again - killedAt);
      // The restarted group, for the cleanup.
      const status = await client.call(target, "status", { instance_id: null, include_departed: false });
      if (status.kind === "ok")
        for (const r of status.result.rows as Array<{ name?: string; pid?: number }>)
          if (r.name === name && r.pid) pids.push(r.pid);
    }
    return times;
  });
}

async function bareSpawnTimes(): Promise<number[]> {
  const pkg = makePackage("pkg-bare", null);
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const home = join(dir, "bare", String(i));
    mkdirSync(home, { recursive: true });
    const start = Date.now();
    const child = spawn(join(pkg, "run.sh"), [], {
      detached: true,
      stdio: "ignore",
      env: { PATH: "/usr/bin:/bin", HOME: home },
    });
    const at = await until(() => lines(join(home, "starts"))[0]);
    times.push(at - start);
    process.kill(-(child.pid as number), "SIGKILL");
  }
  return times;
}

async function loopCpu(restart: RestartPolicy, health: boolean): Promise<number> {
  const pkg = makePackage(
    `pkg-cpu-${restart}-${health}`,
    health ? { exec: ["/bin/true"], interval_s: 10, misses: 3 } : null,
  );
  return withDaemon(`cpu-${restart}-${health}`, async ({ client, target, daemonPid, pids }) => {
    for (let i = 0; i < INSTANCES; i++) pids.push(await place(client, target, pkg, `agent-${i}`, restart));
    await new Promise((r) => setTimeout(r, 2000)); // settle after the placements
    const before = cpuMs(daemonPid);
    await new Promise((r) => setTimeout(r, CPU_WINDOW_MS));
    return ((cpuMs(daemonPid) - before) / CPU_WINDOW_MS) * 1000; // CPU ms per second of wall clock
  });
}

async function main(): Promise<void> {
  try {
    console.log(
      `exit -> running again (kill -9 of the group, restart: always), ${SAMPLES} samples, vs a bare spawn of the same entry`,
    );
    const restart = await restartTimes();
    const bare = await bareSpawnTimes();
    row("supervised restart, median (ms)", quantile(restart, 0.5).toFixed(1));
    row("supervised restart, p99 (ms)", quantile(restart, 0.99).toFixed(1));
    row("bare spawn to first line, median (ms)", quantile(bare, 0.5).toFixed(1));
    row("bare spawn to first line, p99 (ms)", quantile(bare, 0.99).toFixed(1));
    row("restart / bare spawn, medians (slowdown)", `${(quantile(restart, 0.5) / quantile(bare, 0.5)).toFixed(1)}x`);

    console.log(
      `supervision loop: daemon CPU over ${CPU_WINDOW_MS / 1000} s with ${INSTANCES} running instances (ms of CPU per s)`,
    );
    const never = await loopCpu("never", false);
    const always = await loopCpu("always", false);
    const withHealth = await loopCpu("always", true);
    row(`${INSTANCES} under never (the floor: poll, trim, tick)`, never.toFixed(2));
    row(`${INSTANCES} under always`, always.toFixed(2));
    row(`${INSTANCES} under always, health check every 10 s`, withHealth.toFixed(2));
    row("always / never", `${(always / Math.max(never, 0.01)).toFixed(2)}x`);
    row("always + health / never", `${(withHealth / Math.max(never, 0.01)).toFixed(2)}x`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
