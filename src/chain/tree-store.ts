/**
 * A chain's Merkle tree kept in the store (issue 38; spec/audit-chain.md §7, §11): RFC 6962 hashes over the events'
 * hashes, written in the append's own transaction. Table `audit_tree` holds every complete subtree from level 4 up
 * (`STORED_FROM_LEVEL`: about one row per 8 events: n/16 at level 4, n/32 at level 5, …); the levels below are rehashed from at most 16 event hashes
 * when a proof needs them. So a tree head, an inclusion or a consistency proof at any size reads O(log n) rows, never
 * the whole chain.
 *
 * The appender keeps the tree's right edge (the frontier, core/chain/tree-hashes.ts) in memory between transactions,
 * keyed on the tip it ends at: a transaction that starts at that tip extends it without a read; one that finds
 * another tip (another process appended) reads the frontier back, O(log n) rows.
 *
 * Readers: `storedTreeReader` on a SQLite connection (a home's file, a node.db, the PostgreSQL mirror), and
 * `storedTreeOn` on any `Query` (the controller's store on either engine). `treeCheckOf` is the verifier's side: the
 * stored rows against the tree the events hash to, and each chained checkpoint against the tree at its size.
 */
import { type Hash, leafHash, treeRoot } from "../core/chain/merkle.js";
import { chainedNoteProblem } from "../core/chain/tree-checkpoint.js";
import {
  copyFrontier,
  type Frontier,
  frontierFrom,
  frontierRoot,
  pushLeaf,
  STORED_FROM_LEVEL,
  type StoredHash,
  type StoredHashReader,
  subtreesRead,
  tiledReader,
} from "../core/chain/tree-hashes.js";
import type { VerifyFailure } from "../core/chain/verify.js";
import type { Query, Tx } from "../store/engine.js";
import type { Db } from "../store/sqlite.js";

export const TREE_TABLE_SQLITE = `
        CREATE TABLE IF NOT EXISTS audit_tree (chain_id TEXT NOT NULL, level INTEGER NOT NULL, idx INTEGER NOT NULL, hash TEXT NOT NULL,
                                 PRIMARY KEY (chain_id, level, idx)) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS audit_tree_no_update BEFORE UPDATE ON audit_tree BEGIN SELECT RAISE(ABORT, 'the audit tree is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS audit_tree_no_delete BEFORE DELETE ON audit_tree BEGIN SELECT RAISE(ABORT, 'the audit tree is append-only'); END;
`;

export const TREE_TABLE_POSTGRES = `
      CREATE TABLE IF NOT EXISTS audit_tree (chain_id TEXT NOT NULL, level INTEGER NOT NULL, idx BIGINT NOT NULL, hash TEXT NOT NULL,
                               PRIMARY KEY (chain_id, level, idx));
      CREATE OR REPLACE TRIGGER audit_tree_append_only BEFORE UPDATE OR DELETE ON audit_tree FOR EACH ROW EXECUTE FUNCTION berth_append_only();
`;

export const INSERT_TREE_NODE = "INSERT INTO audit_tree (chain_id, level, idx, hash) VALUES (?,?,?,?)";

/** The stored rows among the hashes a leaf closed (levels below the tiles are not stored). */
export function rowsToStore(closed: readonly StoredHash[]): StoredHash[] {
  return closed.filter((s) => s.level >= STORED_FROM_LEVEL);
}

/** The last committed frontier of one chain in this process, and the tip it ends at. */
export class FrontierCache {
  private last: { tipHash: string; frontier: Frontier } | undefined;

  /** A copy of the cached frontier if it ends at `tip` (the transaction extends the copy), else undefined. */
  at(tip: { seq: number; hash: string } | undefined): Frontier | undefined {
    if (tip === undefined || this.last === undefined) return undefined;
    if (this.last.frontier.size !== tip.seq + 1 || this.last.tipHash !== tip.hash) return undefined;
    return copyFrontier(this.last.frontier);
  }

  /** After a commit: the transaction's frontier, ending at the event with `tipHash`. */
  keep(frontier: Frontier, tipHash: string): void {
    this.last = { tipHash, frontier: copyFrontier(frontier) };
  }
}

// -- SQLite (synchronous) ------------------------------------------------------------------------------------------

