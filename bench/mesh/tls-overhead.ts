/**
 * The cost of the confidential control channel (issue 17), TLS 1.3 against the plaintext transport in the same run,
 * at 3 and 30 real `berth node serve` daemons per transport (`--nodes 3,30` to choose):
 * - connection set-up (TCP connect vs TCP connect + TLS 1.3 handshake with both identity certificates checked);
 * - signed `status` round trips per second, round-robin over the nodes, sequential and all nodes at once: with a
 *   fresh connection per call, and with the controller's warm connections (client/connector.ts);
 * - `place` latency (signed request, package fetched over the same connection, instance started), one per node,
 *   fresh and right after a status on a warm connection (the describe-then-place of a placement).
 * Figures are printed, never asserted. Run after `npm run build:test` from the repository root (scripts/bench does).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import type { Connector } from "../../src/mesh/transport/frames.js";
import { ratio } from "../support.js";

type Transport = "tls" | "plaintext";
const MAIN = resolve("dist/src/cli/entry/main.js");
const dir = mkdtempSync(join(tmpdir(), "berth-bench-tls-"));
const controller = generateSigningKey();
const signer = generateSigningKey();
const procs: Array<ReturnType<typeof spawn>> = [];
const AUTHORITY = () => ({ store_id: "b".repeat(32), epoch: 0 });

function nodesFlag(): number[] {
  const i = process.argv.indexOf("--nodes");
  const raw = i >= 0 ? (process.argv[i + 1] ?? "") : "3,30";
  return raw
    .split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

async function startNode(name: string, transport: Transport): Promise<string> {
  const nodeDir = join(dir, name);
  execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", nodeDir, "--json"]);
  writeFileSync(
    join(nodeDir, "node.json"),
    JSON.stringify({ name, max_instances: 64, transport, allow_root_agents: true }),
  );
  writeFileSync(
    join(nodeDir, "permits.json"),
    JSON.stringify([{ id: "bench", actions: ["workload.*"], kinds: ["probe"], max_network: "egress" }]),
  );
  const proc = spawn(
    process.execPath,
    [
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
    ],
    {
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
  procs.push(proc);
  let out = "";
  return new Promise((res, rej) => {
    proc.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line && out.includes("\n")) res((JSON.parse(line) as { address: string }).address);
    });
    proc.once("exit", (code) => rej(new Error(`node ${name} exited ${code}`)));
  });
}

/** One package per measurement, so that each place fetches it (a node's content store keeps what it fetched). */
function packageDir(tag: string): string {
  const pkgDir = join(dir, `pkg-${tag}`);
  mkdirSync(pkgDir, { recursive: true });
  writeFileSync(join(pkgDir, "run.sh"), `#!/bin/sh\n# ${tag}\nexec sleep 300\n`);
  chmodSync(join(pkgDir, "run.sh"), 0o755);
  initPackage(pkgDir, {
    name: "probe",
    kind: "probe",
    files: ["run.sh"],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
    network: "egress",
  });
  buildPackage(pkgDir);
  signPackage(pkgDir, signer);
  return pkgDir;
}

const placedNodes = new Set<string>();

/** The instances this run placed, found by the node id the node puts in their environment (never by name). */
function killInstances(): void {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (env.some((v) => v.startsWith("BERTH_NODE_ID=") && placedNodes.has(v.slice("BERTH_NODE_ID=".length))))
        process.kill(Number(entry), "SIGKILL");
    } catch {
      // gone, or not ours to read
    }
  }
}

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const line = (label: string, value: string) => console.log(`  ${label.padEnd(48)} ${value.padStart(10)}`);

interface Figures {
  connectMs: number;
  sequentialPerSecond: number;
  concurrentPerSecond: number;
  warmSequentialPerSecond: number;
  placeMedianMs: number;
  warmPlaceMedianMs: number;
}

