/**
 * Gate summaries beside the chain (issue 35; spec/audit-chain.md §7, §8 check 10): the canonical documents whose
 * hashes decision events carry (`payload.gate.summary`, core/governance/summary.ts). A summary is written in the
 * transaction of the event that names it, keyed by its hash, so placements over an unchanged view share one row; the
 * row is append-only like the events.
 *
 * The same table holds the candidates documents of placement decisions (`payload.candidates.summary`,
 * core/placement/candidates-document.ts): each row says by its `format` member which kind it is, and is hashed under
 * that kind's tag.
 *
 * Verification reads every stored summary of a chain and recomputes its hash; one that does not hash to its key is
 * reported at the first event naming that key (`summary`). A summary an event names but the store lacks is not a
 * failure of the chain (the signed hash stands; an export carries events only), and is counted as absent.
 */

import type { VerifyFailure, VerifyResult } from "../core/chain/verify.js";
import {
  type GateSummary,
  gateSummaryHashOf,
  type ParsedGateSummary,
  parseGateSummary,
} from "../core/governance/summary.js";
import {
  type CandidatesDocument,
  candidatesHashOf,
  isCandidatesText,
  parseCandidatesDocument,
} from "../core/placement/candidates-document.js";
import type { NodeReport } from "../core/placement/outputs.js";
import type { Query, Tx } from "../store/engine.js";
import { ensureSchemaOn } from "../store/schema.js";
import { type Db, ensureSchema, type WriteTx } from "../store/sqlite.js";

export const SUMMARY_SCHEMA_VERSION = 1;

const TABLE_SQL = `CREATE TABLE IF NOT EXISTS audit_summary (chain_id TEXT NOT NULL, hash TEXT NOT NULL, body TEXT NOT NULL,
                                                      PRIMARY KEY (chain_id, hash))`;

const SQLITE_SQL = `${TABLE_SQL};
  CREATE TRIGGER IF NOT EXISTS audit_summary_no_update BEFORE UPDATE ON audit_summary BEGIN SELECT RAISE(ABORT, 'gate summaries are append-only'); END;
  CREATE TRIGGER IF NOT EXISTS audit_summary_no_delete BEFORE DELETE ON audit_summary BEGIN SELECT RAISE(ABORT, 'gate summaries are append-only'); END;`;

/** The table on a synchronous SQLite store (a node's, a mirror): created with the chain's tables. */
export function ensureSummarySchema(tx: WriteTx): void {
  ensureSchema(tx, "audit_summary", SUMMARY_SCHEMA_VERSION, () => tx.db.exec(SQLITE_SQL));
}

/** The table on a `StoreEngine`; on PostgreSQL the chain's append-only trigger function guards it too. */
export async function ensureSummarySchemaOn(tx: Tx): Promise<void> {
  await ensureSchemaOn(tx, "audit_summary", SUMMARY_SCHEMA_VERSION, async () => {
    if (tx.kind === "sqlite") await tx.exec(SQLITE_SQL);
    else
      await tx.exec(`${TABLE_SQL};
      CREATE TRIGGER audit_summary_append_only BEFORE UPDATE OR DELETE ON audit_summary FOR EACH ROW EXECUTE FUNCTION berth_append_only();`);
  });
}

/** Stores a summary in the caller's transaction (the one appending the event that names it); a stored twin is kept. */
export function storeSummaryIn(tx: Tx, chainId: string, summary: GateSummary): Promise<void> {
  return storeDocumentIn(tx, chainId, summary.ref.summary, summary.canonical);
}

/** A decision's candidates document, in the transaction appending the decision; a stored twin is kept. */
export function storeCandidatesIn(tx: Tx, chainId: string, document: CandidatesDocument): Promise<void> {
  return storeDocumentIn(tx, chainId, document.ref.summary, document.canonical);
}

async function storeDocumentIn(tx: Tx, chainId: string, hash: string, body: string): Promise<void> {
  await tx.run(
    "INSERT INTO audit_summary (chain_id, hash, body) VALUES (?, ?, ?) ON CONFLICT (chain_id, hash) DO NOTHING",
    [chainId, hash, body],
  );
}

/** A stored document's text by its hash, or undefined (no such row, or a store from before the table). */
async function storedBodyOn(q: Query, chainId: string, hash: string): Promise<string | undefined> {
  if (!(await hasTableOn(q))) return undefined;
  const row = await q.get<{ body: string }>("SELECT body FROM audit_summary WHERE chain_id = ? AND hash = ?", [
    chainId,
    hash,
  ]);
  return row?.body;
}

/** A stored document's hash under the tag of the kind its `format` member declares (gate summary or candidates). */
function documentHashOf(body: string): string {
  return isCandidatesText(body) ? candidatesHashOf(body) : gateSummaryHashOf(body);
}

