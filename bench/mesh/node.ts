/**
 * Node daemon figures (issue 5), each against a baseline measured in the same run:
 * - signed `status` round trips per second over loopback vs an unsigned echo over the same framing (both one TCP
 *   connection per call, as the controller does);
 * - `place` → running latency vs a bare child_process.spawn of the same entry;
 * - daemon resident memory idle and with 100 running instances, against a bare `node -e` idling in the same run.
 * Figures are printed, never asserted. Run after `npm run build:test` from the repository root (scripts/bench does).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import { TcpConnector } from "../../src/mesh/transport/tcp.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { ratio } from "../support.js";

const MAIN = resolve("dist/src/cli/main.js");
const TRANSPORT = resolve("dist/src/mesh/transport/tcp.js");
const dir = mkdtempSync(join(tmpdir(), "berth-bench-node-"));
const controller = generateSigningKey();
const signer = generateSigningKey();

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
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

/**
 * Commits in a SQLite WAL file so far: frames whose header carries the database size after the commit (non-zero only
 * on a transaction's last frame) and the WAL's current salts. A checkpoint that restarts the WAL makes it go down.
 */
function walCommits(path: string): number {
  let wal: Buffer;
  try {
    wal = readFileSync(path);
  } catch {
    return 0;
  }
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}

async function timed(label: string, n: number, fn: (i: number) => Promise<void>): Promise<number> {
  for (let i = 0; i < Math.min(20, n); i++) await fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const perSecond = n / (Number(process.hrtime.bigint() - start) / 1e9);
  console.log(`  ${label.padEnd(48)} ${perSecond.toFixed(0).padStart(10)} /s`);
  return perSecond;
}

