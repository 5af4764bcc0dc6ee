/**
 * `berth audit verify` on a large stored chain, across cores (issue 35; spec/audit-chain.md §8): the events after
 * genesis are cut into segments, each verified in a worker thread (verify-segment-worker.ts) by the same walk as the
 * sequential verifier, resumed after the stored event just before the segment; the hashes are linked here afterwards.
 *
 *   genesis (here: owner key) ─▶ segments 1..k ──workers──▶ reports ─▶ link in seq order ─▶ checkpoints, expect-head,
 *                                                                    summaries (§8 check 10), Merkle tree (checks 11–12)
 *
 * Why the result equals the sequential walk's: a segment's walk checks every event of it exactly as the sequential
 * walk would, given the previous event's hash and ts; it takes those from the stored row before the segment, and the
 * link step accepts them only if they are the head the previous segment verified (its recomputed hash and its ts).
 * The first failure in seq order is reported: segments are examined in order and the first one that failed, ended
 * early (a missing event) or does not link, names the seq. A chain too small to be worth the threads, or one worker,
 * is verified by `verifyStoredChain` as before.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { CHECKPOINT_FORMAT, checkpointSignatureValid, type SignedCheckpoint } from "../core/chain/checkpoint.js";
import { type VerifyFailure, type VerifyResult, verifyEvents } from "../core/chain/verify.js";
import { openDatabase } from "../store/sqlite.js";
import { type EventRow, storedCheckpoints, verifiableRows, verifyStoredChain } from "./chain.js";
import { checkStoredSummaries, withSummaryCheck } from "./summaries.js";
import { storedTreeCheck } from "./tree-store.js";

export interface SegmentJob {
  readonly from: number;
  readonly to: number;
}

export interface SegmentReport {
  readonly from: number;
  readonly to: number;
  /** The stored event before the segment the walk resumed after; null when there is none. */
  readonly assumed: { readonly hash: string; readonly ts: number } | null;
  readonly result: { readonly head: { seq: number; hash: string } | null; readonly failure?: VerifyFailure } | null;
}

export interface ParallelVerifyOptions {
  readonly key?: string;
  readonly checkpoints?: readonly SignedCheckpoint[];
  readonly expectHead?: { seq: number; hash: string };
  /** Worker threads; default: the cores available. */
  readonly workers?: number;
  /** Events per segment; default: the chain split in four segments per worker, at least 2,000 events each. */
  readonly segmentEvents?: number;
  /** Below this many events the chain is verified in this thread; default 20,000. */
  readonly minEvents?: number;
}

const DEFAULT_MIN_EVENTS = 20_000;

