/**
 * The owner's audit chain in SQLite (spec/audit-chain.md §6, §7, §10, §13). `append` runs inside the caller's write
 * transaction, so a state change and the event that records it commit or roll back together.
 *
 * (About 520 lines, one concept: one synchronous chain, its append, seal, checkpoint and verify reading the same
 * tables; split, each would re-open the table layout.)
 */
import { randomBytes } from "node:crypto";
import { checkpointSignatureValid, type SignedCheckpoint, signCheckpoint } from "../core/chain/checkpoint.js";
import {
  type ChainRole,
  type ChainTip,
  type EventDraft,
  exportLine,
  genesisPayload,
  type SealedEvent,
  sealEvent,
} from "../core/chain/event.js";
import { leafHash } from "../core/chain/merkle.js";
import { checkpointOrigin, signCheckpointNote } from "../core/chain/note.js";
import { type Frontier, frontierRoot, pushLeaf } from "../core/chain/tree-hashes.js";
import { type VerifyResult, verifyEvents } from "../core/chain/verify.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import { nodeIdOf, type SigningKey } from "../core/crypto/ed25519.js";
import type { Clock } from "../kit/clock.js";
import { type Db, type WriteTx, withWriteTx } from "../store/sqlite.js";
import { type CheckpointPolicy, DEFAULT_CHECKPOINT_POLICY } from "./checkpoint-policy.js";
import { ensureChainSchema } from "./schema.js";
import { checkStoredSummaries, withSummaryCheck } from "./summaries.js";
import {
  catchUpTree,
  FrontierCache,
  frontierAt,
  INSERT_TREE_NODE,
  rowsToStore,
  storedTreeCheck,
} from "./tree-store.js";

/** An `audit_event` row's columns, in the order `EventRow` lists them and `INSERT_EVENT` takes them. */
export const EVENT_COLUMNS = "chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig";
export const INSERT_EVENT = `INSERT INTO audit_event (${EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)`;

export interface EventRow {
  chain_id: string;
  seq: number;
  ts: number;
  prev_hash: string;
  source: string;
  kind: string;
  payload: string;
  payload_hash: string;
  hash: string;
  sig: string;
}

/** For a stored payload that does not even parse: an event the verifier will fail at this seq with payload_hash. */
function rowWithUnparseablePayload(row: EventRow): object {
  const { payload: _text, ...rest } = row;
  const { phase: _phase, ...fields } = rest as typeof rest & { phase?: unknown };
  return { ...fields, payload: {} };
}

/** The one row → event decoder: every reader of stored events, on either engine, goes through it. */
export function rowToEvent(row: EventRow): SealedEvent {
  return {
    seq: row.seq,
    chain_id: row.chain_id,
    ts: row.ts,
    prev_hash: row.prev_hash,
    source: row.source,
    kind: row.kind,
    payload: JSON.parse(row.payload) as JsonObject,
    payload_hash: row.payload_hash,
    hash: row.hash,
    sig: row.sig,
  };
}

/**
 * Stored rows as the verifier must see them, decoded as it reads them: a row whose payload does not even parse still
 * reaches it, so it fails at that seq with payload_hash rather than the reader throwing; `payloadTextOf` gives it each
 * row's stored text for the canonical-form check (§8 check 7).
 */
export function verifiableRows(rows: Iterable<EventRow>): {
  events: Iterable<object>;
  payloadTextOf: (item: unknown) => string | undefined;
} {
  const texts = new WeakMap<object, string>();
  function* events(): Iterable<object> {
    for (const row of rows) {
      let event: object;
      try {
        event = rowToEvent(row);
      } catch {
        event = rowWithUnparseablePayload(row);
      }
      texts.set(event, row.payload);
      yield event;
    }
  }
  return { events: events(), payloadTextOf: (item) => texts.get(item as object) };
}

export class ChainError extends Error {
  override name = "ChainError";
}

/** The refusal of `open` (both chains'): the store's own chain belongs to another key. */
export function foreignOwnerError(chainId: string, ownerKey: string, key: string): ChainError {
  return new ChainError(
    `this database's audit chain ${chainId} belongs to key ${ownerKey}, not ${key}; use the key file that created it`,
  );
}

