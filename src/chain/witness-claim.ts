/**
 * What a controller shows its nodes of its own history (issue 38): the Merkle checkpoint of its newest chained
 * checkpoint (`audit_checkpoint`, spec/audit-chain.md §10: every N events, T after the previous one with new events,
 * at clean shutdown, and on demand with `berth audit checkpoint`), as a C2SP signed note, and the RFC 9162
 * consistency proof from the tree size a node holds. The node checks both (src/core/mesh/witness.ts).
 *
 * The tree covers seq 0..S of the checkpoint at seq S (size S + 1): a checkpoint is a statement about a head that is
 * already chained, so every process on one store shows its nodes the same tree. The note is the one chained with the
 * checkpoint (its event at seq S + 1 carries it); proofs and roots are read from the store's tree (tree-store.ts),
 * O(log n) rows each.
 */
import type { Hash } from "../core/chain/merkle.js";
import { checkpointOrigin, openCheckpointNote, signCheckpointNote } from "../core/chain/note.js";
import { consistencyProofFrom, treeHeadFrom } from "../core/chain/tree-hashes.js";
import type { SigningKey } from "../core/crypto/ed25519.js";
import type { CheckpointClaim } from "../core/protocol/messages.js";
import type { StoreEngine } from "../store/engine.js";
import { onStoredTree } from "./tree-store.js";

export interface ControllerTreeHead {
  readonly size: number;
  readonly root: Hash;
  readonly note: string;
}

export class WitnessClaims {
  private head: ControllerTreeHead | null = null;

  constructor(
    private readonly engine: StoreEngine,
    private readonly key: SigningKey,
    private readonly chainId: string,
  ) {}

  /** The tree head of the newest chained checkpoint, or null while the chain has none. */
  async latest(): Promise<ControllerTreeHead | null> {
    const row = await this.engine.read((q) =>
      q.get<{ seq: number }>("SELECT seq FROM audit_checkpoint WHERE chain_id = ? ORDER BY seq DESC LIMIT 1", [
        this.chainId,
      ]),
    );
    if (row === undefined) return null;
    const size = Number(row.seq) + 1;
    if (this.head?.size === size) return this.head;
    this.head = (await this.chainedHead(size)) ?? (await this.signedHead(size));
    return this.head;
  }

  /** The note chained with the checkpoint (the event right after its head), when it names this tree. */
  private async chainedHead(size: number): Promise<ControllerTreeHead | null> {
    const event = await this.engine.read((q) =>
      q.get<{ payload: string }>(
        "SELECT payload FROM audit_event WHERE chain_id = ? AND seq = ? AND source = 'chain' AND kind = 'chain.checkpoint'",
        [this.chainId, size],
      ),
    );
    const note = event === undefined ? undefined : (JSON.parse(event.payload) as { note?: unknown }).note;
    if (typeof note !== "string") return null;
    const opened = openCheckpointNote(note, this.key.publicKey);
    if (!opened.ok || opened.value.size !== size || opened.value.origin !== checkpointOrigin(this.chainId)) return null;
    return { size, root: opened.value.root, note };
  }

  /** A checkpoint chained before issue 38 carries no note: the root from the stored tree, signed here. */
  private async signedHead(size: number): Promise<ControllerTreeHead> {
    const root = await this.engine.read((q) => onStoredTree(q, this.chainId, (read) => treeHeadFrom(read, size)));
    return { size, root, note: signCheckpointNote(this.key, { origin: checkpointOrigin(this.chainId), size, root }) };
  }

  /** The claim a request carries to a node that holds tree size `held` (null: none yet), or null without a checkpoint. */
  async claimFor(held: number | null): Promise<CheckpointClaim | null> {
    const head = await this.latest();
    if (head === null) return null;
    // A node ahead of this process's view (another process took a newer checkpoint since) gets no proof: it refuses
    // an older tree with the reason, and the next call reads the newer one.
    const from = held !== null && held > 0 && held < head.size ? held : null;
    const proof =
      from === null
        ? []
        : (
            await this.engine.read((q) =>
              onStoredTree(q, this.chainId, (read) => consistencyProofFrom(read, from, head.size)),
            )
          ).map((h) => h.toString("base64"));
    return { note: head.note, proof_from: from ?? held ?? 0, proof };
  }

  /**
   * The root of the first `size` events of this chain, for `berth audit witnesses`; null when the chain holds fewer
   * events (a node that holds a larger tree than this store has: this store is behind, rolled back or forked).
   */
  async rootAt(size: number): Promise<Hash | null> {
    if (size < 1) return null;
    return this.engine.read(async (q) => {
      const top = await q.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM audit_event WHERE chain_id = ?", [
        this.chainId,
      ]);
      if (top?.seq === null || top?.seq === undefined || Number(top.seq) + 1 < size) return null;
      return onStoredTree(q, this.chainId, (read) => treeHeadFrom(read, size));
    });
  }
}