async function measure(n: number, transport: Transport, round: number): Promise<Figures> {
  const tag = `${transport}-${n}-r${round}`;
  const pkg = new PackageDirSource(packageDir(`${tag}-fresh`));
  const warmPkg = new PackageDirSource(packageDir(`${tag}-warm`));
  const addrs = await Promise.all(Array.from({ length: n }, (_, i) => startNode(`${tag}-${i}`, transport)));
  const warmConnector = new ControllerConnector({
    identity: controller,
    plaintext: { all: transport === "plaintext", nodes: [] },
  });
  // The same connector asked never to reuse: a fresh connection (and handshake) per call.
  const connector: Connector = { connect: (addr, signal) => warmConnector.connect(addr, signal) };
  const client = new NodeClient({ key: controller, connector, authority: AUTHORITY, timeoutMs: 60_000 });
  const warm = new NodeClient({ key: controller, connector: warmConnector, authority: AUTHORITY, timeoutMs: 60_000 });
  const targets: TargetRef[] = [];
  for (const addr of addrs) {
    const d = await client.describe(addr, null);
    if (d.kind !== "described") throw new Error(`describe of ${addr} failed: ${JSON.stringify(d)}`);
    targets.push({ addr, nodeId: d.nodeId, key: d.key, bootId: d.bootId });
    placedNodes.add(d.nodeId);
  }
  console.log(`${transport}, ${n} nodes`);
  const connects: number[] = [];
  for (let i = 0; i < Math.max(200, 4 * n); i++) {
    const start = process.hrtime.bigint();
    const s = await connector.connect(addrs[i % n] as string);
    connects.push(ms(start));
    s.close();
  }
  const connectMs = median(connects.slice(20));
  line("connection set-up, median", `${connectMs.toFixed(2)} ms`);
  const status = async (t: TargetRef, via = client) => {
    const r = await via.call(t, "status", { instance_id: null, include_departed: false });
    if (r.kind !== "ok") throw new Error(JSON.stringify(r));
  };
  const calls = Math.max(300, 10 * n);
  for (let i = 0; i < 20; i++) await status(targets[i % n] as TargetRef);
  let start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await status(targets[i % n] as TargetRef);
  const sequentialPerSecond = calls / (ms(start) / 1000);
  line("status round trips, sequential", `${sequentialPerSecond.toFixed(0)} /s`);
  const rounds = Math.max(10, Math.ceil(300 / n));
  // All nodes at once: on a loaded machine a fresh handshake can outlast a node's first-bytes deadline (1.5 s, issue
  // 12) and be cut; those calls are counted, not fatal.
  let cut = 0;
  start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) await Promise.all(targets.map((t) => status(t).catch(() => void cut++)));
  const concurrentPerSecond = (rounds * n - cut) / (ms(start) / 1000);
  line(`status round trips, ${n} nodes at once`, `${concurrentPerSecond.toFixed(0)} /s`);
  if (cut > 0) line(`  calls cut (of ${rounds * n})`, String(cut));
  for (let i = 0; i < 20; i++) await status(targets[i % n] as TargetRef, warm);
  start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await status(targets[i % n] as TargetRef, warm);
  const warmSequentialPerSecond = calls / (ms(start) / 1000);
  line("status round trips, sequential, warm", `${warmSequentialPerSecond.toFixed(0)} /s`);
  const place = async (
    via: NodeClient,
    source: PackageDirSource,
    t: TargetRef,
    name: string,
    i: number,
  ): Promise<number> => {
    const begin = process.hrtime.bigint();
    const r = await via.call(
      t,
      "place",
      { package_id: source.packageId, name, variant: "any-linux", config: { mode: "service", args: [], env: {} } },
      {
        decisionId: `${i.toString(16).padStart(8, "0")}${"c".repeat(56)}`,
        package: source,
      },
    );
    if (r.kind !== "ok") throw new Error(`place failed: ${JSON.stringify(r)}`);
    return ms(begin);
  };
  const places: number[] = [];
  const warmPlaces: number[] = [];
  for (const [i, t] of targets.entries()) {
    places.push(await place(client, pkg, t, `probe-${i}`, 2 * i));
    await status(t, warm); // the describe/status a placement makes just before its place
    warmPlaces.push(await place(warm, warmPkg, t, `warm-${i}`, 2 * i + 1));
  }
  const placeMedianMs = median(places);
  const warmPlaceMedianMs = median(warmPlaces);
  line("place -> running, median", `${placeMedianMs.toFixed(1)} ms`);
  line("place -> running after a status, warm, median", `${warmPlaceMedianMs.toFixed(1)} ms`);
  warmConnector.closeWarm();
  return {
    connectMs,
    sequentialPerSecond,
    concurrentPerSecond,
    warmSequentialPerSecond,
    placeMedianMs,
    warmPlaceMedianMs,
  };
}

function meanOf(a: Figures, b: Figures): Figures {
  const m = (k: keyof Figures) => (a[k] + b[k]) / 2;
  return {
    connectMs: m("connectMs"),
    sequentialPerSecond: m("sequentialPerSecond"),
    concurrentPerSecond: m("concurrentPerSecond"),
    warmSequentialPerSecond: m("warmSequentialPerSecond"),
    placeMedianMs: m("placeMedianMs"),
    warmPlaceMedianMs: m("warmPlaceMedianMs"),
  };
}

async function main(): Promise<void> {
  try {
    for (const n of nodesFlag()) {
      // ABBA order (plaintext, tls, tls, plaintext), each figure the mean of its two rounds: on a shared machine
      // whose load drifts during the run, a linear drift cancels instead of favouring whichever half ran second.
      const rounds: Figures[] = [];
      for (const [round, transport] of (["plaintext", "tls", "tls", "plaintext"] as const).entries()) {
        rounds.push(await measure(n, transport, round));
        for (const p of procs.splice(0)) p.kill("SIGKILL");
        killInstances();
      }
      const [p1, t1, t2, p2] = rounds as [Figures, Figures, Figures, Figures];
      const plain = meanOf(p1, p2);
      const tls = meanOf(t1, t2);
      console.log(`tls against plaintext, ${n} nodes (same run, ABBA)`);
      line("handshake cost per connection", `+${(tls.connectMs - plain.connectMs).toFixed(2)} ms`);
      ratio("status rate, sequential (tls / plaintext)", tls.sequentialPerSecond, plain.sequentialPerSecond);
      ratio(`status rate, ${n} at once (tls / plaintext)`, tls.concurrentPerSecond, plain.concurrentPerSecond);
      ratio("place latency (tls / plaintext)", tls.placeMedianMs, plain.placeMedianMs);
      ratio("status rate, tls warm / plaintext fresh", tls.warmSequentialPerSecond, plain.sequentialPerSecond);
      ratio("status rate, warm (tls / plaintext)", tls.warmSequentialPerSecond, plain.warmSequentialPerSecond);
      ratio("place latency, tls warm / plaintext fresh", tls.warmPlaceMedianMs, plain.placeMedianMs);
      for (const p of procs.splice(0)) p.kill("SIGKILL");
      killInstances();
    }
  } finally {
    for (const p of procs) p.kill("SIGKILL");
    killInstances();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