/** The refusal of `open` (both chains') when the start-up check (§7) fails: a component never runs on a broken chain. */
export function unverifiedChainError(chainId: string, check: VerifyResult): ChainError {
  const f = check.failure;
  return new ChainError(
    `the audit chain ${chainId} does not verify at seq ${f?.seq} (${f?.code}: ${f?.detail}); refusing to start. ` +
      "Inspect it with `berth audit verify`; if it cannot be repaired, `berth audit reseal --new-chain --reason <text>` starts a new chain that names the last good event",
  );
}

/** The chain reads only the wall reading of the one `Clock` (src/kit/clock.ts): events carry epoch milliseconds. */
export type WallClock = Clock["wallNow"];

export class Chain {
  private readonly listeners = new Set<(event: SealedEvent) => void>();
  private readonly tipInTx = new WeakMap<WriteTx, ChainTip>();
  /** Issue 38: the Merkle tree's right edge per transaction, and the last committed one (tree-store.ts). */
  private readonly treeInTx = new WeakMap<WriteTx, Frontier>();
  private readonly frontiers = new FrontierCache();
  private readonly stmts;

  private constructor(
    private readonly db: Db,
    private readonly key: SigningKey,
    readonly chainId: string,
    readonly role: ChainRole,
    private readonly clock: WallClock,
    readonly policy: CheckpointPolicy,
  ) {
    this.stmts = {
      insertNode: db.prepare(INSERT_TREE_NODE),
      tip: db.prepare("SELECT seq, hash, ts FROM audit_event WHERE chain_id = ? ORDER BY seq DESC LIMIT 1"),
      insert: db.prepare(INSERT_EVENT),
      get: db.prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq = ?"),
      // Newest first: the events asked for by hash are mostly recent ones (a decision just made).
      byHash: db.prepare("SELECT * FROM audit_event WHERE chain_id = ? AND hash = ? ORDER BY seq DESC LIMIT 1"),
      lastCheckpoint: db.prepare("SELECT seq, ts FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq DESC LIMIT 1"),
      insertCheckpoint: db.prepare(
        "INSERT INTO audit_checkpoint (chain_id, seq, head_hash, ts, sig) VALUES (?,?,?,?,?)",
      ),
    };
  }

  get ownerKey(): string {
    return this.key.publicKey;
  }

  /**
   * Opens the component's own chain, creating schema and genesis in one transaction on first use. Refuses a
   * database whose own chain belongs to another key: a component never starts a fresh chain silently.
   */
  static open(
    db: Db,
    key: SigningKey,
    role: ChainRole,
    clock: WallClock = Date.now,
    policy: CheckpointPolicy = DEFAULT_CHECKPOINT_POLICY,
  ): Chain {
    const chainId = withWriteTx(db, (tx) => {
      ensureChainSchema(tx);
      const own = tx.db
        .prepare("SELECT chain_id, owner_key, role FROM audit_chain WHERE own = 1 ORDER BY created_ms DESC LIMIT 1")
        .get() as { chain_id: string; owner_key: string; role: string } | undefined;
      if (own) {
        if (own.owner_key !== key.publicKey) throw foreignOwnerError(own.chain_id, own.owner_key, key.publicKey);
        const check = startupCheck(tx.db, own.chain_id, key.publicKey);
        if (!check.ok) throw unverifiedChainError(own.chain_id, check);
        return own.chain_id;
      }
      const id = randomBytes(16).toString("hex");
      Chain.writeGenesis(tx, key, id, role, clock());
      return id;
    });
    return new Chain(db, key, chainId, role, clock, policy);
  }

  private static writeGenesis(
    tx: WriteTx,
    key: SigningKey,
    chainId: string,
    role: ChainRole,
    nowMs: number,
    predecessor?: JsonObject,
  ): SealedEvent {
    tx.db
      .prepare("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,1,?)")
      .run(chainId, key.publicKey, role, nowMs);
    const payload = genesisPayload({
      role,
      ownerKey: key.publicKey,
      ownerId: nodeIdOf(key.publicKey),
      ...(predecessor
        ? { predecessor: predecessor as { chain_id: string; seq: number; hash: string; reason: string } }
        : {}),
    });
    const { event, canonicalPayload } = sealEvent({
      chainId,
      tip: undefined,
      nowMs,
      draft: { source: "chain", kind: "chain.genesis", payload },
      key,
    });
    insertEvent(tx, event, canonicalPayload);
    // The genesis is leaf 0 of the chain's tree; a leaf alone closes no stored subtree, so this writes no row.
    catchUpTree(tx.db, chainId);
    return event;
  }

