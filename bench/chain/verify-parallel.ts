/**
 * `berth audit verify` across cores (issue 35): a stored chain of `--events` (default 1,000,000) signed events,
 * verified by the parallel verifier (src/chain/verify-parallel.ts: segments in worker threads, linked after) and, with
 * `--sequential`, by the one-thread walk, each against raw node:crypto Ed25519 verify measured in the same run.
 * Target: ≥ 90 % of a raw verify per core (events per CPU-second of the whole process, its workers included, over raw
 * verifies per CPU-second of one thread), and parallel across cores (wall-clock speed-up over one thread).
 *
 *   npm run build:test && node dist/bench/chain/verify-parallel.js [--events 1000000] [--workers N] [--sequential]
 *
 * The chain is made quickly and honestly: every event is sealed as `Chain.append` seals it (payload hash, header hash
 * over the previous hash), the hash chain computed here in order, the signatures made in worker threads (a signature
 * depends only on its event's hash), and the rows inserted in large transactions without fsync. It verifies under
 * the key, as any chain does.
 */
import { createPublicKey, sign, verify } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { Chain, verifyStoredChain } from "../../src/chain/chain.js";
import { catchUpTree } from "../../src/chain/tree-store.js";
import { verifyStoredChainParallel } from "../../src/chain/verify-parallel.js";
import { eventHashOf, payloadHashOf } from "../../src/core/chain/event.js";
import { canonicalJson } from "../../src/core/crypto/canonical.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { numberFlag } from "../support.js";

const EVENTS = numberFlag("--events", 1_000_000);
const WORKERS = numberFlag("--workers", availableParallelism());
const SEQUENTIAL = process.argv.includes("--sequential");

const cpuSeconds = (since?: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1e6;
};

/** Raw Ed25519 verifies of a 51-byte message per CPU-second of this thread (the floor per core). */
function rawVerifyPerCpuSecond(): number {
  const key = signingKeyFromSeed(new Uint8Array(32).fill(3));
  const message = Buffer.alloc(51, 7);
  const signature = sign(null, message, key.privateKey);
  const publicKey = createPublicKey(key.privateKey);
  for (let i = 0; i < 500; i++) verify(null, message, publicKey, signature);
  const c0 = process.cpuUsage();
  let n = 0;
  while (cpuSeconds(c0) < 2) {
    for (let i = 0; i < 200; i++) verify(null, message, publicKey, signature);
    n += 200;
  }
  return n / cpuSeconds(c0);
}

/** Signs the event hashes in worker threads: TAG("berth.audit.sig.v1") ‖ RAW(hash), as signEventHash does. */
async function signAll(pkcs8: Buffer, hashes: readonly string[], workers: number): Promise<string[]> {
  const code = `
    const { parentPort, workerData } = require("node:worker_threads");
    const { createPrivateKey, sign } = require("node:crypto");
    const key = createPrivateKey({ key: Buffer.from(workerData.pkcs8), format: "der", type: "pkcs8" });
    const prefix = Buffer.from("berth.audit.sig.v1\\u0000", "utf8");
    const message = Buffer.alloc(prefix.length + 32); prefix.copy(message);
    parentPort.postMessage(workerData.hashes.map((h) => { message.write(h, prefix.length, 32, "hex"); return sign(null, message, key).toString("hex"); }));`;
  const per = Math.ceil(hashes.length / workers);
  const parts = await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const slice = hashes.slice(w * per, (w + 1) * per);
      return new Promise<string[]>((resolve, reject) => {
        const worker = new Worker(code, { eval: true, workerData: { pkcs8, hashes: slice } });
        worker.once("message", (sigs: string[]) => {
          resolve(sigs);
          void worker.terminate();
        });
        worker.once("error", reject);
      });
    }),
  );
  return parts.flat();
}

