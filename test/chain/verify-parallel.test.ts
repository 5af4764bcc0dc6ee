/**
 * Issue 35: `berth audit verify` on a stored chain verifies segments in worker threads and links them afterwards.
 * Whatever is wrong with the chain, the parallel verifier names the same first bad event, with the same code and
 * detail, as the sequential walk (`verifyStoredChain`), including defects at and across segment boundaries. The
 * workers run the compiled verifier (dist/, built by the test command), as `berth audit verify` does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Chain, verifyStoredChain } from "../../src/chain/chain.js";
import type { VerifyResult } from "../../src/core/chain/verify.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { type Db, openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { builtPath } from "../support/built.js";

type Parallel = typeof import("../../src/chain/verify-parallel.js");
const loadParallel = async (): Promise<Parallel> =>
  (await import(builtPath("src/chain/verify-parallel.js"))) as Parallel;

let dir: string;
let path: string;
let db: Db;
const key = signingKeyFromSeed(new Uint8Array(32).fill(5));
let chainId: string;

/** A fresh 400-event chain in its own file. */
function freshChain(): void {
  dir = mkdtempSync(join(tmpdir(), "berth-verify-parallel-"));
  path = join(dir, "state.db");
  db = openDatabase(path);
  let now = 1_767_225_600_000;
  const chain = Chain.open(db, key, "controller", () => (now += 7));
  withWriteTx(db, (tx) => {
    for (let i = 1; i < 400; i++)
      chain.append(tx, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "decision", n: i, node: `node-${i % 13}` },
      });
  });
  chainId = chain.chainId;
}
function dropChain(): void {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
beforeEach(freshChain);
afterEach(dropChain);

/** Both verifiers over the stored chain: 50-event segments on two workers, and the sequential walk. */
async function both(opts: { key?: string } = {}): Promise<{ parallel: VerifyResult; sequential: VerifyResult }> {
  const { verifyStoredChainParallel } = await loadParallel();
  const parallel = await verifyStoredChainParallel(path, chainId, {
    ...opts,
    workers: 2,
    segmentEvents: 50,
    minEvents: 0,
  });
  const sequential = verifyStoredChain(db, chainId, opts);
  return { parallel, sequential };
}

/** Someone with write access to the file (the append-only triggers are defence in depth, spec §7). */
function tamper(sql: string, ...args: unknown[]): void {
  db.exec("DROP TRIGGER IF EXISTS audit_event_no_update; DROP TRIGGER IF EXISTS audit_event_no_delete");
  db.prepare(sql).run(...args);
}

describe("the parallel verifier of a stored chain", () => {
  it("verifies an intact chain in segments with the sequential walk's result", async () => {
    const { parallel, sequential } = await both({ key: key.publicKey });
    expect(parallel).toEqual(sequential);
    expect(parallel).toMatchObject({ ok: true, events: 400, head: { seq: 399 } });
  });

  it("names the same first bad event as the sequential walk, inside a segment, at its first or last event, and across one", async () => {
    const cases: Array<[string, () => void, number]> = [
      [
        "a payload inside a segment",
        () =>
          tamper(
            "UPDATE audit_event SET payload = replace(payload, '\"n\":237', '\"n\":238') WHERE chain_id = ? AND seq = 237",
            chainId,
          ),
        237,
      ],
      [
        "the first event of a segment links elsewhere",
        () => tamper("UPDATE audit_event SET prev_hash = ? WHERE chain_id = ? AND seq = 251", "0".repeat(64), chainId),
        251,
      ],
      [
        "the last event of a segment has another hash",
        () => tamper("UPDATE audit_event SET hash = ? WHERE chain_id = ? AND seq = 250", "f".repeat(64), chainId),
        250,
      ],
      [
        "an event missing at a segment's end",
        () => tamper("DELETE FROM audit_event WHERE chain_id = ? AND seq = 300", chainId),
        300,
      ],
      [
        "a signature in the last segment",
        () => tamper("UPDATE audit_event SET sig = ? WHERE chain_id = ? AND seq = 398", "0".repeat(128), chainId),
        398,
      ],
    ];
    for (const [what, breakIt, seq] of cases) {
      // Each case on a fresh chain.
      dropChain();
      freshChain();
      breakIt();
      const { parallel, sequential } = await both({ key: key.publicKey });
      expect(sequential.failure?.seq, what).toBe(seq);
      expect(parallel.ok, what).toBe(false);
      expect(parallel.failure, what).toEqual(sequential.failure);
    }
  });

  it("fails against a checkpoint beyond the chain's end and an expected head of another hash, as the walk does", async () => {
    const { verifyStoredChainParallel } = await loadParallel();
    const options = { workers: 2, segmentEvents: 64, minEvents: 0 };
    const fork = { seq: 120, hash: "a".repeat(64) };
    const parallel = await verifyStoredChainParallel(path, chainId, {
      ...options,
      key: key.publicKey,
      expectHead: fork,
    });
    expect(parallel.failure).toEqual(verifyStoredChain(db, chainId, { key: key.publicKey, expectHead: fork }).failure);
    expect(parallel.failure?.code).toBe("fork");
    const beyond = { seq: 500, hash: "a".repeat(64) };
    const truncated = await verifyStoredChainParallel(path, chainId, {
      ...options,
      key: key.publicKey,
      expectHead: beyond,
    });
    expect(truncated.failure).toMatchObject({ code: "truncated", seq: 400 });
  });
});