/** A stored subtree on a SQLite connection: from `audit_tree` at level 4 and up, rehashed from event hashes below. */
export function storedTreeReader(db: Db, chainId: string): StoredHashReader {
  const node = db.prepare("SELECT hash FROM audit_tree WHERE chain_id = ? AND level = ? AND idx = ?");
  const leaves = db.prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq");
  return tiledReader(
    (level, index) => {
      const row = node.get(chainId, level, index) as { hash: string } | undefined;
      if (row === undefined)
        throw new Error(`chain ${chainId}: the stored Merkle tree lacks the subtree at level ${level}, index ${index}`);
      return Buffer.from(row.hash, "hex");
    },
    (start, count) => {
      const rows = leaves.all(chainId, start, start + count) as Array<{ hash: string }>;
      if (rows.length !== count)
        throw new Error(`chain ${chainId} holds ${rows.length} of the events ${start}..${start + count - 1}`);
      return rows.map((r) => leafHash(r.hash));
    },
  );
}

/** The frontier of the first `size` leaves, from the stored tree (O(log n) rows). */
export function frontierAt(db: Db, chainId: string, size: number): Frontier {
  return frontierFrom(storedTreeReader(db, chainId), size);
}

/** How many leaves the stored tree's level-4 rows cover (the rows are written in order, so the highest one says). */
function coveredSqlite(db: Db, chainId: string): number {
  const row = db
    .prepare("SELECT MAX(idx) AS idx FROM audit_tree WHERE chain_id = ? AND level = ?")
    .get(chainId, STORED_FROM_LEVEL) as { idx: number | null };
  return row.idx === null ? 0 : (Number(row.idx) + 1) * 2 ** STORED_FROM_LEVEL;
}

/**
 * Extends the stored tree of `chainId` to every stored event, in the caller's write transaction: all of it at the
 * migration to schema v3 (a chain written before the tree), the imported events after an import. Reads each event
 * hash past what the tree covers once; returns how many leaves it hashed.
 */
export function catchUpTree(db: Db, chainId: string): number {
  const covered = coveredSqlite(db, chainId);
  const frontier = frontierAt(db, chainId, covered);
  const insert = db.prepare(INSERT_TREE_NODE);
  // In pages: better-sqlite3 runs no other statement on a connection while one is being iterated.
  const page = db
    .prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq")
    .pluck();
  let hashed = 0;
  for (let from = covered; ; from += CATCH_UP_PAGE) {
    const hashes = page.all(chainId, from, from + CATCH_UP_PAGE) as string[];
    for (const hash of hashes) {
      for (const s of rowsToStore(pushLeaf(frontier, leafHash(hash))))
        insert.run(chainId, s.level, s.index, s.hash.toString("hex"));
      hashed++;
    }
    if (hashes.length < CATCH_UP_PAGE) return hashed;
  }
}

const CATCH_UP_PAGE = 50_000;

/** Every chain's tree caught up (the migration to v3 builds them all once). */
export function catchUpAllTrees(db: Db): void {
  for (const { chain_id } of db.prepare("SELECT chain_id FROM audit_chain ORDER BY chain_id").all() as Array<{
    chain_id: string;
  }>)
    catchUpTree(db, chain_id);
}

// -- any engine (asynchronous) -------------------------------------------------------------------------------------

/**
 * Fetches the named subtrees in two queries (tree rows; event hashes for the levels below the tiles) and answers them
 * from memory. Asked for one it did not fetch, it throws: the plan came from `subtreesRead`, which is exact.
 */
