/**
 * The thief of issue 38's attacks, in one place: someone holding a store's SQLite file and the owner's (stolen) key
 * rewrites the last events of its own chain and re-signs them, as berth itself would have written them. The stale
 * checkpoints are dropped, every chained checkpoint note in the rewritten tail is signed again over the rewritten
 * tree, and the stored Merkle tree is rebuilt, so that single-chain verification passes and only a checkpoint kept
 * elsewhere (an exported note, a node that witnessed the old head) can tell.
 */

import type { EventRow } from "../../src/chain/chain.js";
import { rowToEvent } from "../../src/chain/chain.js";
import { catchUpTree } from "../../src/chain/tree-store.js";
import { type SealedEvent, sealEvent } from "../../src/core/chain/event.js";
import { leafHash, treeRoot } from "../../src/core/chain/merkle.js";
import { checkpointOrigin, signCheckpointNote } from "../../src/core/chain/note.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import type { Db } from "../../src/store/sqlite.js";

/** Rewrites events from seq `first` on (payload gains `rewritten: true`); returns the rewritten chain's events. */
export function rewriteChainTail(db: Db, chainId: string, first: number, key: SigningKey): SealedEvent[] {
  db.exec(
    "DROP TRIGGER IF EXISTS audit_event_no_delete; DROP TRIGGER IF EXISTS audit_checkpoint_no_delete; DROP TRIGGER IF EXISTS audit_tree_no_delete",
  );
  const events = (
    db.prepare("SELECT * FROM audit_event WHERE chain_id = ? ORDER BY seq").all(chainId) as EventRow[]
  ).map(rowToEvent);
  db.prepare("DELETE FROM audit_checkpoint WHERE chain_id = ? AND seq >= ?").run(chainId, first);
  db.prepare("DELETE FROM audit_event WHERE chain_id = ? AND seq >= ?").run(chainId, first);
  db.prepare("DELETE FROM audit_tree WHERE chain_id = ? AND ((idx + 1) << level) > ?").run(chainId, first);
  const kept: SealedEvent[] = events.slice(0, first);
  const insert = db.prepare(
    "INSERT INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
  );
  for (const e of events.slice(first)) {
    let payload: JsonObject = { ...e.payload, rewritten: true };
    if (e.kind === "chain.checkpoint" && typeof e.payload.note === "string") {
      const root = treeRoot(kept.map((k) => leafHash(k.hash)));
      payload = {
        ...payload,
        note: signCheckpointNote(key, { origin: checkpointOrigin(chainId), size: kept.length, root }),
      };
    }
    const { event, canonicalPayload } = sealEvent({
      chainId,
      tip: kept[kept.length - 1],
      nowMs: e.ts,
      key,
      draft: { source: e.source, kind: e.kind, payload },
    });
    insert.run(
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
    kept.push(event);
  }
  catchUpTree(db, chainId);
  return kept;
}
