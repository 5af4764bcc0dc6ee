/**
 * The chain's Merkle tree (issue 38), figures against floors measured in the same run:
 *
 * 1. Append with the tree: a signed, persisted append (transactions of 100 events) with, in the same transaction, the
 *    complete-subtree hashes the event closes from level 4 up (core/chain/tree-hashes.ts: one per 16 events on
 *    average; the levels below are rehashed from the event hashes when a proof needs them) inserted into a table
 *    beside the chain, against the same append without them, alternated round by round. Target (issue 38):
 *    with the tree ≥ 90 % of the rate without. The append path of the store does not write the tree yet: this
 *    measures what it would add (the same inserts, in the same transaction, on the same SQLite file).
 * 2. At 1,000,000 events (and 1k, 10k, 100k, to show the growth): the tree built in memory from stored hashes, then
 *    inclusion and consistency proofs built from it (O(log n) stored hashes) and verified (RFC 9162), each against
 *    the raw floor of one SHA-256 node hash times the proof's length; and one proof built by rehashing every leaf
 *    (merkle.ts's list functions, O(n)), which is what `berth audit prove` does today.
 *
 * `--events N` changes the largest size (default 1,000,000).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain } from "../../src/chain/chain.js";
import { type Hash, inclusionProof, leafHash, nodeHash, verifyConsistency, verifyInclusion } from "../../src/core/chain/merkle.js";
import { consistencyProofFrom, inclusionProofFrom, STORED_FROM_LEVEL, storedHashesFor, tiledReader, treeHeadFrom } from "../../src/core/chain/tree-hashes.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { numberFlag, ratio } from "../support.js";

const largest = numberFlag("--events", 1_000_000);
const dir = mkdtempSync(join(tmpdir(), "berth-bench-merkle-"));
const key = signingKeyFromSeed(new Uint8Array(32).fill(5));
const payload = { phase: "decision", node: "0123456789abcdef0123456789abcdef", score_centi: 8700, reasons: ["arch", "memory"] };

console.log("audit chain Merkle tree: append with the stored subtree hashes, proofs at scale (same run floors)");

// -- 1. append with and without the tree ------------------------------------------------------------------------
function appendRates(rounds: number, perTx: number): { plain: number; tree: number } {
  const plainDb = openDatabase(join(dir, "plain.db"));
  const treeDb = openDatabase(join(dir, "tree.db"));
  const plain = Chain.open(plainDb, key, "controller");
  const tree = Chain.open(treeDb, key, "controller");
  treeDb.exec("CREATE TABLE audit_tree (chain_id TEXT NOT NULL, level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (chain_id, level, idx)) WITHOUT ROWID");
  const insert = treeDb.prepare("INSERT INTO audit_tree (chain_id, level, idx, hash) VALUES (?,?,?,?)");
  // The frontier: the last stored hash of each level, all a new leaf's left siblings can be (kept in memory, as the
  // store would keep it per open chain; rebuilt at open from O(log n) rows).
  const frontier: Hash[] = [];
  const read = (level: number) => frontier[level] as Hash;
  // The genesis event, appended by Chain.open, is leaf 0.
  const genesis = treeDb.prepare("SELECT chain_id, hash FROM audit_event WHERE seq = 0").get() as { chain_id: string; hash: string };
  for (const s of storedHashesFor(0, leafHash(genesis.hash), read)) frontier[s.level] = s.hash;
  const one = (withTree: boolean) => () => {
    const db = withTree ? treeDb : plainDb;
    const chain = withTree ? tree : plain;
    withWriteTx(db, (tx) => {
      for (let i = 0; i < perTx; i++) {
        const e = chain.append(tx, { source: "placement", kind: "workload.place", payload });
        if (!withTree) continue;
        for (const s of storedHashesFor(e.seq, leafHash(e.hash), read)) {
          // Levels below the tiles are rehashed from the event hashes when a proof needs them (tiledReader).
          if (s.level >= STORED_FROM_LEVEL) insert.run(e.chain_id, s.level, s.index, s.hash);
          frontier[s.level] = s.hash;
        }
      }
    });
  };
  const a = one(false);
  const b = one(true);
  for (let r = 0; r < 5; r++) {
    a();
    b();
  }
  let plainNs = 0n;
  let treeNs = 0n;
  for (let r = 0; r < rounds; r++) {
    // ABBA within each pair of rounds, so neither side always runs first after the other's fsync.
    for (const [fn, side] of r % 2 === 0 ? ([[a, "p"], [b, "t"]] as const) : ([[b, "t"], [a, "p"]] as const)) {
      const t0 = process.hrtime.bigint();
      fn();
      const dt = process.hrtime.bigint() - t0;
      if (side === "p") plainNs += dt;
      else treeNs += dt;
    }
  }
  plainDb.close();
  treeDb.close();
  const events = rounds * perTx;
  return { plain: events / (Number(plainNs) / 1e9), tree: events / (Number(treeNs) / 1e9) };
}

const rates = appendRates(numberFlag("--rounds", 60), 100);
console.log(`  append, transactions of 100, without the tree     ${rates.plain.toFixed(0).padStart(10)} /s`);
console.log(`  append, transactions of 100, with the tree         ${rates.tree.toFixed(0).padStart(10)} /s`);
ratio("with the tree / without", rates.tree, rates.plain, 0.9);

// -- 2. proofs at scale ----------------------------------------------------------------------------------------
const sha = (i: number) => createHash("sha256").update(`event ${i}`).digest();
const stored = new Map<number, Hash>();
const keyOf = (level: number, index: number) => index * 32 + level;
let reads = 0;
const readStored = (level: number, index: number) => {
  reads++;
  return stored.get(keyOf(level, index)) as Hash;
};
// What a proof reads below the tiles: leaf hashes, as the store would rehash them from audit_event's hashes.
let leafReads = 0;
const read = tiledReader(readStored, (start, count) => {
  leafReads += count;
  return leafList.slice(start, start + count);
});
// While building, the new leaf's left siblings come from the frontier (every level, in memory).
const frontier: Hash[] = [];

// The raw floor: one RFC 6962 node hash (65 bytes hashed), the unit every proof step costs.
const a = sha(1);
const b = sha(2);
let floorNs = 0;
{
  const n = 200_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) nodeHash(a, b);
  floorNs = Number(process.hrtime.bigint() - t0) / n;
}
console.log(`  raw floor: one node hash (SHA-256 of 65 bytes)      ${floorNs.toFixed(0).padStart(10)} ns`);

const leafList: Hash[] = [];
let built = 0;
const buildStart = process.hrtime.bigint();
const checkpoints = [1_000, 10_000, 100_000, largest].filter((n, i, all) => n <= largest && all.indexOf(n) === i);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
let rng = 38;
const random = (below: number) => {
  rng = (rng * 1103515245 + 12345) % 2 ** 31;
  return rng % below;
};
for (const size of checkpoints) {
  for (; built < size; built++) {
    const leaf = leafHash(sha(built).toString("hex"));
    leafList.push(leaf);
    for (const s of storedHashesFor(built, leaf, (level) => frontier[level] as Hash)) {
      frontier[s.level] = s.hash;
      if (s.level >= STORED_FROM_LEVEL) stored.set(keyOf(s.level, s.index), s.hash);
    }
  }
  const root = treeHeadFrom(read, size);
  const samples = 500;
  const incNs: number[] = [];
  const incReads: number[] = [];
  const incLeaves: number[] = [];
  const incLen: number[] = [];
  const verNs: number[] = [];
  const conNs: number[] = [];
  const conLen: number[] = [];
  const conVerNs: number[] = [];
  for (let s = 0; s < samples; s++) {
    const index = random(size);
    reads = 0;
    leafReads = 0;
    let t0 = process.hrtime.bigint();
    const path = inclusionProofFrom(read, index, size);
    incNs.push(Number(process.hrtime.bigint() - t0));
    incReads.push(reads);
    incLeaves.push(leafReads);
    incLen.push(path.length);
    t0 = process.hrtime.bigint();
    const ok = verifyInclusion(leafList[index] as Hash, index, size, path, root);
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
  const floorOf = (len: number[]) => mean(len) * floorNs;
  const us = (ns: number) => `${(ns / 1000).toFixed(1)} µs`;
  console.log(`  n = ${size.toLocaleString("en")} (log2 n = ${Math.log2(size).toFixed(1)})`);
  console.log(`    inclusion: build ${us(mean(incNs))} (${mean(incReads).toFixed(1)} stored hashes and ${mean(incLeaves).toFixed(1)} leaf hashes read), verify ${us(mean(verNs))}; path ${mean(incLen).toFixed(1)} hashes, raw floor ${us(floorOf(incLen))}`);
  console.log(`    consistency: build ${us(mean(conNs))}, verify ${us(mean(conVerNs))}; proof ${mean(conLen).toFixed(1)} hashes, raw floor ${us(floorOf(conLen))}`);
}
const tree = (Number(process.hrtime.bigint() - buildStart) / 1e9).toFixed(1);
console.log(`  (tree of ${largest.toLocaleString("en")} leaves built in memory with its ${stored.size.toLocaleString("en")} stored hashes, proofs included: ${tree} s)`);
{
  const t0 = process.hrtime.bigint();
  inclusionProof(leafList, random(largest), largest);
  console.log(`  one inclusion proof rehashing every leaf (O(n), today's berth audit prove) at n = ${largest.toLocaleString("en")}: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms`);
}
rmSync(dir, { recursive: true, force: true });
