/**
 * The owner's audit chain on a `StoreEngine` (spec/audit-chain.md §6, §7, §10): the controller's chain, on SQLite or
 * PostgreSQL. The same tables, sealing, checkpoints and verification as the synchronous `Chain` the node daemon and
 * the Kubernetes provider keep (chain.ts); `append` runs inside the caller's transaction, so a state change and the
 * event that records it commit or roll back together.
 *
 * The sequence and hash link are serialised by the database, not by this process: on SQLite the transaction holds
 * the write lock (BEGIN IMMEDIATE); on PostgreSQL the first append of a transaction takes the chain's write lock
 * (`tx.writeLock`; a retry takes it before its snapshot, src/store/postgres-engine.ts) and locks the chain's row in
 * `audit_chain` (SELECT … FOR UPDATE, what `checkWritable` probes) before reading the tip, so two controllers
 * appending at once take turns, and the primary key (chain_id, seq) refuses a fork whatever happens.
 *
 * (About 460 lines, one concept: the synchronous chain's operations on a StoreEngine, one method each.)
 */
import { randomBytes } from "node:crypto";
import { checkpointSignatureValid, type SignedCheckpoint, signCheckpoint } from "../core/chain/checkpoint.js";
import {
  type ChainRole,
  type ChainTip,
  type EventDraft,
  genesisPayload,
  type SealedEvent,
  sealEvent,
} from "../core/chain/event.js";
import { leafHash } from "../core/chain/merkle.js";
import { checkpointOrigin, signCheckpointNote } from "../core/chain/note.js";
import { type Frontier, frontierRoot, pushLeaf } from "../core/chain/tree-hashes.js";
import { type VerifyResult, verifyEvents } from "../core/chain/verify.js";
import { nodeIdOf, type SigningKey } from "../core/crypto/ed25519.js";
import type { Query, StoreEngine, Tx } from "../store/engine.js";
import {
  ChainError,
  EVENT_COLUMNS,
  type EventRow,
  foreignOwnerError,
  INSERT_EVENT,
  rowToEvent,
  unverifiedChainError,
  verifiableRows,
  type WallClock,
} from "./chain.js";
import { type CheckpointPolicy, DEFAULT_CHECKPOINT_POLICY } from "./checkpoint-policy.js";
import { ensureChainSchemaOn } from "./schema.js";
import { checkStoredSummariesOn, withSummaryCheck } from "./summaries.js";
import { FrontierCache, frontierAtOn, INSERT_TREE_NODE, rowsToStore, storedTreeCheckOn } from "./tree-store.js";

/** PostgreSQL returns BIGINT as text unless told otherwise; the engine parses it, this keeps rows honest anyway. */
function numericRow(row: EventRow): EventRow {
  return { ...row, seq: Number(row.seq), ts: Number(row.ts) };
}

function eventOfRow(row: EventRow): SealedEvent {
  return rowToEvent(numericRow(row));
}

export interface FindQuery {
  readonly source?: string;
  readonly kind?: string;
  readonly phase?: string;
  readonly fromSeq?: number;
  readonly toSeq?: number;
}

export class EngineChain {
  private readonly listeners = new Set<(event: SealedEvent) => void>();
  /** The tip after this transaction's last append: the lock it holds keeps anyone else from moving it. */
  private readonly tipInTx = new WeakMap<Tx, ChainTip>();
  /** Issue 38: the Merkle tree's right edge per transaction, and the last committed one (tree-store.ts). */
  private readonly treeInTx = new WeakMap<Tx, Frontier>();
  private readonly frontiers = new FrontierCache();

  private constructor(
    private readonly engine: StoreEngine,
    private readonly key: SigningKey,
    readonly chainId: string,
    readonly role: ChainRole,
    private readonly clock: WallClock,
    readonly policy: CheckpointPolicy,
  ) {}

  get ownerKey(): string {
    return this.key.publicKey;
  }