async function main(): Promise<void> {
  const nodeDir = join(dir, "node");
  execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", nodeDir, "--json"]);
  writeFileSync(join(nodeDir, "node.json"), JSON.stringify({ name: "bench", max_instances: 256, allow_root_agents: true }));
  writeFileSync(join(nodeDir, "permits.json"), JSON.stringify([{ id: "bench", actions: ["workload.*"], kinds: ["probe"], max_network: "egress" }]));
  const daemon = spawn(
    process.execPath,
    [MAIN, "node", "serve", "--listen", "127.0.0.1:0", "--data-dir", nodeDir, "--controller", controller.publicKey, "--signer", signer.publicKey],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const echo = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { listenFrames } from ${JSON.stringify(TRANSPORT)};
       const { address } = await listenFrames("127.0.0.1:0", async (s) => { try { for (;;) { await s.send(await s.recv()); } } catch { s.close(); } });
       console.log(JSON.stringify({ address }));`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const pids: number[] = [];
  try {
    const ready = await readyLine(daemon);
    const echoReady = await readyLine(echo);
    const client = new NodeClient({ key: controller, connector: new TlsConnector({ identity: controller }), authority: () => ({ store_id: "b".repeat(32), epoch: 0 }) });
    const described = await client.describe(ready.address as string, null);
    if (described.kind !== "described") throw new Error(`describe failed: ${JSON.stringify(described)}`);
    const target: TargetRef = { addr: ready.address as string, nodeId: described.nodeId, key: described.key, bootId: described.bootId };

    console.log("node daemon: signed control round trips vs unsigned echo (one connection per call, loopback)");
    const idleRss = rssKiB(daemon.pid as number);
    const signed = await timed("signed status (sign, verify, answer, bind)", 1000, async () => {
      const r = await client.call(target, "status", {});
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
    });
    const connector = new TcpConnector();
    const payload = new TextEncoder().encode(JSON.stringify({ type: "request", padding: "x".repeat(400) }));
    const unsigned = await timed("unsigned echo, same framing", 1000, async () => {
      const s = await connector.connect(echoReady.address as string);
      await s.send(payload);
      await s.recv();
      s.close();
    });
    ratio("signed status / unsigned echo", signed, unsigned);

    console.log("place -> running vs bare child_process.spawn of the same entry");
    const pkgDir = join(dir, "pkg");
    execFileSync("mkdir", ["-p", pkgDir]);
    writeFileSync(join(pkgDir, "run.sh"), "#!/bin/sh\nexec sleep 300\n");
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
    const source = new PackageDirSource(pkgDir);
    const placeTimes: number[] = [];
    const placeCommits: number[] = [];
    const wal = join(nodeDir, "node.db-wal");
    for (let i = 0; i < 100; i++) {
      const commitsBefore = walCommits(wal);
      const start = process.hrtime.bigint();
      const r = await client.call(
        target,
        "place",
        { package_id: source.packageId, name: `probe-${i}`, variant: "any-linux", config: { mode: "service", args: [], env: {} } },
        { decisionId: i.toString(16).padStart(64, "0"), package: source },
      );
      placeTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
      const commitsAfter = walCommits(wal);
      if (commitsAfter >= commitsBefore) placeCommits.push(commitsAfter - commitsBefore);
      pids.push(r.result.pid as number);
    }
    const spawnTimes: number[] = [];
    for (let i = 0; i < 30; i++) {
      const start = process.hrtime.bigint();
      const child = spawn(join(pkgDir, "run.sh"), [], { detached: true, stdio: "ignore" });
      await new Promise((r) => child.once("spawn", r));
      spawnTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
      process.kill(-(child.pid as number), "SIGKILL");
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const place = median(placeTimes.slice(5));
    const bare = median(spawnTimes.slice(5));
    console.log(`  ${"place -> running, median (ms)".padEnd(48)} ${place.toFixed(2).padStart(10)}`);
    console.log(`  ${"bare spawn, median (ms)".padEnd(48)} ${bare.toFixed(2).padStart(10)}`);
    console.log(`  ${"place / bare spawn (slowdown)".padEnd(48)} ${(place / bare).toFixed(1).padStart(9)}x`);
    // Load-independent: each is one fsync (synchronous=FULL), the floor's "one durable commit".
    console.log(`  ${"durable commits in node.db per place, median".padEnd(48)} ${String(median(placeCommits)).padStart(10)}`);

    console.log("daemon memory");
    const busyRss = rssKiB(daemon.pid as number);
    console.log(`  ${"RSS idle, berth CLI process (MiB)".padEnd(48)} ${(idleRss / 1024).toFixed(1).padStart(10)}`);
    console.log(`  ${"RSS with 100 running instances (MiB)".padEnd(48)} ${(busyRss / 1024).toFixed(1).padStart(10)}`);
    // The same daemon without the rest of the CLI loaded (the command tree also loads the Kubernetes client).
    const leanDir = join(dir, "lean");
    execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", leanDir, "--json"]);
    const lean = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { NodeDaemon } from ${JSON.stringify(resolve("dist/src/mesh/node/daemon.js"))};
         const d = await NodeDaemon.start({ dataDir: ${JSON.stringify(leanDir)}, listen: "127.0.0.1:0", version: "bench", allowRootAgents: true });
         console.log(JSON.stringify({ address: d.address }));`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    // The floor (issue 19): a bare Node process idling, nothing imported, measured the same way after the same settle.
    const bareNode = spawn(process.execPath, ["-e", "console.log('{}'); setInterval(() => {}, 1 << 30);"], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      await readyLine(lean);
      await readyLine(bareNode);
      await new Promise((r) => setTimeout(r, 500));
      const leanRss = rssKiB(lean.pid as number);
      const bareRss = rssKiB(bareNode.pid as number);
      console.log(`  ${"RSS idle, node daemon modules only (MiB)".padEnd(48)} ${(leanRss / 1024).toFixed(1).padStart(10)}`);
      console.log(`  ${"RSS idle, bare `node -e` (MiB)".padEnd(48)} ${(bareRss / 1024).toFixed(1).padStart(10)}`);
      console.log(`  ${"daemon (berth node serve) idle / bare node".padEnd(48)} ${(idleRss / bareRss).toFixed(2).padStart(9)}x  (target: ≤ 45 MiB)`);
      console.log(`  ${"daemon idle above bare node (MiB)".padEnd(48)} ${((idleRss - bareRss) / 1024).toFixed(1).padStart(10)}`);
    } finally {
      lean.kill("SIGKILL");
      bareNode.kill("SIGKILL");
    }
  } finally {
    daemon.kill("SIGKILL");
    echo.kill("SIGKILL");
    for (const pid of pids) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
