/**
 * One worker thread of the parallel verifier (verify-parallel.ts): opens the chain's database read-only and verifies
 * the segments it is sent, each resumed after the stored event just before it (the main thread checks afterwards
 * that this event is the one the previous segment verified). Nothing here decides a result; it reports each walk.
 */
import { parentPort, workerData } from "node:worker_threads";
import { verifyEvents } from "../core/chain/verify.js";
import { openDatabase } from "../store/sqlite.js";
import { type EventRow, verifiableRows } from "./chain.js";
import type { SegmentJob, SegmentReport } from "./verify-parallel.js";

const { dbPath, chainId, key } = workerData as { dbPath: string; chainId: string; key: string };
const db = openDatabase(dbPath, { readonly: true });
const rowsOf = db.prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq BETWEEN ? AND ? ORDER BY seq");
const before = db.prepare("SELECT hash, ts FROM audit_event WHERE chain_id = ? AND seq = ?");

parentPort?.on("message", (job: SegmentJob | null) => {
  if (job === null) {
    db.close();
    parentPort?.close();
    return;
  }
  const assumed = before.get(chainId, job.from - 1) as { hash: string; ts: number } | undefined;
  let report: SegmentReport;
  if (assumed === undefined) {
    report = { from: job.from, to: job.to, assumed: null, result: null };
  } else {
    const { events, payloadTextOf } = verifiableRows(rowsOf.iterate(chainId, job.from, job.to) as Iterable<EventRow>);
    const result = verifyEvents(events, { key, chainId, after: { seq: job.from - 1, hash: assumed.hash, ts: assumed.ts }, payloadTextOf });
    report = { from: job.from, to: job.to, assumed, result: { head: result.head, ...(result.failure ? { failure: result.failure } : {}) } };
  }
  parentPort?.postMessage(report);
});