  /**
   * Opens the component's own chain, creating schema and genesis in one transaction on first use, after the start-up
   * check (§7). Refuses a store whose own chain belongs to another key: a component never starts a fresh chain
   * silently.
   */
  static async open(
    engine: StoreEngine,
    key: SigningKey,
    role: ChainRole,
    clock: WallClock = Date.now,
    policy: CheckpointPolicy = DEFAULT_CHECKPOINT_POLICY,
  ): Promise<EngineChain> {
    const chainId = await engine.transaction(async (tx) => {
      await ensureChainSchemaOn(tx);
      const own = await tx.get<{ chain_id: string; owner_key: string }>(
        "SELECT chain_id, owner_key FROM audit_chain WHERE own = 1 ORDER BY created_ms DESC LIMIT 1",
      );
      if (own) {
        if (own.owner_key !== key.publicKey) throw foreignOwnerError(own.chain_id, own.owner_key, key.publicKey);
        const check = await startupCheckOn(tx, own.chain_id, key.publicKey);
        if (!check.ok) throw unverifiedChainError(own.chain_id, check);
        return own.chain_id;
      }
      const id = randomBytes(16).toString("hex");
      const nowMs = clock();
      await tx.run("INSERT INTO audit_chain (chain_id, owner_key, role, own, created_ms) VALUES (?,?,?,1,?)", [
        id,
        key.publicKey,
        role,
        nowMs,
      ]);
      const payload = genesisPayload({ role, ownerKey: key.publicKey, ownerId: nodeIdOf(key.publicKey) });
      const { event, canonicalPayload } = sealEvent({
        chainId: id,
        tip: undefined,
        nowMs,
        draft: { source: "chain", kind: "chain.genesis", payload },
        key,
      });
      await insertEvent(tx, event, canonicalPayload);
      // The genesis is leaf 0 of the chain's tree: alone it closes no stored subtree, so no tree row is written.
      return id;
    });
    return new EngineChain(engine, key, chainId, role, clock, policy);
  }

  /** Appends inside the caller's transaction; the event is announced to listeners only after commit. */
  async append(tx: Tx, draft: EventDraft): Promise<SealedEvent> {
    const tip = this.tipInTx.get(tx) ?? (await this.lockedTip(tx));
    const { event, canonicalPayload } = sealEvent({
      chainId: this.chainId,
      tip,
      nowMs: this.clock(),
      draft,
      key: this.key,
    });
    await insertEvent(tx, event, canonicalPayload);
    // Issue 38: the event's leaf and the stored subtrees it closes (about one row per 8 events), in this
    // transaction.
    const frontier = await this.frontierIn(tx, tip);
    for (const s of rowsToStore(pushLeaf(frontier, leafHash(event.hash))))
      await tx.run(INSERT_TREE_NODE, [this.chainId, s.level, s.index, s.hash.toString("hex")]);
    this.tipInTx.set(tx, { seq: event.seq, hash: event.hash, ts: event.ts });
    if (this.listeners.size > 0) tx.afterCommit(() => this.emit(event));
    // §10: a checkpoint every N events (policy), keyed on the seq itself so writers agree on who takes it.
    if (draft.kind !== "chain.checkpoint" && event.seq % this.policy.everyEvents === 0) await this.checkpoint(tx);
    return event;
  }

  /** The tree's right edge at `tip` for this transaction: the committed one if it ends there, else read back. */
  private async frontierIn(tx: Tx, tip: ChainTip | undefined): Promise<Frontier> {
    let frontier = this.treeInTx.get(tx);
    if (frontier !== undefined) return frontier;
    frontier = this.frontiers.at(tip) ?? (await frontierAtOn(tx, this.chainId, tip === undefined ? 0 : tip.seq + 1));
    this.treeInTx.set(tx, frontier);
    const f = frontier;
    tx.afterCommit(() => {
      const last = this.tipInTx.get(tx);
      if (last !== undefined) this.frontiers.keep(f, last.hash);
    });
    return frontier;
  }

