/**
 * Importing an exported chain (spec/audit-chain.md §9): the whole file is verified first and nothing is written on any
 * failure. Imported chains are stored with own = 0; a component never imports its own chain.
 */
import type { SignedCheckpoint } from "../core/chain/checkpoint.js";
import type { genesisPayload, SealedEvent } from "../core/chain/event.js";
import { type VerifyResult, verifyEvents } from "../core/chain/verify.js";
import { canonicalJson, type JsonObject } from "../core/crypto/canonical.js";
import { type Db, withWriteTx } from "../store/sqlite.js";
import { findEvents } from "./chain.js";
import { ensureChainSchema } from "./schema.js";

export type ParsedLines = { ok: true; events: unknown[] } | { ok: false; line: number; reason: string };

/** Parses JSON lines; a truncated or non-JSON line is reported by its 1-based line number. */
export function parseEventLines(text: string): ParsedLines {
  const events: unknown[] = [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else if (lines.length > 0) {
    // The format ends every line with \n; a missing terminator means the file was cut short.
    return { ok: false, line: lines.length, reason: "last line is not newline-terminated (truncated file?)" };
  }
  for (const [i, line] of lines.entries()) {
    try {
      events.push(JSON.parse(line));
    } catch {
      return { ok: false, line: i + 1, reason: "not a complete JSON object (truncated line?)" };
    }
  }
  return { ok: true, events };
}

export type ImportOutcome =
  | { ok: true; chain_id: string; written: number; verify: VerifyResult }
  | { ok: false; reason: string; verify?: VerifyResult };

export function importChain(db: Db, text: string, opts: { key?: string; checkpoints?: SignedCheckpoint[] } = {}): ImportOutcome {
  const parsed = parseEventLines(text);
  if (!parsed.ok) return { ok: false, reason: `line ${parsed.line}: ${parsed.reason}` };
  if (parsed.events.length === 0) return { ok: false, reason: "the file holds no events" };
  const first = parsed.events[0] as { seq?: unknown; chain_id?: unknown };
  const chainId = typeof first.chain_id === "string" ? first.chain_id : "";

  return withWriteTx(db, (tx) => {
    ensureChainSchema(tx);
    const known = tx.db.prepare("SELECT own, owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as { own: number; owner_key: string } | undefined;
    if (known?.own === 1) return { ok: false, reason: `chain ${chainId} is this component's own chain; it cannot be imported` };

    // A file not starting at genesis must link to the stored copy of the same chain: verify stored prefix + file.
    const startSeq = typeof first.seq === "number" ? first.seq : 0;
    const prefix: SealedEvent[] = startSeq > 0 ? [...findEvents(tx.db, chainId, { toSeq: startSeq - 1 })] : [];
    if (startSeq > 0 && prefix.length !== startSeq) {
      return { ok: false, reason: `the file starts at seq ${startSeq} but no stored copy of chain ${chainId} reaches seq ${startSeq - 1}` };
    }
    const verify = verifyEvents([...prefix, ...parsed.events], {
      ...(opts.key !== undefined ? { key: opts.key } : known ? { key: known.owner_key } : {}),
      ...(opts.checkpoints ? { checkpoints: opts.checkpoints } : {}),
    });
    if (!verify.ok) {
      const f = verify.failure;
      return { ok: false, reason: `event seq ${f?.seq} failed ${f?.code}: ${f?.detail}`, verify };
    }
    const events = parsed.events as SealedEvent[];
    // An event already stored with another hash is a fork: report both, write nothing.
    const existing = tx.db.prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq = ?");
    for (const e of events) {
      const row = existing.get(chainId, e.seq) as { hash: string } | undefined;
      if (row && row.hash !== e.hash) return { ok: false, reason: `fork at seq ${e.seq}: stored ${row.hash}, file ${e.hash}`, verify };
    }
    if (!known) {
      const genesis = (startSeq === 0 ? events[0] : prefix[0]) as SealedEvent;
      const g = genesis.payload as ReturnType<typeof genesisPayload>;
      tx.db.prepare("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,0,?)").run(chainId, g.owner_key as string, g.role as string, genesis.ts);
    }
    const insert = tx.db.prepare(
      "INSERT OR IGNORE INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
    );
    let written = 0;
    for (const e of events) {
      written += insert.run(e.chain_id, e.seq, e.ts, e.prev_hash, e.source, e.kind, canonicalJson(e.payload as JsonObject), e.payload_hash, e.hash, e.sig).changes;
    }
    return { ok: true, chain_id: chainId, written, verify };
  });
}
