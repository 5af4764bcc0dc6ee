/**
 * The node's chain events (spec/mesh.md §11, §4.6): the drafts a handler commits with its state change, and the
 * refusal records, with unauthenticated refusals rate-limited so a stranger cannot grow the chain at will.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { truncateUtf8 } from "../../core/protocol/messages.js";
import type { InstanceRow, NodeStore } from "./store.js";

const UNAUTH_BUDGET = 16;
const UNAUTH_WINDOW_MS = 60_000;

/** A `runtime` event about one instance (load, start, stop, unload), with the handler's extra fields. */
export function runtimeEvent(kind: string, row: InstanceRow, extra: JsonObject) {
  return {
    source: "runtime",
    kind,
    payload: {
      instance_id: row.instance_id,
      decision_id: row.decision_id,
      package_id: row.package_id,
      route: row.route,
      ...extra,
    },
  };
}

export function refusalEvent(
  nodeId: string,
  phase: string,
  code: string,
  reason: string,
  method: string,
  requester: string | null,
  decisionId: string | null,
  suppressed = 0,
) {
  return {
    source: "node",
    kind: "workload.refuse",
    payload: { phase, node: nodeId, code, reason, method, requester, decision_id: decisionId, suppressed },
  };
}

/** Chains refusals, unauthenticated ones at most 16 per 60 s; skipped ones are counted on the next (§4.6). */
export class RefusalChain {
  private unauthWindow = { start: 0, chained: 0, suppressed: 0 };

  constructor(
    private readonly store: NodeStore,
    private readonly nodeId: string,
    private readonly clock: () => number,
  ) {}

  authenticated(
    phase: string,
    code: string,
    reason: string,
    method: string,
    requester: string | null,
    decisionId: string | null,
  ): void {
    this.chain(refusalEvent(this.nodeId, phase, code, reason, method, requester, decisionId));
  }

  /** A refusal is answered whether or not it could be chained (issue 37 finding B: a full disk ended the daemon). */
  private chain(draft: ReturnType<typeof refusalEvent>): void {
    try {
      this.store.append(draft);
    } catch {
      // the disk is full (or the store closed): the refusal is still answered; the chain misses this one record
    }
  }

  unauthenticated(
    code: string,
    reason: string,
    method: string,
    requester: string | null,
    decisionId: string | null,
  ): void {
    const now = this.clock();
    if (now - this.unauthWindow.start >= UNAUTH_WINDOW_MS)
      this.unauthWindow = { start: now, chained: 0, suppressed: this.unauthWindow.suppressed };
    if (this.unauthWindow.chained >= UNAUTH_BUDGET) {
      this.unauthWindow.suppressed++;
      return;
    }
    this.unauthWindow.chained++;
    const suppressed = this.unauthWindow.suppressed;
    this.unauthWindow.suppressed = 0;
    // The method and requester of an unauthenticated request are attacker-chosen text: bound them.
    this.chain(
      refusalEvent(
        this.nodeId,
        "verify",
        code,
        reason,
        truncateUtf8(method, 64),
        requester ? truncateUtf8(requester, 64) : null,
        decisionId ? truncateUtf8(decisionId, 64) : null,
        suppressed,
      ),
    );
  }
}
