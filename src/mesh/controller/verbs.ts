/**
 * Instance verbs from the controller (spec/mesh.md §12): `start`, `stop`, `unload` (mutating) and `status`, `logs`
 * (read), always through the placement record, never by guessing a node.
 *
 * Structural rules:
 * - an unknown instance id triggers one settle first: it may be the instance of an unsettled decision, which
 *   becomes a managed placement once its node answers (§10.2);
 * - a mutating verb is gated on the controller (teardown is never blocked by tier or revocation) and chained as
 *   `workload.<verb> {phase: "request"}` before it is sent; that event's hash is the request's decision id (I4);
 * - its outcome is chained with the record change in one transaction: a successful unload (or one the node answers
 *   `unknown_instance`) deletes the record and frees the name; a lost answer leaves the record `pending: <verb>`;
 * - an instance no placement records but a node lists (an orphan of issue 21 case 1, or one made by another
 *   controller store) can still be acted on: the node that lists it is found by asking every known node, and the
 *   verb is chained as an operator action (`unmanaged: true`, with who asked), never as automation (issue 21 item 3).
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import { outcomeOf } from "../client/node-client.js";
import { consult, contextOf, type GateSettings, gatePolicyOf } from "./gate.js";
import type { ControllerPolicy } from "./policy.js";
import { failureText } from "./reconcile.js";
import type { ControllerStore } from "./store.js";
import type { Targets } from "./targets.js";

export const VERBS = ["status", "start", "stop", "unload", "logs"] as const;
export type Verb = (typeof VERBS)[number];
const MUTATING: ReadonlySet<Verb> = new Set(["start", "stop", "unload"]);

export interface VerbOptions {
  readonly grace_ms?: number;
  readonly tail_bytes?: number;
  /** unload: the node refuses unless the instance is still at this generation (issue 7's fenced replace). */
  readonly generation?: number;
  /** unload: also remove the name's workspace on the node (issue 15; `berth agent purge`, `--purge`). */
  readonly purge?: boolean;
  /** Who asked (user, uid, pid, host): chained with a verb on an instance no placement records. */
  readonly operator?: JsonObject;
  /**
   * stop: a step of moving the agent (`berth node drain`), not a person's say that it should stay stopped. Without it
   * a stop of a managed placement is final (issue 33): recorded with the chained request, so the keep loop never
   * starts, moves or places the name again until a deploy or an explicit start.
   */
  readonly for_move?: boolean;
}

export type VerbResult =
  | {
      readonly kind: "ok";
      readonly verb: Verb;
      readonly instance_id: string;
      readonly node: string;
      readonly result: JsonObject;
    }
  | {
      readonly kind: "refused";
      readonly verb: Verb;
      readonly instance_id: string;
      readonly node: string;
      readonly code: string;
      readonly reason: string;
    }
  /** Nothing reached the node, or (for a read) no valid answer came back. */
  | {
      readonly kind: "unreachable";
      readonly verb: Verb;
      readonly instance_id: string;
      readonly node: string;
      readonly reason: string;
    }
  /** A mutating verb without a valid answer: the record stays `pending: <verb>` until a status resolves it. */
  | {
      readonly kind: "indeterminate";
      readonly verb: Verb;
      readonly instance_id: string;
      readonly node: string;
      readonly reason: string;
    }
  /** Refused before anything was sent: unknown instance, undescribable target, or the controller's gate. */
  | {
      readonly kind: "error";
      readonly verb: Verb;
      readonly instance_id: string;
      readonly code: "unknown_instance" | "unreachable" | "governance";
      readonly reason: string;
    };

export interface VerbDeps {
  readonly store: ControllerStore;
  readonly targets: Targets;
  readonly controllerId: string;
  readonly gate: GateSettings;
  readonly callTimeoutMs: number;
  readonly readPolicy: (learn: boolean) => Promise<ControllerPolicy>;
  readonly settle: () => Promise<number>;
}

function bodyOf(verb: Verb, instanceId: string, opts: VerbOptions): JsonObject {
  switch (verb) {
    case "status":
      return { instance_id: instanceId, include_departed: false };
    case "start":
      return { instance_id: instanceId };
    case "unload":
      return {
        instance_id: instanceId,
        ...(opts.generation === undefined ? {} : { generation: opts.generation }),
        ...(opts.purge === true ? { purge: true } : {}),
      };
    case "stop":
      return { instance_id: instanceId, grace_ms: opts.grace_ms ?? 2000 };
    case "logs":
      return { instance_id: instanceId, tail_bytes: opts.tail_bytes ?? 65_536 };
    default: {
      const never: never = verb;
      return never;
    }
  }
}