  /** The tip, with the chain locked for the rest of `tx` on an engine with several writers. */
  private async lockedTip(tx: Tx): Promise<ChainTip | undefined> {
    if (tx.kind === "postgres") {
      await tx.writeLock(`chain ${this.chainId}`);
      await tx.get("SELECT chain_id FROM audit_chain WHERE chain_id = ? FOR UPDATE", [this.chainId]);
    }
    return tipOn(tx, this.chainId);
  }

  /**
   * Signs the current head, stores the checkpoint, and records it in the chain (§10) with its Merkle checkpoint note
   * (issue 38: C2SP tlog-checkpoint, the tree of every event through the head, root folded from the tree's edge).
   */
  async checkpoint(tx: Tx): Promise<SignedCheckpoint> {
    const tip = this.tipInTx.get(tx) ?? (await this.lockedTip(tx));
    if (tip === undefined) throw new ChainError(`chain ${this.chainId} has no events to checkpoint`);
    const cp = signCheckpoint(
      this.key,
      { chainId: this.chainId, seq: tip.seq, hash: tip.hash },
      Math.max(this.clock(), tip.ts),
    );
    const frontier = await this.frontierIn(tx, tip);
    const note = signCheckpointNote(this.key, {
      origin: checkpointOrigin(this.chainId),
      size: frontier.size,
      root: frontierRoot(frontier),
    });
    // A signed head may be handed out as soon as it is read: it must never name events a power loss could take back.
    tx.requireDurable();
    await tx.run("INSERT INTO audit_checkpoint (chain_id, seq, head_hash, ts, sig) VALUES (?,?,?,?,?)", [
      this.chainId,
      cp.checkpoint.seq,
      cp.checkpoint.head_hash,
      cp.checkpoint.ts,
      cp.sig,
    ]);
    await this.append(tx, {
      source: "chain",
      kind: "chain.checkpoint",
      payload: { head_hash: tip.hash, seq: tip.seq, sig: cp.sig, note },
    });
    return cp;
  }

  /** Writes a checkpoint when events were appended since the last one and it is older than the policy's T, or when forced. */
  async checkpointIfDue(force = false): Promise<SignedCheckpoint | undefined> {
    return this.engine.transaction(async (tx) => {
      const tip = await this.lockedTip(tx);
      if (tip === undefined) return undefined;
      const last = await tx.get<{ seq: number; ts: number }>(
        "SELECT seq, ts FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq DESC LIMIT 1",
        [this.chainId],
      );
      // The newest event after a checkpoint is its own chain.checkpoint record, which does not count as new.
      const newEvents = last === undefined ? tip.seq > 0 : tip.seq > Number(last.seq) + 1;
      if (!newEvents) return undefined;
      if (!force && last && this.clock() - Number(last.ts) < this.policy.everyMs) return undefined;
      return this.checkpoint(tx);
    });
  }

  async tip(): Promise<ChainTip> {
    const tip = await this.engine.read((q) => tipOn(q, this.chainId));
    if (tip === undefined) throw new ChainError(`chain ${this.chainId} has no events`);
    return tip;
  }