  /**
   * Starts a new own chain whose genesis names the last verified event of the broken one (`audit reseal`).
   * The old rows stay as a foreign chain.
   */
  static reseal(db: Db, key: SigningKey, role: ChainRole, reason: string, clock: WallClock = Date.now): Chain {
    const chainId = withWriteTx(db, (tx) => {
      ensureChainSchema(tx);
      const old = tx.db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as
        | { chain_id: string }
        | undefined;
      let predecessor: JsonObject | undefined;
      if (old) {
        const rows = tx.db
          .prepare("SELECT * FROM audit_event WHERE chain_id = ? ORDER BY seq")
          .all(old.chain_id) as EventRow[];
        const result = verifyEvents(rows.map(rowToEvent), { payloadTextOf: (_e, i) => rows[i]?.payload });
        const last = result.head ?? { seq: -1, hash: "0".repeat(64) };
        predecessor = { chain_id: old.chain_id, seq: last.seq, hash: last.hash, reason };
        tx.db.prepare("UPDATE audit_chain SET own = 0 WHERE chain_id = ?").run(old.chain_id);
      }
      const id = randomBytes(16).toString("hex");
      Chain.writeGenesis(tx, key, id, role, clock(), predecessor);
      return id;
    });
    return new Chain(db, key, chainId, role, clock, DEFAULT_CHECKPOINT_POLICY);
  }

