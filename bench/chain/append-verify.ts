/**
 * Audit chain throughput (issue 2): signed, persisted appends in transactions of 1 and of 100 events, and stored-chain
 * verification, each as a ratio to raw node:crypto Ed25519 sign/verify measured in the same run.
 * Targets (issue 19): batched append ≥ 60% of raw sign; verify ≥ 50% of raw verify (issue 2).
 */
import { sign, verify } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain } from "../../src/chain/chain.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { createPublicKey } from "node:crypto";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { rate, ratio } from "../support.js";

const dir = mkdtempSync(join(tmpdir(), "berth-bench-chain-"));
const key = signingKeyFromSeed(new Uint8Array(32).fill(3));
const message = Buffer.alloc(51, 7); // the audit signature message is 51 bytes
const signature = sign(null, message, key.privateKey);
const publicKey = createPublicKey(key.privateKey);

console.log("audit chain: append and verify against raw Ed25519 (same run)");
const rawSign = rate("raw Ed25519 sign (51-byte message)", 5000, () => sign(null, message, key.privateKey));
const rawVerify = rate("raw Ed25519 verify", 5000, () => verify(null, message, publicKey, signature));

const db = openDatabase(join(dir, "bench.db"));
const chain = Chain.open(db, key, "controller");
const payload = { phase: "decision", node: "0123456789abcdef0123456789abcdef", score_centi: 8700, reasons: ["arch", "memory"] };
const single = rate("append, 1 event per transaction", 1000, () => {
  withWriteTx(db, (tx) => chain.append(tx, { source: "placement", kind: "workload.place", payload }));
});
const batches = 50;
const batchedPerSecond =
  rate(`append, 100 events per transaction (×${batches})`, batches, () => {
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 100; i++) chain.append(tx, { source: "placement", kind: "workload.place", payload });
    });
  }) * 100;
console.log(`  ${"  = events per second, batched".padEnd(48)} ${batchedPerSecond.toFixed(0).padStart(10)} /s`);
const bigBatch =
  rate("append, 1000 events per transaction (×5)", 5, () => {
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 1000; i++) chain.append(tx, { source: "placement", kind: "workload.place", payload });
    });
  }) * 1000;
console.log(`  ${"  = events per second, batched".padEnd(48)} ${bigBatch.toFixed(0).padStart(10)} /s`);
// The fixed cost every transaction pays here: one durable commit (synchronous=FULL fsyncs the WAL).
db.exec("CREATE TABLE IF NOT EXISTS bench_commit (n INTEGER)");
const commits = rate("bare durable commit (one-row insert)", 200, (i) => {
  withWriteTx(db, (tx) => tx.db.prepare("INSERT INTO bench_commit VALUES (?)").run(i));
});
const events = chain.tip().seq + 1;
const verifyStart = process.hrtime.bigint();
const result = chain.verifyStored();
const verifySeconds = Number(process.hrtime.bigint() - verifyStart) / 1e9;
const verifyRate = events / verifySeconds;
console.log(`  ${`verify stored chain (${events} events, ok=${result.ok})`.padEnd(48)} ${verifyRate.toFixed(0).padStart(10)} /s`);

console.log("ratios");
ratio("append (1/tx) / raw sign", single, rawSign);
ratio("append (100/tx) / raw sign", batchedPerSecond, rawSign, 0.6);
ratio("append (1000/tx) / raw sign", bigBatch, rawSign, 0.6);
console.log(`  ${"durable commits per second (disk-bound)".padEnd(48)} ${commits.toFixed(0).padStart(10)} /s`);
ratio("verify / raw verify", verifyRate, rawVerify, 0.5);
db.close();
rmSync(dir, { recursive: true, force: true });