async function makeChain(path: string, events: number): Promise<{ chainId: string; publicKey: string }> {
  const key = signingKeyFromSeed(new Uint8Array(32).fill(11));
  const db = openDatabase(path);
  const chain = Chain.open(db, key, "controller", () => 1_767_225_600_000);
  const genesis = chain.tip();
  db.pragma("synchronous = OFF");
  const insert = db.prepare(
    "INSERT INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
  );
  const pkcs8 = key.privateKey.export({ format: "der", type: "pkcs8" });
  const batch = 100_000;
  let prev = genesis.hash;
  for (let from = 1; from < events; from += batch) {
    const rows: Array<[number, number, string, string, string, string, string]> = [];
    for (let seq = from; seq < Math.min(events, from + batch); seq++) {
      const ts = 1_767_225_600_000 + seq * 10;
      // A decision-sized payload, different per event, as a busy controller's chain holds.
      const payload = canonicalJson({
        phase: "placed",
        decision_id: payloadHashOf(String(seq)),
        node: (seq * 7919).toString(16).padStart(32, "0"),
        instance_id: `agent-${seq}`,
        attempt: seq % 3,
      });
      const payload_hash = payloadHashOf(payload);
      const hash = eventHashOf({
        chain_id: chain.chainId,
        kind: "workload.place",
        payload_hash,
        prev_hash: prev,
        seq,
        source: "placement",
        ts,
      });
      rows.push([seq, ts, prev, payload, payload_hash, hash, ""]);
      prev = hash;
    }
    const sigs = await signAll(
      pkcs8,
      rows.map((r) => r[5]),
      WORKERS,
    );
    db.transaction(() => {
      for (const [i, [seq, ts, prevHash, payload, payloadHash, hash]] of rows.entries())
        insert.run(
          chain.chainId,
          seq,
          ts,
          prevHash,
          "placement",
          "workload.place",
          payload,
          payloadHash,
          hash,
          sigs[i],
        );
    })();
  }
  // The chain's Merkle tree (issue 38), as each append writes it; verify checks the stored tree against the events.
  db.transaction(() => catchUpTree(db, chain.chainId))();
  db.pragma("synchronous = FULL");
  db.close();
  return { chainId: chain.chainId, publicKey: key.publicKey };
}

const dir = mkdtempSync(join(tmpdir(), "berth-bench-verify-"));
try {
  const path = join(dir, "chain.db");
  console.log(
    `audit verify across cores: ${EVENTS.toLocaleString("en")} events, ${WORKERS} workers, ${availableParallelism()} cpus, load average ${loadavg()[0]?.toFixed(1)}`,
  );
  const t0 = performance.now();
  const { chainId, publicKey } = await makeChain(path, EVENTS);
  console.log(
    `  chain made (hash chain in order, signatures in ${WORKERS} threads) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  const rawBefore = rawVerifyPerCpuSecond();
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const parallel = await verifyStoredChainParallel(path, chainId, { key: publicKey, workers: WORKERS });
  const wall = (performance.now() - w0) / 1000;
  const cpu = cpuSeconds(c0);
  const rawAfter = rawVerifyPerCpuSecond();
  const raw = (rawBefore + rawAfter) / 2;
  if (!parallel.ok) throw new Error(`the generated chain did not verify: ${JSON.stringify(parallel.failure)}`);
  const perCpu = EVENTS / cpu;
  console.log(
    `  raw Ed25519 verify, one thread                   ${raw.toFixed(0).padStart(10)} /CPU-s   (before ${rawBefore.toFixed(0)}, after ${rawAfter.toFixed(0)})`,
  );
  console.log(
    `  parallel verify                                  ${(EVENTS / wall).toFixed(0).padStart(10)} /s wall   ${perCpu.toFixed(0)} /CPU-s   (${wall.toFixed(1)} s wall, ${cpu.toFixed(1)} CPU-s)`,
  );
  const perCore = perCpu / raw;
  console.log(
    `  parallel verify per core / raw verify per core   ${(perCore * 100).toFixed(1).padStart(9)}%  (target ≥ 90%: ${perCore >= 0.9 ? "met" : "NOT met"})`,
  );
  console.log(
    `  parallel verify wall / (raw verify × ${WORKERS} cores)     ${((EVENTS / wall / (raw * WORKERS)) * 100).toFixed(1).padStart(9)}%  (on a shared machine the cores are not all ours)`,
  );
  if (SEQUENTIAL) {
    const db = openDatabase(path, { readonly: true });
    const s0 = process.cpuUsage();
    const sw = performance.now();
    const sequential = verifyStoredChain(db, chainId, { key: publicKey });
    const swall = (performance.now() - sw) / 1000;
    const scpu = cpuSeconds(s0);
    db.close();
    console.log(
      `  sequential verify (one thread)                   ${(EVENTS / swall).toFixed(0).padStart(10)} /s wall   ${(EVENTS / scpu).toFixed(0)} /CPU-s   ok=${sequential.ok}`,
    );
    console.log(
      `  sequential per core / raw verify per core        ${((EVENTS / scpu / raw) * 100).toFixed(1).padStart(9)}%`,
    );
    console.log(`  speed-up, parallel over sequential (wall)        ${(swall / wall).toFixed(2).padStart(9)}×`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