async function fetchSubtrees(
  q: Query,
  chainId: string,
  needs: ReadonlyArray<{ level: number; index: number }>,
): Promise<StoredHashReader> {
  const have = new Map<string, Hash>();
  const stored = needs.filter((n) => n.level >= STORED_FROM_LEVEL);
  const below = needs.filter((n) => n.level < STORED_FROM_LEVEL);
  if (stored.length > 0) {
    const rows = await q.all<{ level: number; idx: number; hash: string }>(
      `SELECT level, idx, hash FROM audit_tree WHERE chain_id = ? AND (${stored.map(() => "(level = ? AND idx = ?)").join(" OR ")})`,
      [chainId, ...stored.flatMap((n) => [n.level, n.index])],
    );
    for (const r of rows) have.set(`${Number(r.level)}/${Number(r.idx)}`, Buffer.from(r.hash, "hex"));
  }
  if (below.length > 0) {
    const ranges = below.map((n) => [n.index * 2 ** n.level, (n.index + 1) * 2 ** n.level] as const);
    const rows = await q.all<{ seq: number; hash: string }>(
      `SELECT seq, hash FROM audit_event WHERE chain_id = ? AND (${ranges.map(() => "(seq >= ? AND seq < ?)").join(" OR ")})`,
      [chainId, ...ranges.flat()],
    );
    const leaves = new Map(rows.map((r) => [Number(r.seq), leafHash(r.hash)]));
    for (const [i, n] of below.entries()) {
      const [from, to] = ranges[i] as readonly [number, number];
      const list: Hash[] = [];
      for (let s = from; s < to; s++) {
        const leaf = leaves.get(s);
        if (leaf !== undefined) list.push(leaf);
      }
      if (list.length === to - from) have.set(`${n.level}/${n.index}`, treeRoot(list));
    }
  }
  return (level, index) => {
    const hash = have.get(`${level}/${index}`);
    if (hash === undefined)
      throw new Error(`chain ${chainId}: the stored Merkle tree lacks the subtree at level ${level}, index ${index}`);
    return hash;
  };
}

/** Runs a tree computation over the stored tree on any engine: its reads planned first, fetched, then answered. */
export async function onStoredTree<T>(q: Query, chainId: string, compute: (read: StoredHashReader) => T): Promise<T> {
  const read = await fetchSubtrees(
    q,
    chainId,
    subtreesRead((r) => void compute(r)),
  );
  return compute(read);
}

export async function frontierAtOn(q: Query, chainId: string, size: number): Promise<Frontier> {
  return onStoredTree(q, chainId, (read) => frontierFrom(read, size));
}

/** `catchUpTree` on any engine, in the caller's transaction; event hashes are read in pages. */
export async function catchUpTreeOn(q: Tx, chainId: string): Promise<number> {
  const top = await q.get<{ idx: number | null }>(
    "SELECT MAX(idx) AS idx FROM audit_tree WHERE chain_id = ? AND level = ?",
    [chainId, STORED_FROM_LEVEL],
  );
  const covered = top?.idx === null || top?.idx === undefined ? 0 : (Number(top.idx) + 1) * 2 ** STORED_FROM_LEVEL;
  const frontier = await frontierAtOn(q, chainId, covered);
  let hashed = 0;
  for (let from = covered; ; from += CATCH_UP_PAGE) {
    const rows = await q.all<{ hash: string }>(
      "SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
      [chainId, from, from + CATCH_UP_PAGE],
    );
    for (const row of rows) {
      for (const s of rowsToStore(pushLeaf(frontier, leafHash(row.hash))))
        await q.run(INSERT_TREE_NODE, [chainId, s.level, s.index, s.hash.toString("hex")]);
      hashed++;
    }
    if (rows.length < CATCH_UP_PAGE) return hashed;
  }
}

// -- verification --------------------------------------------------------------------------------------------------

/**
 * The stored tree against the events (spec/audit-chain.md §8 checks 11–12): rehashes the chain's leaves in order and
 * compares every stored row that covers only events walked; a row that differs or is missing is a `tree` failure at
 * the last event it covers. Each chained checkpoint note is checked against the root at its size (`checkNote`, from
 * core/chain/verify.ts) as the walk passes it. O(n) hashes, once.
 */
export function treeCheckOf(
  hashes: Iterable<string>,
  stored: ReadonlyMap<string, string>,
  notes: ReadonlyMap<number, string>,
  checkNote: (note: string, size: number, root: Hash) => string | undefined,
): VerifyFailure | undefined {
  const frontier: Frontier = { size: 0, levels: [] };
  for (const hash of hashes) {
    const at = frontier.size;
    const note = notes.get(at);
    if (note !== undefined) {
      const problem = checkNote(note, at, frontierRoot(frontier));
      if (problem !== undefined) return { seq: at, code: "checkpoint", detail: problem };
    }
    for (const s of rowsToStore(pushLeaf(frontier, leafHash(hash)))) {
      const found = stored.get(`${s.level}/${s.index}`);
      const want = s.hash.toString("hex");
      if (found === want) continue;
      const first = s.index * 2 ** s.level;
      const seen = found === undefined ? "is missing" : `is ${found}`;
      return {
        seq: at,
        code: "tree",
        detail: `the stored Merkle tree node at level ${s.level}, index ${s.index} (events ${first}..${at}) ${seen}; the events hash to ${want}: the stored tree was altered`,
      };
    }
  }
  return undefined;
}

