/**
 * What a controller shows its nodes of its own history (issue 38): the Merkle checkpoint of its newest chained
 * checkpoint (`audit_checkpoint`, spec/audit-chain.md §10: every 1000 events, every 600 s with new events, at clean
 * shutdown, and on demand with `berth audit checkpoint`), as a C2SP signed note, and the RFC 9162 consistency proof
 * from the tree size a node holds. The node checks both (src/core/mesh/witness.ts).
 *
 * The tree covers seq 0..S of the checkpoint at seq S (size S + 1): a checkpoint is a statement about a head that is
 * already chained, so every process on one store shows its nodes the same tree. The leaves are read from the store
 * once per process and kept (a chain only grows); building a proof is O(n) hashing over them (core/chain/merkle.ts).
 */
import { consistencyProof, type Hash, leafHash, treeRoot } from "../core/chain/merkle.js";
import { checkpointOrigin, signCheckpointNote } from "../core/chain/note.js";
import type { SigningKey } from "../core/crypto/ed25519.js";
import type { CheckpointClaim } from "../core/protocol/messages.js";
import type { StoreEngine } from "../store/engine.js";

export interface ControllerTreeHead {
  readonly size: number;
  readonly root: Hash;
  readonly note: string;
}

export class WitnessClaims {
  private readonly leaves: Hash[] = [];
  private head: ControllerTreeHead | null = null;

  constructor(
    private readonly engine: StoreEngine,
    private readonly key: SigningKey,
    private readonly chainId: string,
  ) {}

  /** The tree head of the newest chained checkpoint, or null while the chain has none. */
  async latest(): Promise<ControllerTreeHead | null> {
    const row = await this.engine.read((q) => q.get<{ seq: number }>("SELECT seq FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq DESC LIMIT 1", [this.chainId]));
    if (row === undefined) return null;
    const size = Number(row.seq) + 1;
    if (this.head?.size === size) return this.head;
    await this.readLeaves(size);
    const root = treeRoot(this.leaves, size);
    this.head = { size, root, note: signCheckpointNote(this.key, { origin: checkpointOrigin(this.chainId), size, root }) };
    return this.head;
  }

  /** The claim a request carries to a node that holds tree size `held` (null: none yet), or null without a checkpoint. */
  async claimFor(held: number | null): Promise<CheckpointClaim | null> {
    const head = await this.latest();
    if (head === null) return null;
    // A node ahead of this process's view (another process took a newer checkpoint since) gets no proof: it refuses
    // an older tree with the reason, and the next call reads the newer one.
    const from = held !== null && held > 0 && held < head.size ? held : null;
    const proof = from === null ? [] : consistencyProof(this.leaves, from, head.size).map((h) => h.toString("base64"));
    return { note: head.note, proof_from: from ?? held ?? 0, proof };
  }

  /**
   * The root of the first `size` events of this chain, for `berth audit witnesses`; null when the chain holds fewer
   * events (a node that holds a larger tree than this store has: this store is behind, rolled back or forked).
   */
  async rootAt(size: number): Promise<Hash | null> {
    if (size < 1) return null;
    if (this.leaves.length < size) {
      const rows = await this.engine.read((q) =>
        q.all<{ hash: string }>("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq", [this.chainId, this.leaves.length, size]),
      );
      for (const r of rows) this.leaves.push(leafHash(r.hash));
    }
    return this.leaves.length < size ? null : treeRoot(this.leaves, size);
  }

  private async readLeaves(size: number): Promise<void> {
    if (this.leaves.length >= size) return;
    const rows = await this.engine.read((q) =>
      q.all<{ hash: string }>("SELECT hash FROM audit_event WHERE chain_id = ? AND seq >= ? AND seq < ? ORDER BY seq", [this.chainId, this.leaves.length, size]),
    );
    for (const r of rows) this.leaves.push(leafHash(r.hash));
    if (this.leaves.length < size) throw new Error(`chain ${this.chainId} holds ${this.leaves.length} events below its checkpoint at seq ${size - 1}`);
  }
}