  async get(seq: number): Promise<SealedEvent | undefined> {
    const row = await this.engine.read((q) =>
      q.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? AND seq = ?`, [this.chainId, seq]),
    );
    return row ? eventOfRow(row) : undefined;
  }

  /**
   * This chain's event with `hash`. `at`, the seq a caller's own table recorded for it (a decision's row), makes it
   * one primary-key read; without it (or when it names another event) the chain is scanned: no index keys on the
   * hash (schema v2, §7), so a caller on a hot path passes `at`. The scan runs newest first: the events asked for by
   * hash are mostly recent ones (a decision just made).
   */
  async byHash(hash: string, at?: number | null): Promise<SealedEvent | undefined> {
    const hinted = at === undefined || at === null ? undefined : await this.get(at);
    if (hinted?.hash === hash) return hinted;
    const row = await this.engine.read((q) =>
      q.get<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? AND hash = ? ORDER BY seq DESC LIMIT 1`,
        [this.chainId, hash],
      ),
    );
    return row ? eventOfRow(row) : undefined;
  }

  async find(q: FindQuery = {}): Promise<SealedEvent[]> {
    return this.engine.read((r) => findEventsOn(r, this.chainId, q));
  }

  /** The last `n` events, oldest first. */
  async tail(n: number): Promise<SealedEvent[]> {
    const rows = await this.engine.read((q) =>
      q.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? ORDER BY seq DESC LIMIT ?`, [
        this.chainId,
        n,
      ]),
    );
    return rows.reverse().map(eventOfRow);
  }

  async checkpoints(): Promise<SignedCheckpoint[]> {
    return this.engine.read((q) => checkpointsOn(q, this.chainId, this.ownerKey));
  }

  /** Subscribes to committed events; returns the unsubscribe function. */
  subscribe(listener: (event: SealedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: SealedEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** The whole stored chain verified under the owner key, with its stored checkpoints. */
  async verifyStored(): Promise<VerifyResult> {
    return this.engine.read((q) => verifyStoredOn(q, this.chainId, { key: this.ownerKey }));
  }
}

async function insertEvent(tx: Tx, event: SealedEvent, canonicalPayload: string): Promise<void> {
  await tx.run(INSERT_EVENT, [
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
  ]);
}

/** The tip of a chain (its last event's seq, hash and time), or undefined for a chain with no event. */
export async function tipOn(q: Query, chainId: string): Promise<ChainTip | undefined> {
  const row = await q.get<ChainTip>(
    "SELECT seq, hash, ts FROM audit_event WHERE chain_id = ? ORDER BY seq DESC LIMIT 1",
    [chainId],
  );
  return row ? { seq: Number(row.seq), hash: row.hash, ts: Number(row.ts) } : undefined;
}

export async function findEventsOn(q: Query, chainId: string, find: FindQuery): Promise<SealedEvent[]> {
  const where = ["chain_id = ?"];
  const args: Array<string | number> = [chainId];
  const filter = (clause: string, value: string | number | undefined) => {
    if (value === undefined) return;
    where.push(clause);
    args.push(value);
  };
  filter("source = ?", find.source);
  filter("kind = ?", find.kind);
  filter("phase = ?", find.phase);
  filter("seq >= ?", find.fromSeq);
  filter("seq <= ?", find.toSeq);
  const rows = await q.all<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM audit_event WHERE ${where.join(" AND ")} ORDER BY seq`,
    args,
  );
  return rows.map(eventOfRow);
}

/** The id of the chain this store's component writes, or undefined when it has none (rejects without audit tables). */
export async function ownChainIdOn(q: Query): Promise<string | undefined> {
  return (await q.get<{ chain_id: string }>("SELECT chain_id FROM audit_chain WHERE own = 1"))?.chain_id;
}

/**
 * The chain this store's component writes (the newest, after a reseal) and its owner key, or undefined when it has none
 * (rejects without audit tables): read.ts's `ownChain` on a `Query`.
 */
export function ownChainOn(q: Query): Promise<{ chain_id: string; owner_key: string } | undefined> {
  return q.get<{ chain_id: string; owner_key: string }>(
    "SELECT chain_id, owner_key FROM audit_chain WHERE own = 1 ORDER BY created_ms DESC LIMIT 1",
  );
}

/** The payloads (canonical JSON text) of a chain's events of one source and kind, oldest first. */
export async function eventPayloadsOn(q: Query, chainId: string, source: string, kind: string): Promise<string[]> {
  const rows = await q.all<{ payload: string }>(
    "SELECT payload FROM audit_event WHERE chain_id = ? AND source = ? AND kind = ? ORDER BY seq",
    [chainId, source, kind],
  );
  return rows.map((r) => r.payload);
}

/**
 * The payload (canonical JSON text) of the event of this kind with this hash: at its place (`at`) when the caller
 * recorded one, else found by its hash on whichever stored chain holds it. Undefined when there is none.
 */