export async function instanceVerb(
  deps: VerbDeps,
  verb: Verb,
  instanceId: string,
  opts: VerbOptions = {},
): Promise<VerbResult> {
  const { store, targets } = deps;
  // 1. the record, settling once when it is unknown
  let found = await store.placement(instanceId);
  if (found === null) {
    await deps.settle();
    found = await store.placement(instanceId);
  }
  if (found === null) return unmanagedVerb(deps, verb, instanceId, opts);
  const { record, workload } = found;
  const node = record.node_id;
  // 2. described since start, so the gate sees the real tier and the request names the boot
  if (!targets.described(node) && !(await targets.refresh(node))) {
    const why = (await targets.byNode(node))?.error ?? "it did not answer";
    return {
      kind: "error",
      verb,
      instance_id: instanceId,
      code: "unreachable",
      reason: `node ${node} could not be described (${why}); nothing was sent`,
    };
  }
  const timeoutMs =
    verb === "stop" ? Math.max(deps.callTimeoutMs, (opts.grace_ms ?? 2000) + 10_000) : deps.callTimeoutMs;
  if (!MUTATING.has(verb)) {
    // 7. read verbs carry no decision id and chain nothing
    const r = await targets.call(node, verb, bodyOf(verb, instanceId, opts), { timeoutMs });
    if (r.kind === "ok") {
      if (verb === "status" && record.pending !== null)
        await store.commitVerbOutcome(
          instanceId,
          { pending: null },
          outcomeEvent(
            `workload.${record.pending}`,
            null,
            instanceId,
            node,
            "resolved",
            null,
            `pending ${record.pending} resolved: the node lists the instance`,
          ),
        );
      const result = verb === "status" ? { instance_id: instanceId, node, status: r.result.row ?? null } : r.result;
      return { kind: "ok", verb, instance_id: instanceId, node, result: result as JsonObject };
    }
    if (r.kind === "refused") {
      if (verb === "status" && record.pending !== null && r.code === "unknown_instance") {
        await store.commitVerbOutcome(
          instanceId,
          "remove",
          outcomeEvent(
            `workload.${record.pending}`,
            null,
            instanceId,
            node,
            "absent",
            r.code,
            `pending ${record.pending} resolved: the node no longer holds the instance`,
          ),
        );
      }
      return { kind: "refused", verb, instance_id: instanceId, node, code: r.code, reason: r.reason };
    }
    return { kind: "unreachable", verb, instance_id: instanceId, node, reason: r.reason };
  }
  // 3. gate the verb with refs from the record
  const policy = await deps.readPolicy(false);
  const { verdict, event } = consult(
    `workload.${verb}`,
    contextOf(workload, targets.tierOfNode(node), deps.controllerId, false),
    gatePolicyOf(policy, deps.gate),
    node,
  );
  if (event) await store.appendAll([event]);
  if (verdict.decision !== "permit")
    return {
      kind: "error",
      verb,
      instance_id: instanceId,
      code: "governance",
      reason: `workload.${verb} denied: ${verdict.reason}`,
    };
  // 4. chained request; its hash authorises the call
  const purge: JsonObject = verb === "unload" && opts.purge === true ? { purge: true } : {};
  const final = verb === "stop" && opts.for_move !== true;
  const requestId = await store.commitVerbRequest(
    {
      source: "placement",
      kind: `workload.${verb}`,
      payload: {
        phase: "request",
        instance_id: instanceId,
        node,
        name: record.name,
        ...purge,
        ...(final ? { final: true } : {}),
      },
    },
    final ? { name: record.name, instance_id: instanceId } : undefined,
  );
  // 5. send and classify
  const r = await targets.call(node, verb, bodyOf(verb, instanceId, opts), { decisionId: requestId, timeoutMs });
  const outcome = outcomeOf(verb, r);
  // 6. outcome with the record change
  const removes = verb === "unload" && (r.kind === "ok" || (r.kind === "refused" && r.code === "unknown_instance"));
  const change = removes
    ? "remove"
    : outcome === "indeterminate"
      ? { pending: verb }
      : record.pending !== null && r.kind === "ok"
        ? { pending: null }
        : null;
  const code = r.kind === "refused" ? r.code : null;
  const reason = r.kind === "ok" ? null : failureText(r);
  // Issue 33: a start the node carried out is the person's say that the agent runs again; it ends a stop.
  const unstop = verb === "start" && r.kind === "ok" ? record.name : undefined;
  await store.commitVerbOutcome(
    instanceId,
    change,
    outcomeEvent(`workload.${verb}`, requestId, instanceId, node, outcome, code, reason),
    unstop,
  );
  switch (r.kind) {
    case "ok":
      return { kind: "ok", verb, instance_id: instanceId, node, result: r.result };
    case "refused":
      return { kind: "refused", verb, instance_id: instanceId, node, code: r.code, reason: r.reason };
    default:
      return outcome === "indeterminate"
        ? { kind: "indeterminate", verb, instance_id: instanceId, node, reason: r.reason }
        : { kind: "unreachable", verb, instance_id: instanceId, node, reason: r.reason };
  }
}

