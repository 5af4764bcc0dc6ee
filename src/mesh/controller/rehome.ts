/**
 * `berth node rehome NODE --reason TEXT` (issue 20, spec/mesh.md §11.5): the operator moves a node's binding of this
 * controller key to this store. A node serves a key for the one store it first served (src/core/mesh/epoch-fence.ts)
 * and refuses the key's other homes `foreign_store`; this is the only way to change that, and it is never automatic.
 *
 * Chained on both sides: here `controller.rehome {phase: "request"}` before anything is sent (its hash is the
 * request's decision id, I4) and `{phase: "outcome"}` after; on the node `controller.bind {how: "rehome"}`. What the
 * other store placed on the node keeps running there and stays in that store's records; the outcome says how many.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { outcomeOf } from "../client/node-client.js";
import { failureText } from "./reconcile.js";
import type { ControllerStore } from "./store.js";
import type { Targets } from "./targets.js";

export type RehomeResult =
  | {
      readonly kind: "ok";
      readonly node: string;
      readonly store_id: string;
      readonly epoch: number;
      readonly from_store: string | null;
      readonly from_epoch: number | null;
      /** Instances this controller key placed on the node, under any store: the new store does not manage them. */
      readonly instances: number;
    }
  | { readonly kind: "refused"; readonly node: string; readonly code: string; readonly reason: string }
  | { readonly kind: "unreachable" | "indeterminate"; readonly node: string; readonly reason: string }
  | { readonly kind: "unknown_node"; readonly node: string; readonly reason: string };

export interface RehomeDeps {
  readonly store: ControllerStore;
  readonly targets: Targets;
  readonly storeId: string;
  readonly callTimeoutMs: number;
}

export async function rehomeNode(
  deps: RehomeDeps,
  ref: string,
  reason: string,
  operator: JsonObject,
): Promise<RehomeResult> {
  const target = await deps.targets.resolve(ref);
  if (target === null || target.node_id === null || target.key === null) {
    return {
      kind: "unknown_node",
      node: ref,
      reason: `no known node ${ref}; add it first with \`berth nodes add HOST:PORT\``,
    };
  }
  const node = target.node_id;
  const requestId = await deps.store.commitVerbRequest({
    source: "trust",
    kind: "controller.rehome",
    payload: { phase: "request", node, addr: target.addr, store_id: deps.storeId, reason, operator },
  });
  const r = await deps.targets.call(
    node,
    "rehome",
    { reason },
    { decisionId: requestId, timeoutMs: deps.callTimeoutMs },
  );
  const outcome = outcomeOf("rehome", r);
  // Typed by the node client, which checked it against the method's schema (core/protocol/results.ts).
  const answered = r.kind === "ok" ? r.result : null;
  await deps.store.appendAll([
    {
      source: "trust",
      kind: "controller.rehome",
      payload: {
        phase: "outcome",
        decision_id: requestId,
        node,
        result: outcome,
        code: r.kind === "refused" ? r.code : null,
        reason: r.kind === "ok" ? null : failureText(r),
        from_store: answered?.from_store ?? null,
        from_epoch: answered?.from_epoch ?? null,
        epoch: answered?.epoch ?? null,
        instances: answered?.instances ?? null,
      },
    },
  ]);
  if (answered !== null) {
    const { store_id, epoch, from_store, from_epoch, instances } = answered;
    return { kind: "ok", node, store_id, epoch, from_store, from_epoch, instances };
  }
  if (r.kind === "refused") return { kind: "refused", node, code: r.code, reason: r.reason };
  return {
    kind: outcome === "indeterminate" ? "indeterminate" : "unreachable",
    node,
    reason: r.kind === "ok" ? "" : r.reason,
  };
}