/** The rows and notes `treeCheckOf` compares, for the first `size` events (a writer may have appended since). */
function treeCheckInputs(
  rows: Iterable<{ level: number; idx: number; hash: string }>,
  notes: Iterable<{ seq: number; payload: string }>,
  size: number,
) {
  const stored = new Map<string, string>();
  for (const r of rows) {
    const level = Number(r.level);
    const idx = Number(r.idx);
    if ((idx + 1) * 2 ** level <= size) stored.set(`${level}/${idx}`, r.hash);
  }
  const chained = new Map<number, string>();
  for (const n of notes) {
    const seq = Number(n.seq);
    if (seq >= size) continue;
    let note: unknown;
    try {
      note = (JSON.parse(n.payload) as { note?: unknown }).note;
    } catch {
      continue; // the walk fails an unparseable payload at its seq (payload_hash)
    }
    if (note !== undefined) chained.set(seq, note as string);
  }
  return { stored, chained };
}

const NOTES_SQL =
  "SELECT seq, payload FROM audit_event WHERE chain_id = ? AND source = 'chain' AND kind = 'chain.checkpoint' ORDER BY seq";

/**
 * §8 checks 11–12 on a SQLite connection, over the events the walk verified (`walked.head`): the stored tree and the
 * chained checkpoint notes against the events. A database without the table (written before v3, opened read-only)
 * has no tree to check.
 */
export function storedTreeCheck(
  db: Db,
  chainId: string,
  walked: { head: { seq: number } | null },
): { failure?: VerifyFailure } {
  if (walked.head === null) return {};
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_tree'").get() === undefined)
    return {};
  const size = walked.head.seq + 1;
  const owner = db.prepare("SELECT owner_key FROM audit_chain WHERE chain_id = ?").get(chainId) as
    | { owner_key: string }
    | undefined;
  if (owner === undefined) return {};
  const { stored, chained } = treeCheckInputs(
    db.prepare("SELECT level, idx, hash FROM audit_tree WHERE chain_id = ?").iterate(chainId) as Iterable<{
      level: number;
      idx: number;
      hash: string;
    }>,
    db.prepare(NOTES_SQL).iterate(chainId) as Iterable<{ seq: number; payload: string }>,
    size,
  );
  const hashes = db
    .prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq < ? ORDER BY seq")
    .pluck()
    .iterate(chainId, size) as Iterable<string>;
  const failure = treeCheckOf(hashes, stored, chained, (note, at, root) =>
    chainedNoteProblem(note, owner.owner_key, chainId, at, root),
  );
  return failure ? { failure } : {};
}

/** The same check on any engine. */
export async function storedTreeCheckOn(
  q: Query,
  chainId: string,
  walked: { head: { seq: number } | null },
): Promise<{ failure?: VerifyFailure }> {
  if (walked.head === null) return {};
  const table =
    q.kind === "sqlite"
      ? await q.get("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit_tree'")
      : await q.get("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'audit_tree'");
  if (table === undefined) return {};
  const size = walked.head.seq + 1;
  const owner = await q.get<{ owner_key: string }>("SELECT owner_key FROM audit_chain WHERE chain_id = ?", [chainId]);
  if (owner === undefined) return {};
  const { stored, chained } = treeCheckInputs(
    await q.all<{ level: number; idx: number; hash: string }>(
      "SELECT level, idx, hash FROM audit_tree WHERE chain_id = ?",
      [chainId],
    ),
    await q.all<{ seq: number; payload: string }>(NOTES_SQL, [chainId]),
    size,
  );
  const hashes = (
    await q.all<{ hash: string }>("SELECT hash FROM audit_event WHERE chain_id = ? AND seq < ? ORDER BY seq", [
      chainId,
      size,
    ])
  ).map((r) => r.hash);
  const failure = treeCheckOf(hashes, stored, chained, (note, at, root) =>
    chainedNoteProblem(note, owner.owner_key, chainId, at, root),
  );
  return failure ? { failure } : {};
}
