/**
 * Importing an exported chain (spec/audit-chain.md §9): the whole file is verified first and nothing is written on any
 * failure. Imported chains are stored with own = 0; a component never imports its own chain. One set of rules
 * (judgeImport), two shells: a SQLite chain file (any component's) and a controller store on either engine.
 */
import type { SignedCheckpoint } from "../core/chain/checkpoint.js";
import type { genesisPayload, SealedEvent } from "../core/chain/event.js";
import { type VerifyResult, verifyEvents } from "../core/chain/verify.js";
import { canonicalJson, type JsonObject } from "../core/crypto/canonical.js";
import { err, ok, type Result } from "../kit/result.js";
import type { StoreEngine } from "../store/engine.js";
import { type Db, withWriteTx } from "../store/sqlite.js";
import { findEvents } from "./chain.js";
import { findEventsOn } from "./engine-chain.js";
import { catchUpTree, catchUpTreeOn } from "./tree-store.js";
import { ensureChainSchema, ensureChainSchemaOn } from "./schema.js";

/** The file's events, or the 1-based line that is not one and why. */
export type ParsedLines = Result<unknown[], { readonly line: number; readonly reason: string }>;

/** Parses JSON lines; a truncated or non-JSON line is reported by its 1-based line number. */
export function parseEventLines(text: string): ParsedLines {
  const events: unknown[] = [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else if (lines.length > 0) {
    // The format ends every line with \n; a missing terminator means the file was cut short.
    return err({ line: lines.length, reason: "last line is not newline-terminated (truncated file?)" });
  }
  for (const [i, line] of lines.entries()) {
    try {
      events.push(JSON.parse(line));
    } catch {
      return err({ line: i + 1, reason: "not a complete JSON object (truncated line?)" });
    }
  }
  return ok(events);
}

/** What was imported, or why nothing was written (one sentence). */
export type ImportOutcome = Result<{ chain_id: string; written: number; verify: VerifyResult }>;

interface ImportOptions {
  readonly key?: string;
  readonly checkpoints?: SignedCheckpoint[];
}

/** What the store holds of the file's chain, read inside the import's transaction. */
interface StoredView {
  readonly known: { own: number; owner_key: string } | undefined;
  /** The stored events before the file's first seq. */
  readonly prefix: readonly SealedEvent[];
  /** The stored hash at each of the file's seqs, where one is stored. */
  readonly storedHash: ReadonlyMap<number, string>;
}

type Judged = Result<{
  verify: VerifyResult;
  events: SealedEvent[];
  newChain: { owner_key: string; role: string; created_ms: number } | null;
}>;

/** The import's rules, the same on both engines: never its own chain, linked to a stored prefix, verified, no fork. */
function judgeImport(
  chainId: string,
  lines: readonly unknown[],
  startSeq: number,
  view: StoredView,
  opts: ImportOptions,
): Judged {
  if (view.known?.own === 1) return err(`chain ${chainId} is this component's own chain; it cannot be imported`);
  // A file not starting at genesis must link to the stored copy of the same chain: verify stored prefix + file.
  if (startSeq > 0 && view.prefix.length !== startSeq) {
    return err(`the file starts at seq ${startSeq} but no stored copy of chain ${chainId} reaches seq ${startSeq - 1}`);
  }
  const verify = verifyEvents([...view.prefix, ...lines], {
    ...(opts.key !== undefined ? { key: opts.key } : view.known ? { key: view.known.owner_key } : {}),
    ...(opts.checkpoints ? { checkpoints: opts.checkpoints } : {}),
  });
  if (!verify.ok) {
    const f = verify.failure;
    return err(`event seq ${f?.seq} failed ${f?.code}: ${f?.detail}`);
  }
  const events = lines as SealedEvent[];
  // An event already stored with another hash is a fork: report both, write nothing.
  for (const e of events) {
    const stored = view.storedHash.get(e.seq);
    if (stored !== undefined && stored !== e.hash) return err(`fork at seq ${e.seq}: stored ${stored}, file ${e.hash}`);
  }
  let newChain: { owner_key: string; role: string; created_ms: number } | null = null;
  if (!view.known) {
    const genesis = (startSeq === 0 ? events[0] : view.prefix[0]) as SealedEvent;
    const g = genesis.payload as ReturnType<typeof genesisPayload>;
    newChain = { owner_key: g.owner_key as string, role: g.role as string, created_ms: genesis.ts };
  }
  return ok({ verify, events, newChain });
}

/** The file's lines and the chain they claim, or why nothing will be written. */
type Parsed = Result<{ lines: unknown[]; chainId: string; startSeq: number }>;

function parsedFile(text: string): Parsed {
  const parsed = parseEventLines(text);
  if (!parsed.ok) return err(`line ${parsed.error.line}: ${parsed.error.reason}`);
  if (parsed.value.length === 0) return err("the file holds no events");
  const first = parsed.value[0] as { seq?: unknown; chain_id?: unknown };
  return ok({
    lines: parsed.value,
    chainId: typeof first.chain_id === "string" ? first.chain_id : "",
    startSeq: typeof first.seq === "number" ? first.seq : 0,
  });
}

const seqsOf = (lines: readonly unknown[]) =>
  lines.map((l) => (l as { seq?: unknown }).seq).filter((q): q is number => typeof q === "number");

/** Imports into a SQLite chain file (a home's controller.db, a node.db, any `--db`). */
export function importChain(db: Db, text: string, opts: ImportOptions = {}): ImportOutcome {
  const file = parsedFile(text);
  if (!file.ok) return file;
  const { chainId, lines, startSeq } = file.value;
  return withWriteTx(db, (tx) => {
    ensureChainSchema(tx);
    const known = tx.db.prepare("SELECT own, owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as
      | { own: number; owner_key: string }
      | undefined;
    const prefix: SealedEvent[] =
      startSeq > 0 && known?.own !== 1 ? [...findEvents(tx.db, chainId, { toSeq: startSeq - 1 })] : [];
    const existing = tx.db.prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq = ?");
    const storedHash = new Map<number, string>();
    for (const seq of seqsOf(lines)) {
      const row = existing.get(chainId, seq) as { hash: string } | undefined;
      if (row) storedHash.set(seq, row.hash);
    }
    const judged = judgeImport(chainId, lines, startSeq, { known, prefix, storedHash }, opts);
    if (!judged.ok) return judged;
    const { newChain, events, verify } = judged.value;
    if (newChain) {
      tx.db
        .prepare("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,0,?)")
        .run(chainId, newChain.owner_key, newChain.role, newChain.created_ms);
    }
    const insert = tx.db.prepare(
      "INSERT OR IGNORE INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
    );
    let written = 0;
    for (const e of events) {
      written += insert.run(
        e.chain_id,
        e.seq,
        e.ts,
        e.prev_hash,
        e.source,
        e.kind,
        canonicalJson(e.payload as JsonObject),
        e.payload_hash,
        e.hash,
        e.sig,
      ).changes;
    }
    // Issue 38: the copy's Merkle tree extended over the new events, in the import's transaction.
    catchUpTree(tx.db, chainId);
    return ok({ chain_id: chainId, written, verify });
  });
}

/**
 * Imports into a controller store on either engine (issue 20: `berth audit import` on PostgreSQL, and `POST
 * /audit/import` of a server, whose store may be PostgreSQL): the same rules, in one transaction of the engine.
 */
export async function importChainOn(
  engine: StoreEngine,
  text: string,
  opts: ImportOptions = {},
): Promise<ImportOutcome> {
  const file = parsedFile(text);
  if (!file.ok) return file;
  const { chainId, lines, startSeq } = file.value;
  return engine.transaction(async (tx) => {
    await ensureChainSchemaOn(tx);
    const k = await tx.get<{ own: number; owner_key: string }>(
      "SELECT own, owner_key FROM audit_chain WHERE chain_id = ?",
      [chainId],
    );
    const known = k === undefined ? undefined : { own: Number(k.own), owner_key: k.owner_key };
    const prefix = startSeq > 0 && known?.own !== 1 ? await findEventsOn(tx, chainId, { toSeq: startSeq - 1 }) : [];
    const seqs = seqsOf(lines);
    const storedHash = new Map<number, string>();
    if (seqs.length > 0) {
      const rows = await tx.all<{ seq: number; hash: string }>(
        "SELECT seq, hash FROM audit_event WHERE chain_id = ? AND seq BETWEEN ? AND ?",
        [chainId, Math.min(...seqs), Math.max(...seqs)],
      );
      for (const r of rows) storedHash.set(Number(r.seq), r.hash);
    }
    const judged = judgeImport(chainId, lines, startSeq, { known, prefix, storedHash }, opts);
    if (!judged.ok) return judged;
    const { newChain, events, verify } = judged.value;
    if (newChain) {
      await tx.run("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,0,?)", [
        chainId,
        newChain.owner_key,
        newChain.role,
        newChain.created_ms,
      ]);
    }
    let written = 0;
    for (const e of events) {
      written += await tx.run(
        "INSERT INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (chain_id, seq) DO NOTHING",
        [
          e.chain_id,
          e.seq,
          e.ts,
          e.prev_hash,
          e.source,
          e.kind,
          canonicalJson(e.payload as JsonObject),
          e.payload_hash,
          e.hash,
          e.sig,
        ],
      );
    }
    await catchUpTreeOn(tx, chainId);
    return ok({ chain_id: chainId, written, verify });
  });
}
