/**
 * Node daemons as real processes on loopback, for the end-to-end placement benchmarks (bench/mesh/placements.ts,
 * bench/store/placements.ts): `berth node init` + `berth node serve` from dist/, the permit that lets them run the
 * benchmark's agent, and that agent: a signed package whose entry is a shell script that sleeps.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import { archOfNode } from "../../src/core/packages/manifest.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";

/** The built CLI; the benchmarks run from dist/ after `npm run build:test`. */
export const MAIN = resolve("dist/src/cli/entry/main.js");

/** Lets the benchmark's agent (kind agent, network lan) run on a node or pass a controller's policy. */
export const BENCH_PERMITS = [{ id: "bench", actions: ["workload.*"], kinds: ["agent"], max_network: "egress" }];

export function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value), { mode: 0o600 });
}

/** The first JSON line a starting `berth node serve` or `berth serve` prints: it is ready, and says where. */
export function firstJsonLine(proc: ChildProcess, what: string): Promise<Record<string, unknown>> {
  let out = "";
  return new Promise((res, rej) => {
    proc.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n").find((l) => l.startsWith("{") && out.includes("\n"));
      if (line) res(JSON.parse(line) as Record<string, unknown>);
    });
    proc.once("exit", (code) => rej(new Error(`${what} exited ${code}`)));
  });
}

/**
 * Initialises a node in `dataDir` trusting `controllers` and `signer`, starts it on a loopback port and resolves when
 * it is ready. The process joins `children` as soon as it is spawned, so the caller stops it even if it never gets
 * ready.
 */
export async function startNodeProcess(opts: {
  dataDir: string;
  name: string;
  controllers: readonly string[];
  signer: string;
  board?: string;
  children: ChildProcess[];
}): Promise<{ address: string; nodeId: string }> {
  const { dataDir } = opts;
  const controllers = opts.controllers.flatMap((key) => ["--controller", key]);
  const board = opts.board === undefined ? [] : ["--board", opts.board];
  execFileSync(process.execPath, [
    MAIN,
    "node",
    "init",
    "--data-dir",
    dataDir,
    "--name",
    opts.name,
    ...controllers,
    "--signer",
    opts.signer,
    ...board,
  ]);
  writeJson(join(dataDir, "permits.json"), BENCH_PERMITS);
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      "node",
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      "--allow-root-agents",
      "--log-level",
      "warn",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  opts.children.push(proc);
  const ready = await firstJsonLine(proc, "node serve");
  return { address: String(ready.address), nodeId: String(ready.node_id) };
}

/** The benchmark's agent in `root`/pkg: `exec sleep 600` for this machine's arch and OS, built and signed. */
export function sleepPackage(root: string, signer: SigningKey): string {
  const dir = join(root, "pkg");
  mkdirSync(dir);
  writeFileSync(join(dir, "run.sh"), "#!/bin/sh\nexec sleep 600\n");
  chmodSync(join(dir, "run.sh"), 0o755);
  const arch = archOfNode(process.arch) ?? "x86_64";
  const os = process.platform === "darwin" ? "darwin" : "linux";
  initPackage(dir, {
    name: "bench",
    kind: "agent",
    files: ["run.sh"],
    network: "lan",
    variants: [{ id: `${arch}-${os}`, arch, os, entry: { program: "run.sh", args: [] }, requires: [] }],
  });
  buildPackage(dir);
  signPackage(dir, signer);
  return dir;
}

/** Stops the daemons `startNodeProcess` started (SIGTERM: they stop their agents' supervision cleanly) and waits. */
export async function stopNodeProcesses(children: readonly ChildProcess[]): Promise<void> {
  for (const d of children) d.kill("SIGTERM");
  await Promise.all(children.map((d) => (d.exitCode === null ? new Promise((r) => d.once("exit", r)) : null)));
}
