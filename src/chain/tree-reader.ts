/**
 * The Merkle tree of a stored chain as the store keeps it (issue 38; tree-store.ts): complete-subtree hashes, tree
 * heads, proofs and C2SP tiles, each reading O(log n) stored rows (and at most 16 event hashes per level below the
 * stored ones). What `GET /api/v1/audit/proof/…` and the tlog tiles answer from; read-only, on any `Db` (a SQLite
 * file, or the PostgreSQL mirror, which copies the store's tree rows).
 */
import type { Hash } from "../core/chain/merkle.js";
import {
  consistencyProofFrom,
  inclusionProofFrom,
  type StoredHashReader,
  treeHeadFrom,
} from "../core/chain/tree-hashes.js";
import type { ChainTreeView } from "../core/chain/tree-checkpoint.js";
import type { Db } from "../store/sqlite.js";
import { storedTreeReader } from "./tree-store.js";

export class StoredChainTree {
  /** A complete subtree at (level, index), from the stored tree. */
  readonly read: StoredHashReader;

  constructor(
    private readonly db: Db,
    readonly chainId: string,
  ) {
    this.read = storedTreeReader(db, chainId);
  }

  /** How many events (leaves) the chain holds now. */
  size(): number {
    const row = this.db.prepare("SELECT MAX(seq) AS seq FROM audit_event WHERE chain_id = ?").get(this.chainId) as
      | { seq: number | null }
      | undefined;
    return row?.seq === null || row?.seq === undefined ? 0 : Number(row.seq) + 1;
  }

  /** The tree size of the newest chained checkpoint (it covers seq 0..S), or null while there is none. */
  checkpointSize(): number | null {
    const row = this.db.prepare("SELECT MAX(seq) AS seq FROM audit_checkpoint WHERE chain_id = ?").get(this.chainId) as
      | { seq: number | null }
      | undefined;
    return row?.seq === null || row?.seq === undefined ? null : Number(row.seq) + 1;
  }

  eventHashes(start: number, count: number): string[] {
    const rows = this.db
      .prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq")
      .all(this.chainId, start, start + count) as Array<{ hash: string }>;
    if (rows.length !== count)
      throw new Error(`chain ${this.chainId} holds ${rows.length} of the events ${start}..${start + count - 1}`);
    return rows.map((r) => r.hash);
  }

  root(size: number): Hash {
    return treeHeadFrom(this.read, size);
  }

  inclusion(index: number, size: number): Hash[] {
    return inclusionProofFrom(this.read, index, size);
  }

  consistency(oldSize: number, newSize: number): Hash[] {
    return consistencyProofFrom(this.read, oldSize, newSize);
  }
}

/** The first `size` events' tree of a stored chain, as the audit verbs read it (core/chain/tree-checkpoint.ts). */
export function storedTreeView(db: Db, chainId: string, size: number): ChainTreeView {
  const tree = new StoredChainTree(db, chainId);
  return { chainId, size, read: tree.read, eventHash: (seq) => tree.eventHashes(seq, 1)[0] as string };
}