function outcomeEvent(
  kind: string,
  decisionId: string | null,
  instanceId: string,
  node: string,
  result: string,
  code: string | null,
  reason: string | null,
) {
  return {
    source: "placement",
    kind,
    payload: { phase: "outcome", decision_id: decisionId, instance_id: instanceId, node, result, code, reason },
  };
}

/**
 * A verb on an instance no placement records: the node that lists it is found by a status on every known node, and
 * the verb is sent under a chained request marked `unmanaged` with the operator who asked. Nothing in the store
 * changes (there is no record); the node's own chain records the unload too.
 */
async function unmanagedVerb(deps: VerbDeps, verb: Verb, instanceId: string, opts: VerbOptions): Promise<VerbResult> {
  const { store, targets } = deps;
  const holder = await findHolder(deps, instanceId);
  if (holder === null) {
    return {
      kind: "error",
      verb,
      instance_id: instanceId,
      code: "unknown_instance",
      reason: `no placed instance ${instanceId}, and no known node lists it`,
    };
  }
  const { node, name } = holder;
  const timeoutMs =
    verb === "stop" ? Math.max(deps.callTimeoutMs, (opts.grace_ms ?? 2000) + 10_000) : deps.callTimeoutMs;
  if (!MUTATING.has(verb)) {
    const r = await targets.call(node, verb, bodyOf(verb, instanceId, opts), { timeoutMs });
    if (r.kind === "ok")
      return {
        kind: "ok",
        verb,
        instance_id: instanceId,
        node,
        result: (verb === "status"
          ? { instance_id: instanceId, node, status: r.result.row ?? null, unmanaged: true }
          : r.result) as JsonObject,
      };
    if (r.kind === "refused")
      return { kind: "refused", verb, instance_id: instanceId, node, code: r.code, reason: r.reason };
    return { kind: "unreachable", verb, instance_id: instanceId, node, reason: r.reason };
  }
  const requestId = await store.commitVerbRequest({
    source: "placement",
    kind: `workload.${verb}`,
    payload: {
      phase: "request",
      instance_id: instanceId,
      node,
      name,
      unmanaged: true,
      operator: opts.operator ?? { via: "api" },
      ...(verb === "unload" && opts.purge === true ? { purge: true } : {}),
    },
  });
  const r = await targets.call(node, verb, bodyOf(verb, instanceId, opts), { decisionId: requestId, timeoutMs });
  const outcome = outcomeOf(verb, r);
  await store.commitVerbOutcome(
    instanceId,
    null,
    outcomeEvent(
      `workload.${verb}`,
      requestId,
      instanceId,
      node,
      outcome,
      r.kind === "refused" ? r.code : null,
      r.kind === "ok" ? null : failureText(r),
    ),
  );
  if (r.kind === "ok") {
    const answer: JsonObject = r.result;
    return { kind: "ok", verb, instance_id: instanceId, node, result: { ...answer, unmanaged: true } };
  }
  if (r.kind === "refused")
    return { kind: "refused", verb, instance_id: instanceId, node, code: r.code, reason: r.reason };
  return outcome === "indeterminate"
    ? { kind: "indeterminate", verb, instance_id: instanceId, node, reason: r.reason }
    : { kind: "unreachable", verb, instance_id: instanceId, node, reason: r.reason };
}

/** The known node that lists `instanceId` (not departed), asked by status; null when none does. */
async function findHolder(deps: VerbDeps, instanceId: string): Promise<{ node: string; name: string } | null> {
  for (const t of await deps.targets.list()) {
    const node = t.node_id;
    if (node === null) continue;
    if (!deps.targets.described(node) && !(await deps.targets.refresh(node))) continue;
    const r = await deps.targets.call(
      node,
      "status",
      { instance_id: instanceId, include_departed: false },
      { timeoutMs: deps.callTimeoutMs },
    );
    if (r.kind !== "ok") continue;
    // Typed by the node client (core/protocol/results.ts): asked for one instance, the node answers its row.
    const row = statusRowsOf(r.result)
      .filter(isInstanceRow)
      .find((x) => x.instance_id === instanceId);
    if (row !== undefined) return { node, name: row.name };
  }
  return null;
}
