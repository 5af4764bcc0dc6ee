/**
 * The Merkle tree of a stored chain, read from its event hashes (issue 38): complete-subtree hashes, tree heads,
 * proofs and C2SP tiles, each reading only the events under the subtrees it needs (an inclusion or consistency proof
 * reads at most the tree's n leaves once; a level-0 tile 256). What `GET /api/v1/audit/proof/…` and the tlog tiles
 * answer from; read-only, on any `Db` (a SQLite file, or the PostgreSQL mirror).
 */
import { consistencyProofWith, type Hash, inclusionProofWith, leafHash, treeRoot } from "../core/chain/merkle.js";
import { type StoredHashReader, subtreeHashFrom } from "../core/chain/tree-hashes.js";
import type { Db } from "../store/sqlite.js";

export class StoredChainTree {
  constructor(
    private readonly db: Db,
    readonly chainId: string,
  ) {}

  /** How many events (leaves) the chain holds now. */
  size(): number {
    const row = this.db.prepare("SELECT MAX(seq) AS seq FROM audit_event WHERE chain_id = ?").get(this.chainId) as { seq: number | null } | undefined;
    return row?.seq === null || row?.seq === undefined ? 0 : Number(row.seq) + 1;
  }

  /** The tree size of the newest chained checkpoint (it covers seq 0..S), or null while there is none. */
  checkpointSize(): number | null {
    const row = this.db.prepare("SELECT MAX(seq) AS seq FROM audit_checkpoint WHERE chain_id = ?").get(this.chainId) as { seq: number | null } | undefined;
    return row?.seq === null || row?.seq === undefined ? null : Number(row.seq) + 1;
  }

  eventHashes(start: number, count: number): string[] {
    const rows = this.db.prepare("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq").all(this.chainId, start, start + count) as Array<{ hash: string }>;
    if (rows.length !== count) throw new Error(`chain ${this.chainId} holds ${rows.length} of the events ${start}..${start + count - 1}`);
    return rows.map((r) => r.hash);
  }

  /** The complete subtree at (level, index), rehashed from its 2^level events. */
  readonly read: StoredHashReader = (level, index) => treeRoot(this.eventHashes(index * 2 ** level, 2 ** level).map(leafHash));

  private readonly subtree = (start: number, n: number): Hash => subtreeHashFrom(this.read, start, n);

  root(size: number): Hash {
    return subtreeHashFrom(this.read, 0, size);
  }

  inclusion(index: number, size: number): Hash[] {
    return inclusionProofWith(this.subtree, index, size);
  }

  consistency(oldSize: number, newSize: number): Hash[] {
    return consistencyProofWith(this.subtree, oldSize, newSize);
  }
}
