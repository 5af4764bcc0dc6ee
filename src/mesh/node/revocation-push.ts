/**
 * Issue 33: a controller's revocation list, pushed to the node (method `revocations`; `berth revoke`/`unrevoke`, and
 * at every contact with a node whose acknowledged list is older than the controller's). The request is signed by the
 * controller's key and authorised by its chained publication (the decision id), like every mutating request.
 *
 * - One list per controller key (`revocations.pushed/<controller id>.json`), enforced with the node's own
 *   `revocations.json` (policy.ts): a push never edits what the node's operator wrote.
 * - Its `generation` is a sequence: an older list than the one held is refused (`precondition_failed`), the same one
 *   changes nothing, a newer one replaces it, written durably before the answer, each subject it adds or removes
 *   chained as `workload.revoke` / `workload.unrevoke` on the node's chain.
 * - What the new list revokes is stopped and unloaded by the node's sweep, started at once (§11.4).
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { RevocationList } from "../../core/governance/policy.js";
import { judgePush } from "../../core/node/revocation.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import { loadPushedRevocations, PUSHED_REVOCATIONS_DIR, saveRevocationList } from "../policy/files.js";
import type { NodeContext } from "./context.js";
import { Refusal } from "./context.js";

export function acceptRevocations(
  ctx: NodeContext,
  req: VerifiedRequest,
  list: RevocationList,
  sweep: () => void,
): JsonObject {
  const dataDir = ctx.o.dataDir;
  const controller = req.requester;
  const heldFile = loadPushedRevocations(dataDir).find((p) => p.controller === controller)?.file ?? null;
  // An unreadable held list is replaced by any push: it enforces everything meanwhile (fail closed).
  const held = heldFile === null || !heldFile.loaded.ok ? null : heldFile.loaded.value;
  const verdict = judgePush(held, list);
  if (verdict.kind === "older") {
    throw new Refusal(
      "precondition_failed",
      `revocation list generation ${list.generation} is older than the one this node holds from controller ${controller} (${verdict.held}); a node never goes back to an older list`,
    );
  }
  if (verdict.kind === "same") return { generation: list.generation, changed: false };
  saveRevocationList(dataDir, `${PUSHED_REVOCATIONS_DIR}/${controller}.json`, list);
  const subject = (kind: "workload.revoke" | "workload.unrevoke", s: RevocationList["subjects"][number]) => ({
    source: "trust",
    kind,
    payload: {
      subject_kind: s.kind,
      subject: s.id,
      reason: s.reason,
      generation: list.generation,
      controller,
      decision_id: req.decision_id,
    },
  });
  ctx.o.store.commit(() => ({
    result: null,
    events: [
      ...verdict.revoked.map((s) => subject("workload.revoke", s)),
      ...verdict.unrevoked.map((s) => subject("workload.unrevoke", s)),
    ],
  }));
  sweep();
  return { generation: list.generation, changed: true };
}
