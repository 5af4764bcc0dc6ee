/**
 * Node daemon figures (issue 5, issue 19), each against a baseline measured in the same run:
 * - signed `status` round trips per second over loopback vs an unsigned echo over the same framing and the same
 *   transport (TLS 1.3, the default since issue 17): once with one connection per call, once on a warm connection
 *   (the controller's connector keeps one, src/mesh/client/connector.ts); warm, also against a *signed* echo on the
 *   same connection (each round trip signs and verifies a request and a reply with berth's own Ed25519 helpers,
 *   nothing else), because two signs and two verifies alone cost several unsigned echo round trips: that ratio is
 *   berth's own overhead on a signed exchange, the unsigned one is not reachable by any signed protocol;
 * - `place` → running latency vs a bare child_process.spawn of the same entry;
 * - daemon resident memory idle and with 100 running instances, against a bare `node -e` idling in the same run.
 * Figures are printed, never asserted. Run after `npm run build:test` from the repository root (scripts/bench does).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { signTagged, verifyTagged } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { ratio } from "../support.js";

const MAIN = resolve("dist/src/cli/entry/main.js");
// The daemons are started as people start them: the installed `berth` (berth.cjs, no ES module loader, issue 19).
const BERTH = resolve("dist/src/cli/entry/berth.cjs");
const TRANSPORT = resolve("dist/src/mesh/transport/tcp.js");
const TLS = resolve("dist/src/mesh/transport/tls.js");
const KEYS = resolve("dist/src/keys/key-file.js");
const ED25519 = resolve("dist/src/core/crypto/ed25519.js");
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

/** fsync + fdatasync calls of `pid` (all threads) while `fn` runs, or null without a usable strace. */
async function countSyncs(pid: number, fn: () => Promise<void>): Promise<number | null> {
  const out = join(dir, `strace-${pid}-${Date.now()}.txt`);
  const tracer = spawn("strace", ["-f", "-e", "trace=fsync,fdatasync", "-o", out, "-p", String(pid)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const attached = await new Promise<boolean>((res) => {
    let err = "";
    tracer.once("error", () => res(false));
    tracer.once("exit", () => res(false));
    tracer.stderr?.on("data", (c: Buffer) => {
      err += c.toString();
      if (err.includes("attached")) res(true);
    });
    setTimeout(() => res(false), 5000);
  });
  if (!attached) {
    tracer.kill("SIGKILL");
    return null;
  }
  await new Promise((r) => setTimeout(r, 200)); // every thread attached
  await fn();
  const exited = new Promise((r) => tracer.once("exit", r));
  tracer.kill("SIGINT");
  await exited;
  return readFileSync(out, "utf8")
    .split("\n")
    .filter((l) => /\b(fsync|fdatasync)\(/.test(l) && !l.includes("resumed>")).length;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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
  writeFileSync(
    join(nodeDir, "node.json"),
    JSON.stringify({ name: "bench", max_instances: 256, allow_root_agents: true }),
  );
  writeFileSync(
    join(nodeDir, "permits.json"),
    JSON.stringify([{ id: "bench", actions: ["workload.*"], kinds: ["probe"], max_network: "egress" }]),
  );
  const daemon = spawn(
    process.execPath,
    [
      BERTH,
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
    // Its diagnostics (pino-format lines at info) are kept, and shown only if it fails.
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let daemonStderr = "";
  daemon.stderr?.on("data", (c: Buffer) => {
    daemonStderr = (daemonStderr + c.toString()).slice(-8192);
  });
  daemon.once("exit", (code) => {
    if (code !== null && code !== 0) process.stderr.write(`daemon exited ${code}:\n${daemonStderr}\n`);
  });
  // The peer: an echo over the same framing and the same TLS 1.3 channel (its own identity key, authorising the
  // controller's), in its own process like the daemon.
  const echo = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { listenFrames } from ${JSON.stringify(TRANSPORT)};
       import { listenTls } from ${JSON.stringify(TLS)};
       import { generateSigningKey } from ${JSON.stringify(KEYS)};
       const tls = listenTls({ identity: generateSigningKey(), authorised: () => new Set([${JSON.stringify(controller.publicKey)}]) });
       import { signTagged, verifyTagged } from ${JSON.stringify(ED25519)};
       const key = generateSigningKey();
       const dec = new TextDecoder(); const enc = new TextEncoder();
       const answer = (frame) => {
         const m = JSON.parse(dec.decode(frame));
         if (m.sig === undefined) return frame;
         if (!verifyTagged(m.key, "berth.ctl.request.v1", m.payload, m.sig)) throw new Error("bad signature");
         const payload = JSON.stringify({ type: "response", nonce: m.nonce, padding: m.padding });
         return enc.encode(JSON.stringify({ key: key.publicKey, payload, sig: signTagged(key, "berth.ctl.response.v1", payload) }));
       };
       const { address } = await listenFrames("127.0.0.1:0", async (s) => { try { for (;;) { await s.send(answer(await s.recv())); } } catch { s.close(); } }, { tls });
       console.log(JSON.stringify({ address }));`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const pids: number[] = [];
  try {
    const ready = await readyLine(daemon);
    const echoReady = await readyLine(echo);
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

    console.log("node daemon: signed control round trips vs unsigned echo (loopback, TLS 1.3 both)");
    const idleRssEarly = rssKiB(daemon.pid as number);
    const signed = await timed("signed status, a connection per call", 300, async () => {
      const r = await client.call(target, "status", {});
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
    });
    const echoConnector = new TlsConnector({ identity: controller });
    const payload = new TextEncoder().encode(JSON.stringify({ type: "request", padding: "x".repeat(400) }));
    const unsigned = await timed("unsigned echo, a connection per call", 300, async () => {
      const s = await echoConnector.connect(echoReady.address as string);
      await s.send(payload);
      await s.recv();
      s.close();
    });
    ratio("signed status / unsigned echo, per call", signed, unsigned, 0.5);
    const warmConnector = new ControllerConnector({ identity: controller });
    const warmClient = new NodeClient({
      key: controller,
      connector: warmConnector,
      authority: () => ({ store_id: "b".repeat(32), epoch: 0 }),
    });
    const signedWarm = await timed("signed status, one warm connection", 1000, async () => {
      const r = await warmClient.call(target, "status", {});
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
    });
    const kept = await echoConnector.connect(echoReady.address as string);
    const unsignedWarm = await timed("unsigned echo, one kept connection", 1000, async () => {
      await kept.send(payload);
      await kept.recv();
    });
    // The floor of any signed exchange: the same echo, but the request is signed and verified and the reply is
    // signed and verified (two Ed25519 signs and two verifies per round trip, as a status has), with the same key
    // handling as berth (src/core/crypto/ed25519.ts, KeyObjects cached) and nothing else.
    const signedEchoWarm = await timed("signed echo (2 signs + 2 verifies), kept", 1000, async () => {
      const nonce = randomBytes(16).toString("hex");
      const payload = JSON.stringify({ type: "request", nonce, padding: "x".repeat(400) });
      await kept.send(
        encoder.encode(
          JSON.stringify({
            key: controller.publicKey,
            nonce,
            payload,
            sig: signTagged(controller, "berth.ctl.request.v1", payload),
          }),
        ),
      );
      const m = JSON.parse(decoder.decode(await kept.recv())) as { key: string; payload: string; sig: string };
      if (!verifyTagged(m.key, "berth.ctl.response.v1", m.payload, m.sig)) throw new Error("bad echo signature");
    });
    kept.close();
    ratio("signed status / unsigned echo, warm", signedWarm, unsignedWarm, 0.5);
    ratio("signed status / signed echo, warm", signedWarm, signedEchoWarm, 0.5);
    ratio("signed echo / unsigned echo, warm (crypto's share)", signedEchoWarm, unsignedWarm);

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
    // Interleaved (place per call, bare spawn, place warm, ...) so a load drift on the shared machine hits all three.
    const placeTimes: number[] = [];
    const placeWarmTimes: number[] = [];
    const spawnTimes: number[] = [];
    const placeCommits: number[] = [];
    const wal = join(nodeDir, "node.db-wal");
    const bareSpawn = async () => {
      const start = process.hrtime.bigint();
      const child = spawn(join(pkgDir, "run.sh"), [], { detached: true, stdio: "ignore" });
      await new Promise((r) => child.once("spawn", r));
      spawnTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
      process.kill(-(child.pid as number), "SIGKILL");
    };
    for (let i = 0; i < 100; i++) {
      const warm = i % 2 === 1;
      const commitsBefore = walCommits(wal);
      const start = process.hrtime.bigint();
      const r = await (warm ? warmClient : client).call(
        target,
        "place",
        {
          package_id: source.packageId,
          name: `probe-${i}`,
          variant: "any-linux",
          config: { mode: "service", args: [], env: {} },
        },
        { decisionId: i.toString(16).padStart(64, "0"), package: source },
      );
      (warm ? placeWarmTimes : placeTimes).push(Number(process.hrtime.bigint() - start) / 1e6);
      if (r.kind !== "ok") throw new Error(JSON.stringify(r));
      const commitsAfter = walCommits(wal);
      if (commitsAfter >= commitsBefore) placeCommits.push(commitsAfter - commitsBefore);
      pids.push(r.result.pid as number);
      await bareSpawn();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const place = median(placeTimes.slice(3));
    const placeWarm = median(placeWarmTimes.slice(3));
    const bare = median(spawnTimes.slice(5));
    console.log(`  ${"place -> running, a connection per call (ms)".padEnd(48)} ${place.toFixed(2).padStart(10)}`);
    console.log(`  ${"place -> running, warm connection (ms)".padEnd(48)} ${placeWarm.toFixed(2).padStart(10)}`);
    console.log(`  ${"bare spawn, median (ms)".padEnd(48)} ${bare.toFixed(2).padStart(10)}`);
    console.log(
      `  ${"place per call / bare spawn (slowdown)".padEnd(48)} ${(place / bare).toFixed(1).padStart(9)}x  (target ≤ 3x)`,
    );
    console.log(
      `  ${"place warm / bare spawn (slowdown)".padEnd(48)} ${(placeWarm / bare).toFixed(1).padStart(9)}x  (target ≤ 3x)`,
    );
    // Load-independent: each is one fsync (synchronous=FULL), the floor's "one durable commit".
    console.log(
      `  ${"durable commits in node.db per place, median".padEnd(48)} ${String(median(placeCommits)).padStart(10)}`,
    );
    // Issue 19: how many of those commits wait for the disk. Counted with strace (fsync/fdatasync of the daemon) over
    // 10 more places and 20 describes, when strace is there; the figure the floor allows is one per place.
    const synced = await countSyncs(daemon.pid as number, async () => {
      for (let i = 100; i < 110; i++) {
        const r = await warmClient.call(
          target,
          "place",
          {
            package_id: source.packageId,
            name: `probe-${i}`,
            variant: "any-linux",
            config: { mode: "service", args: [], env: {} },
          },
          { decisionId: i.toString(16).padStart(64, "0"), package: source },
        );
        if (r.kind !== "ok") throw new Error(JSON.stringify(r));
        pids.push(r.result.pid as number);
      }
    });
    const describeSynced = await countSyncs(daemon.pid as number, async () => {
      for (let i = 0; i < 20; i++) {
        const d = await client.describe(target.addr, target.key);
        if (d.kind !== "described") throw new Error(JSON.stringify(d));
      }
    });
    warmConnector.closeWarm();
    console.log(
      `  ${"fsyncs by the daemon per place (strace)".padEnd(48)} ${synced === null ? "   no strace" : (synced / 10).toFixed(1).padStart(10)}`,
    );
    console.log(
      `  ${"fsyncs by the daemon per describe (strace)".padEnd(48)} ${describeSynced === null ? "   no strace" : (describeSynced / 20).toFixed(2).padStart(10)}`,
    );
    // What one of them costs on this disk, in this run: a one-row insert committed the way node.db commits.
    const floorDb = openDatabase(join(dir, "commit-floor.db"));
    floorDb.exec("CREATE TABLE t (n INTEGER)");
    const commitTimes: number[] = [];
    for (let i = 0; i < 40; i++) {
      const start = process.hrtime.bigint();
      withWriteTx(floorDb, (tx) => tx.db.prepare("INSERT INTO t VALUES (?)").run(i));
      commitTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    floorDb.close();
    console.log(
      `  ${"one durable commit on this disk, median (ms)".padEnd(48)} ${median(commitTimes.slice(5)).toFixed(2).padStart(10)}`,
    );

    console.log("daemon memory (idle: no request for 30 s, so V8's memory reducer has run in each process)");
    const busyRss = rssKiB(daemon.pid as number);
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
    // A fresh `berth node serve` with no instance, described once, then left alone.
    const idleDir = join(dir, "idle");
    execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", idleDir, "--json"]);
    const idle = spawn(
      process.execPath,
      [BERTH, "node", "serve", "--listen", "127.0.0.1:0", "--data-dir", idleDir, "--controller", controller.publicKey],
      {
        stdio: ["ignore", "pipe", "ignore"],
      },
    );
    // The floor (issue 19): a bare Node process idling, nothing imported, measured the same way after the same settle.
    const bareNode = spawn(process.execPath, ["-e", "console.log('{}'); setInterval(() => {}, 1 << 30);"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await readyLine(lean);
      await readyLine(bareNode);
      const idleReady = await readyLine(idle);
      const d = await new NodeClient({
        key: controller,
        connector: new TlsConnector({ identity: controller }),
        authority: () => ({ store_id: "c".repeat(32), epoch: 0 }),
      }).describe(idleReady.address as string, null);
      if (d.kind !== "described") throw new Error(`describe failed: ${JSON.stringify(d)}`);
      const idleEarly = rssKiB(idle.pid as number);
      await new Promise((r) => setTimeout(r, 30_000));
      const idleRss = rssKiB(idle.pid as number);
      const leanRss = rssKiB(lean.pid as number);
      const bareRss = rssKiB(bareNode.pid as number);
      const mib = (kib: number) => (kib / 1024).toFixed(1).padStart(10);
      console.log(`  ${"RSS, bench daemon after its first describe (MiB)".padEnd(48)} ${mib(idleRssEarly)}`);
      console.log(`  ${"RSS, bench daemon with 100 running instances".padEnd(48)} ${mib(busyRss)}`);
      console.log(`  ${"RSS, idle daemon 0.1 s after its describe (MiB)".padEnd(48)} ${mib(idleEarly)}`);
      console.log(`  ${"RSS idle, berth node serve (MiB)".padEnd(48)} ${mib(idleRss)}`);
      console.log(`  ${"RSS idle, node daemon modules only (MiB)".padEnd(48)} ${mib(leanRss)}`);
      console.log(`  ${"RSS idle, bare `node -e` (MiB)".padEnd(48)} ${mib(bareRss)}`);
      console.log(
        `  ${"berth node serve idle / bare node".padEnd(48)} ${(idleRss / bareRss).toFixed(2).padStart(9)}x  (target: ≤ 45 MB = 42.9 MiB)`,
      );
      console.log(`  ${"berth node serve idle above bare node (MiB)".padEnd(48)} ${mib(idleRss - bareRss)}`);
    } finally {
      lean.kill("SIGKILL");
      idle.kill("SIGKILL");
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