export async function verifyStoredChainParallel(
  dbPath: string,
  chainId: string,
  opts: ParallelVerifyOptions = {},
): Promise<VerifyResult> {
  const db = openDatabase(dbPath, { readonly: true });
  try {
    const top = db
      .prepare("SELECT MAX(seq) AS seq, COUNT(*) AS n FROM audit_event WHERE chain_id = ?")
      .get(chainId) as { seq: number | null; n: number };
    const workers = Math.max(1, opts.workers ?? availableParallelism());
    const sequential = () =>
      verifyStoredChain(db, chainId, {
        ...(opts.key !== undefined ? { key: opts.key } : {}),
        checkpoints: [...(opts.checkpoints ?? [])],
        ...(opts.expectHead ? { expectHead: opts.expectHead } : {}),
      });
    if (top.seq === null || top.n < (opts.minEvents ?? DEFAULT_MIN_EVENTS) || workers === 1) return sequential();
    const last = top.seq;

    // Genesis here: it fixes the owner key every segment is verified under (pinned, or self-asserted and said so).
    const genesisRow = db.prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq = 0").get(chainId) as
      | EventRow
      | undefined;
    const genesis = verifyEvents(verifiableRows(genesisRow ? [genesisRow] : []).events, {
      ...(opts.key !== undefined ? { key: opts.key } : {}),
      chainId,
      payloadTextOf: () => genesisRow?.payload,
    });
    if (!genesis.ok || genesisRow === undefined) return sequential();
    const ownerKey = opts.key ?? (JSON.parse(genesisRow.payload) as { owner_key: string }).owner_key;

    const size = opts.segmentEvents ?? Math.max(2_000, Math.ceil(last / (workers * 4)));
    const jobs: SegmentJob[] = [];
    for (let from = 1; from <= last; from += size) jobs.push({ from, to: Math.min(last, from + size - 1) });
    const reports = await runSegments(dbPath, chainId, ownerKey, jobs, Math.min(workers, jobs.length));

    const owner = db.prepare("SELECT owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as
      | { owner_key: string }
      | undefined;
    const stored = owner ? storedCheckpoints(db, chainId, owner.owner_key) : [];
    const result = (failure?: VerifyFailure, head?: { seq: number; hash: string }): VerifyResult => ({
      ok: failure === undefined,
      chain_id: chainId,
      events: head ? head.seq + 1 : 0,
      head: head ?? null,
      checkpoints: (opts.checkpoints?.length ?? 0) + stored.length,
      keySelfAsserted: opts.key === undefined,
      ...(failure ? { failure } : {}),
    });

    // Link in seq order; the first segment that failed, stopped short or does not link names the first bad seq.
    let head = genesis.head as { seq: number; hash: string };
    let headTs = genesisRow.ts;
    const tsAt = db.prepare("SELECT ts FROM audit_event WHERE chain_id = ? AND seq = ?");
    for (const r of reports) {
      const missing = (seq: number) => {
        const next = db
          .prepare("SELECT MIN(seq) AS seq FROM audit_event WHERE chain_id = ? AND seq > ?")
          .get(chainId, seq - 1) as { seq: number | null };
        return result(
          { seq, code: "seq", detail: `found seq ${next.seq ?? "nothing"} where seq ${seq} was expected` },
          head,
        );
      };
      if (r.assumed === null || r.result === null) return missing(head.seq + 1);
      if (r.assumed.hash !== head.hash || r.assumed.ts !== headTs) {
        return result(
          { seq: r.from, code: "prev_hash", detail: `prev_hash is not the hash of seq ${r.from - 1} as verified` },
          head,
        );
      }
      if (r.result.failure) return result(r.result.failure, head);
      const reached = r.result.head;
      if (reached === null || reached.seq < r.to) {
        if (reached) head = reached;
        return missing((reached?.seq ?? r.from - 1) + 1);
      }
      head = reached;
      headTs = (tsAt.get(chainId, head.seq) as { ts: number }).ts;
    }

    // After the walk (§8): checkpoints, then the expected head, against the hashes the segments verified.
    const hashAt = db.prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq = ?");
    const verifiedHashAt = (seq: number) => (hashAt.get(chainId, seq) as { hash: string } | undefined)?.hash;
    const anchorFailure = checkAnchors([...stored, ...(opts.checkpoints ?? [])], opts.expectHead, {
      chainId,
      ownerKey,
      lastSeq: head.seq,
      hashAt: verifiedHashAt,
    });
    // §8 checks 11–12 (issue 38): the stored Merkle tree and every chained checkpoint note against the verified hashes;
    // the segments' walks resume mid-chain, so the notes are checked here, with the tree.
    const linked = result(anchorFailure, head);
    return withSummaryCheck(
      withSummaryCheck(linked, checkStoredSummaries(db, chainId)),
      storedTreeCheck(db, chainId, linked),
    );
  } finally {
    db.close();
  }
}

/** §8 "after the walk", as `verifyEvents` does it, over hashes already verified (read by seq). */
function checkAnchors(
  checkpoints: readonly SignedCheckpoint[],
  expectHead: { seq: number; hash: string } | undefined,
  chain: { chainId: string; ownerKey: string; lastSeq: number; hashAt: (seq: number) => string | undefined },
): VerifyFailure | undefined {
  for (const cp of checkpoints) {
    const body = cp?.checkpoint;
    const cpSeq = typeof body?.seq === "number" ? body.seq : -1;
    const at = Math.min(cpSeq, chain.lastSeq + 1);
    if (
      !body ||
      body.format !== CHECKPOINT_FORMAT ||
      !checkpointSignatureValid(cp) ||
      body.key !== chain.ownerKey ||
      body.chain_id !== chain.chainId
    ) {
      return {
        seq: at,
        code: "checkpoint",
        detail: `checkpoint at seq ${cpSeq} is not signed by the owner key for this chain`,
      };
    }
    if (cpSeq > chain.lastSeq)
      return {
        seq: at,
        code: "truncated",
        detail: `checkpoint covers seq ${cpSeq} but the chain ends at seq ${chain.lastSeq}`,
      };
    const hash = chain.hashAt(cpSeq);
    if (hash !== body.head_hash)
      return {
        seq: at,
        code: "fork",
        detail: `checkpoint says seq ${cpSeq} is ${body.head_hash}, the chain has ${hash}`,
      };
  }
  if (expectHead) {
    const { seq, hash } = expectHead;
    if (seq > chain.lastSeq)
      return {
        seq: chain.lastSeq + 1,
        code: "truncated",
        detail: `expected head at seq ${seq} but the chain ends at seq ${chain.lastSeq}`,
      };
    const found = chain.hashAt(seq);
    if (found !== hash) return { seq, code: "fork", detail: `expected ${hash} at seq ${seq}, the chain has ${found}` };
  }
  return undefined;
}

/** Runs the jobs on `count` workers, each taking the next job when it reports; the reports come back in job order. */
async function runSegments(
  dbPath: string,
  chainId: string,
  key: string,
  jobs: readonly SegmentJob[],
  count: number,
): Promise<SegmentReport[]> {
  const reports = new Map<number, SegmentReport>();
  let next = 0;
  const script = new URL("./verify-segment-worker.js", import.meta.url);
  await Promise.all(
    Array.from({ length: count }, () => {
      const worker = new Worker(script, { workerData: { dbPath, chainId, key } });
      return new Promise<void>((resolve, reject) => {
        const feed = () => {
          const job = jobs[next++];
          worker.postMessage(job ?? null);
          if (job === undefined) resolve();
        };
        worker.on("message", (report: SegmentReport) => {
          reports.set(report.from, report);
          feed();
        });
        worker.on("error", reject);
        worker.on("exit", (code) =>
          code === 0 ? resolve() : reject(new Error(`a verify worker exited with status ${code}`)),
        );
        feed();
      });
    }),
  );
  return jobs.map((j) => reports.get(j.from) as SegmentReport);
}