export type SummaryRead =
  | { kind: "found"; summary: ParsedGateSummary }
  | { kind: "absent" }
  | { kind: "invalid"; reason: string };

function judged(hash: string, body: string | undefined): SummaryRead {
  if (body === undefined) return { kind: "absent" };
  if (gateSummaryHashOf(body) !== hash)
    return { kind: "invalid", reason: `the stored gate summary ${hash} does not hash to its name` };
  const parsed = parseGateSummary(body);
  return parsed.ok ? { kind: "found", summary: parsed.value } : { kind: "invalid", reason: parsed.error };
}

export type CandidatesRead =
  | { kind: "found"; candidates: NodeReport[] }
  | { kind: "absent" }
  | { kind: "invalid"; reason: string };

/** A decision's candidates document, checked against its hash before anything reads it. */
export async function readCandidatesOn(q: Query, chainId: string, hash: string): Promise<CandidatesRead> {
  const body = await storedBodyOn(q, chainId, hash);
  if (body === undefined) return { kind: "absent" };
  if (!isCandidatesText(body) || candidatesHashOf(body) !== hash)
    return { kind: "invalid", reason: `the stored candidates document ${hash} does not hash to its name` };
  const parsed = parseCandidatesDocument(body);
  return parsed.ok ? { kind: "found", candidates: parsed.value } : { kind: "invalid", reason: parsed.error };
}

async function hasTableOn(q: Query): Promise<boolean> {
  const row =
    q.kind === "sqlite"
      ? await q.get("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit_summary'")
      : await q.get(
          "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'audit_summary'",
        );
  return row !== undefined;
}

const hasTable = (db: Db) =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit_summary'").get() !== undefined;

/** One summary, checked against its hash before anything reads it. */
export async function readSummaryOn(q: Query, chainId: string, hash: string): Promise<SummaryRead> {
  return judged(hash, await storedBodyOn(q, chainId, hash));
}

/** The first event naming a summary, for the failure's seq (scans the chain: only on a failure). */
const NAMING_SQL = "SELECT seq FROM audit_event WHERE chain_id = ? AND instr(payload, ?) > 0 ORDER BY seq LIMIT 1";

function failureOf(hash: string, seq: number | undefined, body: string): VerifyFailure {
  const kind = isCandidatesText(body) ? "candidates document" : "gate summary";
  const at = seq ?? 0;
  const named = seq === undefined ? "named by no event" : `named by the event at seq ${seq}`;
  return {
    seq: at,
    code: "summary",
    detail: `${kind} ${hash} (${named}) does not hash to its name: the summary was altered after it was chained`,
  };
}

/** §8 check 10 on a synchronous store: every stored summary of the chain hashes to its key. */
export function checkStoredSummaries(db: Db, chainId: string): { checked: number; failure?: VerifyFailure } {
  if (!hasTable(db)) return { checked: 0 };
  let checked = 0;
  for (const row of db
    .prepare("SELECT hash, body FROM audit_summary WHERE chain_id = ? ORDER BY hash")
    .iterate(chainId) as Iterable<{ hash: string; body: string }>) {
    checked++;
    if (documentHashOf(row.body) === row.hash) continue;
    const named = db.prepare(NAMING_SQL).get(chainId, `"summary":"${row.hash}"`) as { seq: number } | undefined;
    return { checked, failure: failureOf(row.hash, named?.seq, row.body) };
  }
  return { checked };
}

/** The same check on a `StoreEngine`. */
export async function checkStoredSummariesOn(
  q: Query,
  chainId: string,
): Promise<{ checked: number; failure?: VerifyFailure }> {
  if (!(await hasTableOn(q))) return { checked: 0 };
  const rows = await q.all<{ hash: string; body: string }>(
    "SELECT hash, body FROM audit_summary WHERE chain_id = ? ORDER BY hash",
    [chainId],
  );
  for (const [i, row] of rows.entries()) {
    if (documentHashOf(row.body) === row.hash) continue;
    const sql =
      q.kind === "sqlite"
        ? NAMING_SQL
        : "SELECT seq FROM audit_event WHERE chain_id = ? AND strpos(payload, ?) > 0 ORDER BY seq LIMIT 1";
    const named = await q.get<{ seq: number }>(sql, [chainId, `"summary":"${row.hash}"`]);
    return {
      checked: i + 1,
      failure: failureOf(row.hash, named === undefined ? undefined : Number(named.seq), row.body),
    };
  }
  return { checked: rows.length };
}

/** The walk's result with the summary check folded in: the failure at the lower seq is the one reported (§8). */
export function withSummaryCheck(result: VerifyResult, check: { failure?: VerifyFailure }): VerifyResult {
  const failure = check.failure;
  if (failure === undefined) return result;
  if (result.failure !== undefined && result.failure.seq <= failure.seq) return result;
  return { ...result, ok: false, failure };
}
