/**
 * The node as a witness of its controllers' histories (issue 38; the rules are src/core/mesh/witness.ts): per
 * controller key, the newest Merkle checkpoint the node accepted, in node.db beside the node chain. A newer checkpoint
 * commits with its chain event (`controller.checkpoint`, the signed note itself in the payload) before the request
 * that carried it is served, so the node's own chain records which controller histories it saw, and a node that
 * restarts still refuses a history that does not extend them. A refusal is thrown as a `Refusal` and chained by the
 * dispatcher like every handler refusal (`workload.refuse`, code `witness`, with the sizes and roots in the reason).
 *
 * Read once at start and kept in memory, as controller-binding.ts does: this daemon is the only writer of node.db.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { type HeldCheckpoint, judgeCheckpoint } from "../../core/mesh/witness.js";
import { MUTATING_METHODS } from "../../core/protocol/messages.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import { ensureSchema, withWriteTx } from "../../store/sqlite.js";
import { Refusal } from "./context.js";
import type { NodeStore } from "./store.js";

const SCHEMA_VERSION = 1;

export class ControllerWitness {
  private readonly held = new Map<string, HeldCheckpoint>();

  constructor(
    private readonly store: NodeStore,
    private readonly nodeId: string,
    private readonly clock: () => number,
  ) {
    withWriteTx(store.db, (tx) =>
      ensureSchema(tx, "node_witness", SCHEMA_VERSION, (from) => {
        if (from === 0) {
          tx.db.exec(`CREATE TABLE node_witness (controller_key TEXT PRIMARY KEY, origin TEXT NOT NULL, size INTEGER NOT NULL,
                                                 root TEXT NOT NULL, note TEXT NOT NULL, updated_ms INTEGER NOT NULL)`);
        }
      }),
    );
    const rows = store.db.prepare("SELECT controller_key, origin, size, root, note FROM node_witness").all() as Array<{
      controller_key: string;
      origin: string;
      size: number;
      root: string;
      note: string;
    }>;
    for (const r of rows)
      this.held.set(r.controller_key, {
        origin: r.origin,
        size: r.size,
        root: Buffer.from(r.root, "base64"),
        note: r.note,
      });
  }

  /** What `describe` tells the requesting controller: the checkpoint this node holds from its key (null: none yet). */
  describe(controllerKey: string): JsonObject | null {
    const h = this.held.get(controllerKey);
    return h ? { origin: h.origin, size: h.size, root: h.root.toString("base64") } : null;
  }

  /**
   * Admits a verified request by the checkpoint it carries, or throws the `witness` / `witness_proof` /
   * `invalid_request` refusal. A first or newer checkpoint is committed and chained before the request is served.
   */
  admit(req: VerifiedRequest): void {
    const verdict = judgeCheckpoint(
      this.held.get(req.key) ?? null,
      req.checkpoint,
      req.key,
      MUTATING_METHODS.has(req.method),
    );
    if (verdict.kind === "refuse") throw new Refusal(verdict.code, verdict.reason);
    const cp = verdict.accept;
    if (cp === null) return;
    const now = this.clock();
    const root = cp.root.toString("base64");
    this.store.commit((tx) => {
      tx.db
        .prepare(
          "INSERT INTO node_witness (controller_key, origin, size, root, note, updated_ms) VALUES (?,?,?,?,?,?) ON CONFLICT(controller_key) DO UPDATE SET origin = excluded.origin, size = excluded.size, root = excluded.root, note = excluded.note, updated_ms = excluded.updated_ms",
        )
        .run(req.key, cp.origin, cp.size, root, cp.note, now);
      return {
        result: null,
        events: [
          {
            source: "node",
            kind: "controller.checkpoint",
            payload: {
              node: this.nodeId,
              controller: req.requester,
              origin: cp.origin,
              size: cp.size,
              root,
              from_size: cp.from,
              note: cp.note,
              method: req.method,
              decision_id: req.decision_id,
            },
          },
        ],
      };
    });
    // Only after the commit: a rolled back write must not move what this node holds.
    this.held.set(req.key, { origin: cp.origin, size: cp.size, root: cp.root, note: cp.note });
  }
}
