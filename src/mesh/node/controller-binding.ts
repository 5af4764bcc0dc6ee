/**
 * The node's controller bindings (issue 20; the rules are src/core/mesh/epoch-fence.ts): per controller key, the
 * store it first served and the highest leader epoch seen from it, in node.db beside the node chain. Every change
 * commits with its chain event (`controller.bind`, `controller.epoch`) before the request that caused it is served,
 * so a node that restarts still refuses a deposed leader and a second home of the key.
 *
 * The bindings are read once at start and kept in memory (one map lookup per request; bench/mesh/epoch-check.ts):
 * this daemon is the only writer of its node.db.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { type ControllerBinding, judgeAuthority, judgeRehome } from "../../core/mesh/epoch-fence.js";
import { parseBody } from "../../core/protocol/bodies.js";
import { MUTATING_METHODS } from "../../core/protocol/messages.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import { ensureSchema, withWriteTx } from "../../store/sqlite.js";
import { Refusal } from "./context.js";
import type { NodeStore } from "./store.js";

const SCHEMA_VERSION = 1;

export class ControllerBindings {
  private readonly bound = new Map<string, ControllerBinding>();

  constructor(
    private readonly store: NodeStore,
    private readonly nodeId: string,
    private readonly clock: () => number,
  ) {
    withWriteTx(store.db, (tx) =>
      ensureSchema(tx, "node_controller_binding", SCHEMA_VERSION, (from) => {
        if (from === 0) {
          tx.db.exec(`CREATE TABLE node_controller_binding (controller_key TEXT PRIMARY KEY, store_id TEXT NOT NULL,
                                                            epoch INTEGER NOT NULL, bound_ms INTEGER NOT NULL,
                                                            updated_ms INTEGER NOT NULL)`);
        }
      }),
    );
    const rows = store.db.prepare("SELECT controller_key, store_id, epoch FROM node_controller_binding").all() as Array<
      { controller_key: string } & ControllerBinding
    >;
    for (const r of rows) this.bound.set(r.controller_key, { store_id: r.store_id, epoch: r.epoch });
  }

  /** The binding of one controller key, or null when it has sent no request naming a store yet. */
  binding(controllerKey: string): ControllerBinding | null {
    return this.bound.get(controllerKey) ?? null;
  }

  /**
   * Admits a verified request by its authority, or throws the `foreign_store` / `stale_epoch` refusal (chained by the
   * dispatcher like every handler refusal). A first binding or a higher epoch is committed and chained first.
   * `rehome` is judged by its own handler.
   */
  admit(req: VerifiedRequest): void {
    if (req.method === "rehome") return;
    const verdict = judgeAuthority(this.binding(req.key), req.authority, MUTATING_METHODS.has(req.method));
    if (verdict.kind === "refuse") throw new Refusal(verdict.code, verdict.reason);
    const change = verdict.change;
    if (change === null) return;
    const now = this.clock();
    if (change.kind === "bind") {
      this.write(req.key, { store_id: change.store_id, epoch: change.epoch }, now, {
        source: "node",
        kind: "controller.bind",
        payload: this.bindPayload(req, "first_request", null, { store_id: change.store_id, epoch: change.epoch }, null),
      });
    } else {
      this.write(req.key, { store_id: change.store_id, epoch: change.to }, now, {
        source: "node",
        kind: "controller.epoch",
        payload: {
          node: this.nodeId,
          controller: req.requester,
          store_id: change.store_id,
          from: change.from,
          to: change.to,
          method: req.method,
          decision_id: req.decision_id,
        },
      });
    }
  }

  /** §11.5 `rehome`: moves the key's binding to the requesting store, chained with the operator's reason. */
  rehome(req: VerifiedRequest): JsonObject {
    const body = parseBody("rehome", req.body);
    if (!body.ok) throw new Refusal("invalid_request", body.error);
    // Check 11a guarantees an authority on every mutating method.
    if (req.authority === null)
      throw new Refusal(
        "invalid_request",
        "payload.authority must name the controller store and leader epoch on rehome",
      );
    const before = this.binding(req.key);
    const verdict = judgeRehome(before, req.authority);
    if (verdict.kind === "refuse") throw new Refusal(verdict.code, verdict.reason);
    this.write(req.key, verdict.to, this.clock(), {
      source: "node",
      kind: "controller.bind",
      payload: this.bindPayload(req, "rehome", verdict.from, verdict.to, body.value.reason),
    });
    // What the old store placed stays here, running; the operator is told how much (it is no longer managed there).
    const instances = this.store.instances().filter((row) => row.requester === req.requester).length;
    return {
      store_id: verdict.to.store_id,
      epoch: verdict.to.epoch,
      from_store: verdict.from?.store_id ?? null,
      from_epoch: verdict.from?.epoch ?? null,
      instances,
    };
  }

  private bindPayload(
    req: VerifiedRequest,
    how: "first_request" | "rehome",
    from: ControllerBinding | null,
    to: ControllerBinding,
    reason: string | null,
  ): JsonObject {
    return {
      node: this.nodeId,
      controller: req.requester,
      how,
      store_id: to.store_id,
      epoch: to.epoch,
      from_store: from?.store_id ?? null,
      from_epoch: from?.epoch ?? null,
      reason,
      method: req.method,
      decision_id: req.decision_id,
    };
  }

  private write(
    controllerKey: string,
    binding: ControllerBinding,
    now: number,
    event: { source: string; kind: string; payload: JsonObject },
  ): void {
    this.store.commit((tx) => {
      tx.db
        .prepare(
          "INSERT INTO node_controller_binding (controller_key, store_id, epoch, bound_ms, updated_ms) VALUES (?,?,?,?,?) ON CONFLICT(controller_key) DO UPDATE SET store_id = excluded.store_id, epoch = excluded.epoch, bound_ms = CASE WHEN node_controller_binding.store_id = excluded.store_id THEN node_controller_binding.bound_ms ELSE excluded.bound_ms END, updated_ms = excluded.updated_ms",
        )
        .run(controllerKey, binding.store_id, binding.epoch, now, now);
      return { result: null, events: [event] };
    });
    // Only after the commit: a rolled back write must not admit anything.
    this.bound.set(controllerKey, binding);
  }
}