export async function eventPayloadOn(
  q: Query,
  hash: string,
  kind: string,
  at: { readonly chain_id: string; readonly seq: number } | null,
): Promise<string | undefined> {
  const row = at
    ? await q.get<{ payload: string }>(
        "SELECT payload FROM audit_event WHERE chain_id = ? AND seq = ? AND hash = ? AND kind = ?",
        [at.chain_id, at.seq, hash, kind],
      )
    : await q.get<{ payload: string }>("SELECT payload FROM audit_event WHERE hash = ? AND kind = ?", [hash, kind]);
  return row?.payload;
}

export async function checkpointsOn(q: Query, chainId: string, ownerKey: string): Promise<SignedCheckpoint[]> {
  const rows = await q.all<{ seq: number; head_hash: string; ts: number; sig: string }>(
    "SELECT seq, head_hash, ts, sig FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq",
    [chainId],
  );
  return rows.map((r) => ({
    checkpoint: {
      chain_id: chainId,
      format: "berth.audit.checkpoint.v1",
      head_hash: r.head_hash,
      key: ownerKey,
      seq: Number(r.seq),
      ts: Number(r.ts),
    },
    sig: r.sig,
  }));
}

/**
 * Verifies a chain as stored, checking each stored payload text for canonical form (§8 check 7). Reads the whole
 * chain into memory: this is the offline check (tests, `berth migrate`), not the start-up one.
 */
export async function verifyStoredOn(
  q: Query,
  chainId: string,
  opts: { key?: string; checkpoints?: SignedCheckpoint[]; expectHead?: { seq: number; hash: string } },
): Promise<VerifyResult> {
  const rows = await q.all<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? ORDER BY seq`, [
    chainId,
  ]);
  const { events, payloadTextOf } = verifiableRows(rows.map(numericRow));
  const owner = await q.get<{ owner_key: string }>("SELECT owner_key FROM audit_chain WHERE chain_id = ?", [chainId]);
  const stored = owner ? await checkpointsOn(q, chainId, owner.owner_key) : [];
  const walked = verifyEvents(events, {
    ...(opts.key !== undefined ? { key: opts.key } : {}),
    chainId,
    checkpoints: [...stored, ...(opts.checkpoints ?? [])],
    ...(opts.expectHead ? { expectHead: opts.expectHead } : {}),
    payloadTextOf,
  });
  return withSummaryCheck(
    withSummaryCheck(walked, await checkStoredSummariesOn(q, chainId)),
    await storedTreeCheckOn(q, chainId, walked),
  );
}

/**
 * The start-up check (§7): verify from the newest stored checkpoint whose signature verifies and whose head is the
 * stored event at its seq (or from genesis if none) to the tip. Bounded by the checkpoint interval, not chain length.
 */
export async function startupCheckOn(q: Query, chainId: string, ownerKey: string): Promise<VerifyResult> {
  const genesisRow = await q.get<EventRow>(`SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? AND seq = 0`, [
    chainId,
  ]);
  const genesis = genesisRow
    ? verifyEvents([eventOfRow(genesisRow)], { key: ownerKey, chainId, payloadTextOf: () => genesisRow.payload })
    : undefined;
  if (!genesis?.ok) return genesis ?? verifyEvents([], { key: ownerKey, chainId });
  let start: { seq: number; hash: string; ts: number } | undefined;
  for (const cp of (await checkpointsOn(q, chainId, ownerKey)).reverse()) {
    const at = await q.get<{ hash: string; ts: number }>(
      "SELECT hash, ts FROM audit_event WHERE chain_id = ? AND seq = ?",
      [chainId, cp.checkpoint.seq],
    );
    if (at && at.hash === cp.checkpoint.head_hash && checkpointSignatureValid(cp)) {
      start = { seq: cp.checkpoint.seq, hash: at.hash, ts: Number(at.ts) };
      break;
    }
  }
  if (!start) return verifyStoredOn(q, chainId, { key: ownerKey, checkpoints: [] });
  const rows = await q.all<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM audit_event WHERE chain_id = ? AND seq > ? ORDER BY seq`,
    [chainId, start.seq],
  );
  const { events, payloadTextOf } = verifiableRows(rows.map(numericRow));
  return verifyEvents(events, { key: ownerKey, chainId, after: start, payloadTextOf });
}
