/**
 * The chain's Merkle tree as the store keeps it (issue 38; src/chain/tree-store.ts), figures against floors measured
 * in the same run:
 *
 * 1. Append with the tree: `Chain.append` (signed, persisted, transactions of 100 events; its stored tree rows written
 *    in the same transaction) against the no-tree floor, the same append without the tree (seal, sign, insert the
 *    event row: what `Chain.append` did before issue 38), alternated ABBA round by round on two files. Timed
 *    checkpoints are off on both sides (a checkpoint is an event of its own, measured apart). Target (issue 38): with
 *    the tree ≥ 90 % of the rate without.
 * 2. Proofs from the stored tree at 1,000, 10,000, 100,000 and 1,000,000 events (prefixes of one stored chain of
 *    synthetic event rows whose tree is built by the store's own catch-up): inclusion and consistency proofs built
 *    through SQL reads of `audit_tree` (StoredChainTree), and verified (RFC 9162), each against the raw floor of one
 *    SHA-256 node hash times the proof's length. The exponent k of time ∝ n^k fitted across the sizes says how they
 *    grow (O(log n): k near 0; O(n): k near 1). One proof built by rehashing every leaf (what berth did before the
 *    tree was stored) at the largest size, for scale.
 *
 * `--events N` changes the largest size (default 1,000,000); `--rounds R` the append rounds (default 60).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, INSERT_EVENT } from "../../src/chain/chain.js";
import { StoredChainTree } from "../../src/chain/tree-reader.js";
import { catchUpTree } from "../../src/chain/tree-store.js";
import { type ChainTip, sealEvent } from "../../src/core/chain/event.js";
import {
  type Hash,
  inclusionProof,
  leafHash,
  nodeHash,
  verifyConsistency,
  verifyInclusion,
} from "../../src/core/chain/merkle.js";
import { consistencyProofFrom, inclusionProofFrom, treeHeadFrom } from "../../src/core/chain/tree-hashes.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { numberFlag, ratio } from "../support.js";

const largest = numberFlag("--events", 1_000_000);
const dir = mkdtempSync(join(tmpdir(), "berth-bench-merkle-"));
const key = signingKeyFromSeed(new Uint8Array(32).fill(5));
const payload = {
  phase: "decision",
  node: "0123456789abcdef0123456789abcdef",
  score_centi: 8700,
  reasons: ["arch", "memory"],
};
const NO_TIMED_CHECKPOINTS = { everyEvents: 1_000_000_000, everyMs: 600_000 };

console.log(
  "audit chain Merkle tree kept by the store: append with it against the no-tree floor, proofs from it at scale",
);

// -- 1. append with and without the tree ------------------------------------------------------------------------
function appendRates(rounds: number, perTx: number): { plain: number; tree: number } {
  const plainDb = openDatabase(join(dir, "plain.db"));
  const treeDb = openDatabase(join(dir, "tree.db"));
  // The floor's file has the same schema (Chain.open makes it); its events are appended without the tree.
  const floorChain = Chain.open(plainDb, key, "controller", Date.now, NO_TIMED_CHECKPOINTS);
  const tree = Chain.open(treeDb, key, "controller", Date.now, NO_TIMED_CHECKPOINTS);
  const insert = plainDb.prepare(INSERT_EVENT);
  let tip = floorChain.tip() as ChainTip;
  const floor = () =>
    withWriteTx(plainDb, () => {
      for (let i = 0; i < perTx; i++) {
        const { event, canonicalPayload } = sealEvent({
          chainId: floorChain.chainId,
          tip,
          nowMs: Date.now(),
          draft: { source: "placement", kind: "workload.place", payload },
          key,
        });
        insert.run(
          event.chain_id,
          event.seq,
          event.ts,
          event.prev_hash,
          event.source,
          event.kind,
          canonicalPayload,
          event.payload_hash,
          event.hash,
          event.sig,
        );
        tip = { seq: event.seq, hash: event.hash, ts: event.ts };
      }
    });
  const withTree = () =>
    withWriteTx(treeDb, (tx) => {
      for (let i = 0; i < perTx; i++) tree.append(tx, { source: "placement", kind: "workload.place", payload });
    });
  for (let r = 0; r < 5; r++) {
    floor();
    withTree();
  }
  let plainNs = 0n;
  let treeNs = 0n;
  for (let r = 0; r < rounds; r++) {
    // ABBA within each pair of rounds, so neither side always runs first after the other's fsync.
    for (const [fn, side] of r % 2 === 0
      ? ([
          [floor, "p"],
          [withTree, "t"],
        ] as const)
      : ([
          [withTree, "t"],
          [floor, "p"],
        ] as const)) {
      const t0 = process.hrtime.bigint();
      fn();
      const dt = process.hrtime.bigint() - t0;
      if (side === "p") plainNs += dt;
      else treeNs += dt;
    }
  }
  const rows = (treeDb.prepare("SELECT COUNT(*) AS n FROM audit_tree").get() as { n: number }).n;
  const events = (treeDb.prepare("SELECT COUNT(*) AS n FROM audit_event").get() as { n: number }).n;
  console.log(
    `  stored tree rows: ${rows} for ${events} events (${(events / Math.max(rows, 1)).toFixed(1)} events per row)`,
  );
  plainDb.close();
  treeDb.close();
  const n = rounds * perTx;
  return { plain: n / (Number(plainNs) / 1e9), tree: n / (Number(treeNs) / 1e9) };
}

const rates = appendRates(numberFlag("--rounds", 60), 100);
console.log(`  append, transactions of 100, no-tree floor              ${rates.plain.toFixed(0).padStart(10)} /s`);
console.log(`  append, transactions of 100, Chain.append with the tree ${rates.tree.toFixed(0).padStart(10)} /s`);
ratio("with the tree / the no-tree floor", rates.tree, rates.plain, 0.9);

// -- 2. proofs from the stored tree at scale ------------------------------------------------------------------
const sha = (i: number) => createHash("sha256").update(`event ${i}`).digest("hex");
const chainId = "38".repeat(16);
const big = openDatabase(join(dir, "big.db"));
Chain.open(big, key, "controller", Date.now, NO_TIMED_CHECKPOINTS); // the schema; its own chain is not used below
{
  const t0 = process.hrtime.bigint();
  withWriteTx(big, (tx) => {
    tx.db
      .prepare("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,0,?)")
      .run(chainId, key.publicKey, "controller", 0);
    const insert = tx.db.prepare(INSERT_EVENT);
    const zero = "0".repeat(64);
    for (let i = 0; i < largest; i++)
      insert.run(chainId, i, i, zero, "bench", "bench.event", "{}", zero, sha(i), "0".repeat(128));
  });
  const t1 = process.hrtime.bigint();
  withWriteTx(big, (tx) => catchUpTree(tx.db, chainId));
  const t2 = process.hrtime.bigint();
  console.log(
    `  ${largest.toLocaleString("en")} synthetic event rows stored in ${(Number(t1 - t0) / 1e9).toFixed(1)} s; their tree built once by the store's catch-up (the v3 migration's path) in ${(Number(t2 - t1) / 1e9).toFixed(1)} s`,
  );
}

// The raw floor: one RFC 6962 node hash (65 bytes hashed), the unit every proof step costs.
const a = Buffer.from(sha(1), "hex");
const b = Buffer.from(sha(2), "hex");
let floorNs = 0;
{
  // The fastest of 200 rounds of 1,000: a floor is what the hash costs when the process is not descheduled (on a
  // shared machine a long loop is mostly waiting for a core), as the proofs' short medians mostly are.
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < 200; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 1_000; i++) nodeHash(a, b);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1_000);
  }
  floorNs = best;
}
console.log(`  raw floor: one node hash (SHA-256 of 65 bytes)      ${floorNs.toFixed(0).padStart(10)} ns`);

const stored = new StoredChainTree(big, chainId);
// Count what a proof reads: stored rows and event hashes (below the stored levels).
let reads = 0;
const read = (level: number, index: number) => {
  reads++;
  return stored.read(level, index);
};
const sizes = [1_000, 10_000, 100_000, largest].filter((n, i, all) => n <= largest && all.indexOf(n) === i);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
// Medians for times: on a shared machine a few descheduled samples would otherwise decide the figure.
const median = (xs: number[]) => {
  const sorted = [...xs].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
let rng = 38;
const random = (below: number) => {
  rng = (rng * 1103515245 + 12345) % 2 ** 31;
  return rng % below;
};
const us = (ns: number) => `${(ns / 1000).toFixed(1)} µs`;
const series: Record<"incBuild" | "incVerify" | "conBuild" | "conVerify", number[]> = {
  incBuild: [],
  incVerify: [],
  conBuild: [],
  conVerify: [],
};
for (const size of sizes) {
  const root = treeHeadFrom(read, size);
  const samples = 400;
  const incNs: number[] = [];
  const incReads: number[] = [];
  const incLen: number[] = [];
  const verNs: number[] = [];
  const conNs: number[] = [];
  const conLen: number[] = [];
  const conVerNs: number[] = [];
  for (let s = 0; s < samples; s++) {
    const index = random(size);
    reads = 0;
    let t0 = process.hrtime.bigint();
    const path = inclusionProofFrom(read, index, size);
    incNs.push(Number(process.hrtime.bigint() - t0));
    incReads.push(reads);
    incLen.push(path.length);
    const leaf = leafHash(sha(index));
    t0 = process.hrtime.bigint();
    const ok = verifyInclusion(leaf, index, size, path, root);
    verNs.push(Number(process.hrtime.bigint() - t0));
    if (!ok) throw new Error(`inclusion proof of ${index} in ${size} does not verify`);
    const old = 1 + random(size - 1);
    t0 = process.hrtime.bigint();
    const proof = consistencyProofFrom(read, old, size);
    conNs.push(Number(process.hrtime.bigint() - t0));
    conLen.push(proof.length);
    const oldRoot = treeHeadFrom(read, old);
    t0 = process.hrtime.bigint();
    const consistent = verifyConsistency(old, size, proof, oldRoot, root);
    conVerNs.push(Number(process.hrtime.bigint() - t0));
    if (!consistent) throw new Error(`consistency ${old} → ${size} does not verify`);
  }
  series.incBuild.push(median(incNs));
  series.incVerify.push(median(verNs));
  series.conBuild.push(median(conNs));
  series.conVerify.push(median(conVerNs));
  const floorOf = (len: number[]) => mean(len) * floorNs;
  console.log(`  n = ${size.toLocaleString("en")} (log2 n = ${Math.log2(size).toFixed(1)})`);
  console.log(
    `    inclusion (median): build ${us(median(incNs))} (${mean(incReads).toFixed(1)} stored subtrees read), verify ${us(median(verNs))}; path ${mean(incLen).toFixed(1)} hashes, raw floor ${us(floorOf(incLen))}`,
  );
  console.log(
    `    consistency (median): build ${us(median(conNs))}, verify ${us(median(conVerNs))}; proof ${mean(conLen).toFixed(1)} hashes, raw floor ${us(floorOf(conLen))}`,
  );
}

/** Least-squares slope of log(time) against log(n): time ∝ n^k. */
function exponent(times: number[]): number {
  const xs = sizes.map((n) => Math.log(n));
  const ys = times.map((t) => Math.log(t));
  const mx = mean(xs);
  const my = mean(ys);
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return num / den;
}
const logGrowth = Math.log2(largest) / Math.log2(sizes[0] as number);
console.log(
  `  fitted exponent k (time ∝ n^k, n = ${sizes.map((n) => n.toLocaleString("en")).join(", ")}): inclusion build ${exponent(series.incBuild).toFixed(3)}, verify ${exponent(series.incVerify).toFixed(3)}; consistency build ${exponent(series.conBuild).toFixed(3)}, verify ${exponent(series.conVerify).toFixed(3)} (O(log n) here: log2 n grows ${logGrowth.toFixed(1)}× over the sizes, n ${(largest / (sizes[0] as number)).toLocaleString("en")}×; O(n) would be k = 1)`,
);
{
  const leaves = (
    big.prepare("SELECT hash FROM audit_event WHERE chain_id = ? ORDER BY seq").pluck().all(chainId) as string[]
  ).map(leafHash) as Hash[];
  const t0 = process.hrtime.bigint();
  inclusionProof(leaves, random(largest), largest);
  console.log(
    `  one inclusion proof rehashing every leaf (O(n), before the tree was stored) at n = ${largest.toLocaleString("en")}: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms (leaves already in memory)`,
  );
}
big.close();
rmSync(dir, { recursive: true, force: true });