  /** Appends inside the caller's transaction; the event is announced to listeners only after commit. */
  append(tx: WriteTx, draft: EventDraft): SealedEvent {
    if (tx.db !== this.db) throw new ChainError("append must run in a transaction on the chain's own database");
    // BEGIN IMMEDIATE holds the write lock for the whole transaction, so after our own first append in it the tip
    // cannot move under us: remember it per transaction instead of reading it back for every event of a batch.
    const tip = this.tipInTx.get(tx) ?? (this.stmts.tip.get(this.chainId) as ChainTip | undefined);
    const { event, canonicalPayload } = sealEvent({
      chainId: this.chainId,
      tip,
      nowMs: this.clock(),
      draft,
      key: this.key,
    });
    this.stmts.insert.run(
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
    // Issue 38: the event's leaf and the stored subtrees it closes, in the same transaction.
    const frontier = this.frontierIn(tx, tip);
    for (const s of rowsToStore(pushLeaf(frontier, leafHash(event.hash))))
      this.stmts.insertNode.run(this.chainId, s.level, s.index, s.hash.toString("hex"));
    this.tipInTx.set(tx, { seq: event.seq, hash: event.hash, ts: event.ts });
    if (this.listeners.size > 0) tx.afterCommit(() => this.emit(event));
    // §10: a checkpoint every N events (policy). Keyed on the seq itself so no extra read sits on the append path and
    // concurrent writers agree on who takes it.
    if (draft.kind !== "chain.checkpoint" && event.seq % this.policy.everyEvents === 0) this.checkpoint(tx);
    return event;
  }

  /** The tree's right edge at `tip` for this transaction: the committed one if it ends there, else read back. */
  private frontierIn(tx: WriteTx, tip: ChainTip | undefined): Frontier {
    let frontier = this.treeInTx.get(tx);
    if (frontier !== undefined) return frontier;
    frontier = this.frontiers.at(tip) ?? frontierAt(this.db, this.chainId, tip === undefined ? 0 : tip.seq + 1);
    this.treeInTx.set(tx, frontier);
    const f = frontier;
    tx.afterCommit(() => {
      const last = this.tipInTx.get(tx);
      if (last !== undefined) this.frontiers.keep(f, last.hash);
    });
    return frontier;
  }

  /** Convenience: one transaction holding `write` and the event that records it. */
  record<T>(
    draft: EventDraft | ((result: T) => EventDraft),
    write: (tx: WriteTx) => T,
  ): { result: T; event: SealedEvent } {
    return withWriteTx(this.db, (tx) => {
      const result = write(tx);
      const event = this.append(tx, typeof draft === "function" ? draft(result) : draft);
      return { result, event };
    });
  }

  /**
   * Signs the current head, stores the checkpoint, and records it in the chain (§10) with its Merkle checkpoint note
   * (issue 38: C2SP tlog-checkpoint, the tree of every event through the head, root folded from the tree's edge).
   */
  checkpoint(tx: WriteTx): SignedCheckpoint {
    const tip = this.tipInTx.get(tx) ?? (this.stmts.tip.get(this.chainId) as ChainTip);
    const cp = signCheckpoint(
      this.key,
      { chainId: this.chainId, seq: tip.seq, hash: tip.hash },
      Math.max(this.clock(), tip.ts),
    );
    const frontier = this.frontierIn(tx, tip);
    const note = signCheckpointNote(this.key, {
      origin: checkpointOrigin(this.chainId),
      size: frontier.size,
      root: frontierRoot(frontier),
    });
    this.stmts.insertCheckpoint.run(this.chainId, cp.checkpoint.seq, cp.checkpoint.head_hash, cp.checkpoint.ts, cp.sig);
    this.append(tx, {
      source: "chain",
      kind: "chain.checkpoint",
      payload: { head_hash: tip.hash, seq: tip.seq, sig: cp.sig, note },
    });
    return cp;
  }

  /** Writes a checkpoint when events were appended since the last one and it is older than the policy's T, or when forced. */
  checkpointIfDue(force = false): SignedCheckpoint | undefined {
    return withWriteTx(this.db, (tx) => {
      const tip = this.stmts.tip.get(this.chainId) as ChainTip;
      const last = this.stmts.lastCheckpoint.get(this.chainId) as { seq: number; ts: number } | undefined;
      // The newest event after a checkpoint is its own chain.checkpoint record, which does not count as new.
      const newEvents = last === undefined ? tip.seq > 0 : tip.seq > last.seq + 1;
      if (!newEvents) return undefined;
      if (!force && last && this.clock() - last.ts < this.policy.everyMs) return undefined;
      return this.checkpoint(tx);
    });
  }

  tip(): ChainTip {
    return this.stmts.tip.get(this.chainId) as ChainTip;
  }

  get(seq: number): SealedEvent | undefined {
    const row = this.stmts.get.get(this.chainId, seq) as EventRow | undefined;
    return row ? rowToEvent(row) : undefined;
  }

  /**
   * This chain's event with `hash`. `at`, the seq a caller's own table recorded for it, makes it one primary-key read;
   * without it (or when it names another event) the chain is scanned: no index keys on the hash (schema v2, §7).
   */
  byHash(hash: string, at?: number): SealedEvent | undefined {
    const hinted = at === undefined ? undefined : this.get(at);
    if (hinted?.hash === hash) return hinted;
    const row = this.stmts.byHash.get(this.chainId, hash) as EventRow | undefined;
    return row ? rowToEvent(row) : undefined;
  }

  *find(
    q: { source?: string; kind?: string; phase?: string; fromSeq?: number; toSeq?: number } = {},
  ): Iterable<SealedEvent> {
    yield* findEvents(this.db, this.chainId, q);
  }

  checkpoints(): SignedCheckpoint[] {
    return storedCheckpoints(this.db, this.chainId, this.ownerKey);
  }

  /** Subscribes to committed events; returns the unsubscribe function. */
  subscribe(listener: (event: SealedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: SealedEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** The start-up check (§7): the stored chain verifies under the owner key, with its stored checkpoints. */
  verifyStored(): VerifyResult {
    return verifyStoredChain(this.db, this.chainId, { key: this.ownerKey });
  }

  exportLines(from = 0, to = Number.MAX_SAFE_INTEGER): Iterable<string> {
    return exportChainLines(this.db, this.chainId, from, to);
  }
}

function insertEvent(tx: WriteTx, event: SealedEvent, canonicalPayload: string): void {
  tx.db
    .prepare(INSERT_EVENT)
    .run(
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
}

export function* findEvents(
  db: Db,
  chainId: string,
  q: { source?: string; kind?: string; phase?: string; fromSeq?: number; toSeq?: number },
): Iterable<SealedEvent> {
  const filters: Array<[string, unknown]> = [["chain_id = ?", chainId]];
  if (q.source !== undefined) filters.push(["source = ?", q.source]);
  if (q.kind !== undefined) filters.push(["kind = ?", q.kind]);
  if (q.phase !== undefined) filters.push(["phase = ?", q.phase]);
  if (q.fromSeq !== undefined) filters.push(["seq >= ?", q.fromSeq]);
  if (q.toSeq !== undefined) filters.push(["seq <= ?", q.toSeq]);
  const where = filters.map(([clause]) => clause);
  const args = filters.map(([, value]) => value);
  const stmt = db.prepare(`SELECT * FROM audit_event WHERE ${where.join(" AND ")} ORDER BY seq`);
  for (const row of stmt.iterate(...args) as Iterable<EventRow>) yield rowToEvent(row);
}

export function storedCheckpoints(db: Db, chainId: string, ownerKey: string): SignedCheckpoint[] {
  const rows = db
    .prepare("SELECT seq, head_hash, ts, sig FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq")
    .all(chainId) as Array<{
    seq: number;
    head_hash: string;
    ts: number;
    sig: string;
  }>;
  return rows.map((r) => ({
    checkpoint: {
      chain_id: chainId,
      format: "berth.audit.checkpoint.v1",
      head_hash: r.head_hash,
      key: ownerKey,
      seq: r.seq,
      ts: r.ts,
    },
    sig: r.sig,
  }));
}

/** Verifies a chain as stored, checking each stored payload text for canonical form (§8 check 7). */
export function verifyStoredChain(
  db: Db,
  chainId: string,
  opts: { key?: string; checkpoints?: SignedCheckpoint[]; expectHead?: { seq: number; hash: string } },
): VerifyResult {
  const rows = db
    .prepare("SELECT * FROM audit_event WHERE chain_id = ? ORDER BY seq")
    .iterate(chainId) as Iterable<EventRow>;
  const { events, payloadTextOf } = verifiableRows(rows);
  const owner = db.prepare("SELECT owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as
    | { owner_key: string }
    | undefined;
  const stored = owner ? storedCheckpoints(db, chainId, owner.owner_key) : [];
  const walked = verifyEvents(events, {
    ...(opts.key !== undefined ? { key: opts.key } : {}),
    chainId,
    checkpoints: [...stored, ...(opts.checkpoints ?? [])],
    ...(opts.expectHead ? { expectHead: opts.expectHead } : {}),
    payloadTextOf,
  });
  return withSummaryCheck(
    withSummaryCheck(walked, checkStoredSummaries(db, chainId)),
    storedTreeCheck(db, chainId, walked),
  );
}

/**
 * The start-up check (§7): verify from the newest stored checkpoint whose signature verifies and whose head is the
 * stored event at its seq (or from genesis if none) to the tip. Bounded by the checkpoint interval, not chain length.
 */
export function startupCheck(db: Db, chainId: string, ownerKey: string): VerifyResult {
  const genesisRow = db.prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq = 0").get(chainId) as
    | EventRow
    | undefined;
  const genesis = genesisRow
    ? verifyEvents([rowToEvent(genesisRow)], { key: ownerKey, chainId, payloadTextOf: () => genesisRow.payload })
    : undefined;
  if (!genesis?.ok) return genesis ?? verifyEvents([], { key: ownerKey, chainId });
  let start: { seq: number; hash: string; ts: number } | undefined;
  const hashAt = db.prepare("SELECT hash, ts FROM audit_event WHERE chain_id = ? AND seq = ?");
  for (const cp of storedCheckpoints(db, chainId, ownerKey).reverse()) {
    const at = hashAt.get(chainId, cp.checkpoint.seq) as { hash: string; ts: number } | undefined;
    if (at && at.hash === cp.checkpoint.head_hash && checkpointSignatureValid(cp)) {
      start = { seq: cp.checkpoint.seq, hash: at.hash, ts: at.ts };
      break;
    }
  }
  if (!start) return verifyStoredChain(db, chainId, { key: ownerKey, checkpoints: [] });
  const rows = db
    .prepare("SELECT * FROM audit_event WHERE chain_id = ? AND seq > ? ORDER BY seq")
    .all(chainId, start.seq) as EventRow[];
  const { events, payloadTextOf } = verifiableRows(rows);
  return verifyEvents(events, { key: ownerKey, chainId, after: start, payloadTextOf });
}

export function* exportChainLines(db: Db, chainId: string, from: number, to: number): Iterable<string> {
  for (const event of findEvents(db, chainId, { fromSeq: from, toSeq: to })) yield exportLine(event);
}

export function listChains(
  db: Db,
): Array<{ chain_id: string; owner_key: string; role: string; own: number; events: number }> {
  return db
    .prepare(
      "SELECT c.chain_id, c.owner_key, c.role, c.own, (SELECT COUNT(*) FROM audit_event e WHERE e.chain_id = c.chain_id) AS events FROM audit_chain c ORDER BY c.own DESC, c.created_ms",
    )
    .all() as Array<{ chain_id: string; owner_key: string; role: string; own: number; events: number }>;
}
