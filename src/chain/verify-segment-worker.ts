/**
 * One worker thread of the parallel verifier (verify-parallel.ts): opens the chain's database read-only and verifies
 * the segments it is sent, each resumed after the stored event just before it (the main thread checks afterwards
 * that this event is the one the previous segment verified). Nothing here decides a result; it reports each walk.
 */
import { parentPort, workerData } from "node:worker_threads";
import { verifyEvents } from "../core/chain/verify.js";
import { openDatabase } from "../store/sqlite.js";
import type { EventRow } from "./chain.js";
import type { SegmentJob, SegmentReport } from "./verify-parallel.js";

const { dbPath, chainId, key } = workerData as { dbPath: string; chainId: string; key: string };
const db = openDatabase(dbPath, { readonly: true });
// The ten stored columns only: the generated `phase` would cost SQLite a JSON parse per row for nothing.
const rowsOf = db.prepare(
  "SELECT chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig FROM audit_event WHERE chain_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
);

/**
 * Rows as the walk reads them, without parsing each payload twice: after genesis (verified in the main thread) the
 * walk reads a payload only through its stored text (canonical form and hash, §8 check 7) and checks that it is an
 * object (check 1). A stored text that starts with "{" and passes the canonical check is an object, so such a row
 * gets an empty object in its place; any other text is parsed, so the walk fails it exactly as before.
 */
function segmentRows(rows: Iterable<EventRow>): {
  events: Iterable<object>;
  payloadTextOf: (item: unknown) => string | undefined;
} {
  const texts = new WeakMap<object, string>();
  function* events(): Iterable<object> {
    for (const row of rows) {
      let payload: unknown = {};
      if (!row.payload.startsWith("{")) {
        try {
          payload = JSON.parse(row.payload);
        } catch {
          payload = {};
        }
      }
      const event = {
        seq: row.seq,
        chain_id: row.chain_id,
        ts: row.ts,
        prev_hash: row.prev_hash,
        source: row.source,
        kind: row.kind,
        payload,
        payload_hash: row.payload_hash,
        hash: row.hash,
        sig: row.sig,
      };
      texts.set(event, row.payload);
      yield event;
    }
  }
  return { events: events(), payloadTextOf: (item) => texts.get(item as object) };
}
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
    const { events, payloadTextOf } = segmentRows(rowsOf.iterate(chainId, job.from, job.to) as Iterable<EventRow>);
    const result = verifyEvents(events, {
      key,
      chainId,
      after: { seq: job.from - 1, hash: assumed.hash, ts: assumed.ts },
      payloadTextOf,
    });
    report = {
      from: job.from,
      to: job.to,
      assumed,
      result: { head: result.head, ...(result.failure ? { failure: result.failure } : {}) },
    };
  }
  parentPort?.postMessage(report);
});
