/**
 * `api.call` (source `api`, docs/audit-chain.md): every mutating call is a write-ahead pair on the controller chain
 * sharing a `call_id` — `request` before anything is done (if it cannot be appended the call is refused and nothing
 * happens) and `outcome` after, with the status and error code, committed before the answer. The request commits
 * with the call's first write (issue 19: no fsynced commit of its own), or with the outcome when the call wrote
 * nothing (a refused request: the pair in one transaction). The caller is the token's id and the remote address,
 * never the token. Bodies are not copied (an agent spec can carry env values); where the library chains the action
 * itself (a placement decision, an agent.deploy), the outcome names that event instead of repeating it.
 */
import { randomBytes } from "node:crypto";
import type { JsonObject } from "../core/crypto/canonical.js";
import type { MeshController } from "../mesh/controller/index.js";
import type { Ride } from "../store/riding-engine.js";

export interface Caller {
  /** `token:` + 8 hex of SHA-256(token). */
  readonly who: string;
  readonly remote: string;
}

export interface CallRecord {
  readonly call_id: string;
  readonly method: string;
  readonly route: string;
  readonly params: JsonObject;
}

const draft = (payload: JsonObject) => ({ source: "api", kind: "api.call", payload });

/**
 * The `request` half, not yet written (issue 19): it rides the first write transaction of `ride.run(…)` — in the
 * same transaction as the call's first state change, before it on the chain — or is committed alone by
 * `ride.commit()`, which throws when it cannot (then the caller must do nothing). See riding-engine.ts.
 */
export function openCall(
  controller: MeshController,
  caller: Caller,
  call: Omit<CallRecord, "call_id">,
  /** Issue 37: the id a forwarding follower named the call with (forward.ts `callIdOf`); fresh by default. */
  callId: string = randomBytes(16).toString("hex"),
): { record: CallRecord; ride: Ride } {
  const record = { call_id: callId, ...call };
  return {
    record,
    ride: controller.rideEvent(draft({ phase: "request", ...record, who: caller.who, remote: caller.remote })),
  };
}

export interface CallOutcome {
  readonly status: number;
  readonly error: string | null;
  /** The fields a refused request got wrong (`body.name`). */
  readonly fields?: readonly string[];
  /** Events or objects the library recorded for this call: decision_id, instance_id, agent_deploy … */
  readonly refs?: JsonObject;
}

export async function recordOutcome(
  controller: MeshController,
  caller: Caller,
  call: CallRecord,
  outcome: CallOutcome,
): Promise<void> {
  await controller.store.appendAll([
    draft({
      phase: "outcome",
      call_id: call.call_id,
      route: call.route,
      who: caller.who,
      status: outcome.status,
      error: outcome.error,
      ...(outcome.fields && outcome.fields.length > 0 ? { fields: [...outcome.fields] } : {}),
      ...(outcome.refs ? { refs: outcome.refs } : {}),
    }),
  ]);
}
