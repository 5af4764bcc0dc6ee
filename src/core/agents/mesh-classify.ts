/**
 * The deploy state machine for a mesh agent (issue 7): the same shape as the Kubernetes one
 * (`core/kubernetes/classify.ts`) — a verified observation and the desired create-intent fingerprint in, one action
 * out, pure — so that `berth deploy` means the same thing on both targets.
 *
 * Shared vocabulary and invariants (structural, as in the Kubernetes classifier):
 * - A `replace` action is built only by `replaceFrom`, which copies the fence of the instance it was given
 *   (instance id + the node's instance generation + node id). The executor unloads with exactly that fence, and a
 *   node whose instance changed since the observation refuses; nothing re-reads and substitutes a fresher fence.
 * - Instance age is not an input: a never-started instance is replaced only for diverged intent, never for taking long.
 * - No row ever stops a started instance: `started` is a strict no-op whatever the intent says.
 *
 * Where the mesh differs from Kubernetes, and why:
 * - Unsettled decisions (row 1). A lost `place` answer may have left an instance the controller cannot see; the
 *   only safe move is to settle (ask the node) before anything else, never to place a second copy. Kubernetes has
 *   no such row because the apiserver is the single source of truth and a quorum read sees every pod.
 * - Unobservable instances (row 2). A node the controller's records say holds an instance of the agent did not
 *   answer. A read error is never absence (the Kubernetes loop's rule): nothing is placed or replaced until that
 *   node answers. Kubernetes needs no row for it because a failed quorum GET ends the call before classification.
 * - Duplicates (row 3). On Kubernetes the pod name is the agent's identity, so two pods cannot exist; on the mesh two
 *   nodes can each hold an instance after a fault (a partition healed the wrong way). berth reports it loudly and
 *   keeps the older instance; it never kills one automatically without the user's say.
 * - No pull-failure row. A mesh package is fetched and verified against pinned hashes before load; a failure is a
 *   refusal of the `place` itself and never leaves a never-started instance behind.
 * - "Awaiting disappearance" maps to an instance the node reports as stopping/unloading (the node's equivalent of a
 *   deletion mark): wait for it to go before placing, exactly like a gracefully deleting pod.
 */
import type { NodeId } from "../crypto/ed25519.js";

declare const meshFenceBrand: unique symbol;
declare const verifiedInstanceBrand: unique symbol;

/** The compare-and-unload fence of one observed instance. */
export type InstanceFence = {
  readonly nodeId: NodeId;
  readonly instanceId: string;
  readonly generation: number;
} & { readonly [meshFenceBrand]: true };

export type InstanceStartup =
  /** The process is running: the agent is live. */
  | { readonly kind: "started" }
  /** The process exited (or the node reported it departed after a restart). */
  | { readonly kind: "terminated"; readonly exitCode: number | null }
  /** Loaded but never started (e.g. placed with --no-start, or a start still in progress). */
  | { readonly kind: "never-started" }
  /** The node is stopping or unloading it. */
  | { readonly kind: "going-away" };

export interface VerifiedInstanceData {
  readonly fence: InstanceFence;
  readonly startup: InstanceStartup;
  /** The fingerprint recorded on the node with the instance; null for an instance placed without one. */
  readonly recordedIntent: string | null;
  /** Position of the instance's placement in the controller's chain (its decision event seq): lower is older. */
  readonly placedSeq: number;
}
export type VerifiedInstance = VerifiedInstanceData & { readonly [verifiedInstanceBrand]: true };

/**
 * The only way to obtain a `VerifiedInstance`: the node's signed status row must name this agent. The shell calls this
 * with rows it received in verified answers; anything not naming the agent is not ours and never reaches `classify`.
 */
export function verifyInstance(
  row: {
    readonly nodeId: NodeId;
    readonly instanceId: string;
    readonly generation: number;
    readonly agent: string | null;
    readonly intent: string | null;
    readonly startup: InstanceStartup;
    readonly placedSeq: number;
  },
  agent: string,
): VerifiedInstance | null {
  if (row.agent !== agent) return null;
  const fence = { nodeId: row.nodeId, instanceId: row.instanceId, generation: row.generation } as InstanceFence;
  return { fence, startup: row.startup, recordedIntent: row.intent, placedSeq: row.placedSeq } as VerifiedInstance;
}

export interface MeshObservation {
  /** Every instance of this agent the nodes reported, verified. */
  readonly instances: readonly VerifiedInstance[];
  /** Decision ids of placements for this agent whose answer was lost and not yet settled. */
  readonly unsettled: readonly string[];
  /** Instances the controller placed for this agent on nodes that did not answer: their state is unknown. */
  readonly unobservable: readonly { readonly nodeId: string; readonly instanceId: string }[];
}

/** `user`: `berth agent replace`, the user's explicit say (the mesh twin of Kubernetes' user-replace authority). */
export type ReplaceCause = "terminated" | "intent-diverged" | "user";

declare const classifiedBrand: unique symbol;

export type PlaceAction = { readonly kind: "place" };
export type SettleFirstAction = { readonly kind: "settle-first"; readonly decisionIds: readonly string[] };
/** Touch nothing and place nothing until every node holding an instance of the agent answers again. */
export type AwaitContactAction = {
  readonly kind: "await-contact";
  readonly instances: readonly { readonly nodeId: string; readonly instanceId: string }[];
};
export type ReplaceAction = {
  readonly kind: "replace";
  readonly fence: InstanceFence;
  readonly cause: ReplaceCause;
  readonly [classifiedBrand]: true;
};
export type AwaitDisappearanceAction = { readonly kind: "await-disappearance"; readonly fence: InstanceFence };
export type NoOpAction = { readonly kind: "no-op"; readonly instance: InstanceFence };
export type ObserveAction = { readonly kind: "observe"; readonly instance: InstanceFence };
/** Two or more live instances: keep `keep`, report `others`, touch nothing. */
export type ReportDuplicatesAction = {
  readonly kind: "report-duplicates";
  readonly keep: InstanceFence;
  readonly others: readonly InstanceFence[];
};

export type MeshAction =
  | PlaceAction
  | SettleFirstAction
  | AwaitContactAction
  | ReplaceAction
  | AwaitDisappearanceAction
  | NoOpAction
  | ObserveAction
  | ReportDuplicatesAction;

/** The rows, in order, by name: recorded in the audit event of every deploy. */
export const MESH_ROWS = [
  "unsettled-decision",
  "instance-unobservable",
  "two-live-instances",
  "no-instance",
  "going-away",
  "started",
  "terminated",
  "never-started-same-intent",
  "never-started-diverged-intent",
] as const;
export type MeshRow = (typeof MESH_ROWS)[number];

function replaceFrom(instance: VerifiedInstance, cause: ReplaceCause): ReplaceAction {
  return { kind: "replace", fence: instance.fence, cause } as ReplaceAction;
}

function byAge(a: VerifiedInstance, b: VerifiedInstance): number {
  return a.placedSeq - b.placedSeq || (a.fence.instanceId < b.fence.instanceId ? -1 : 1);
}

export function classifyMesh(observed: MeshObservation, desired: string): { row: MeshRow; action: MeshAction } {
  // Row 1: a lost answer may have left an instance nobody can see yet. Placing now could make a second copy.
  if (observed.unsettled.length > 0)
    return { row: "unsettled-decision", action: { kind: "settle-first", decisionIds: [...observed.unsettled] } };
  // Row 2: a node that holds an instance of ours did not answer; its instance may be live. Never act blind.
  if (observed.unobservable.length > 0)
    return { row: "instance-unobservable", action: { kind: "await-contact", instances: [...observed.unobservable] } };
  const live = observed.instances.filter((i) => i.startup.kind === "started").sort(byAge);
  // Row 3: possible only after a fault. Keep the older, report loudly, never kill without the user's say.
  if (live.length > 1) {
    const [keep, ...others] = live as [VerifiedInstance, ...VerifiedInstance[]];
    return {
      row: "two-live-instances",
      action: { kind: "report-duplicates", keep: keep.fence, others: others.map((o) => o.fence) },
    };
  }
  // Pick the instance to act on: the live one if any, else the newest (older residue is handled on re-entry).
  const current = live[0] ?? [...observed.instances].sort(byAge).at(-1);
  // Row 4: nothing of ours anywhere.
  if (current === undefined) return { row: "no-instance", action: { kind: "place" } };
  const startup = current.startup;
  switch (startup.kind) {
    // Row 5, before started: an instance being stopped may still report its process until it is gone.
    case "going-away":
      return { row: "going-away", action: { kind: "await-disappearance", fence: current.fence } };
    // Row 6: strict no-op, even when the intent diverged; an edit reaches a running agent only after it stops.
    case "started":
      return { row: "started", action: { kind: "no-op", instance: current.fence } };
    // Row 7: the restart path: unload the residue (fenced), then place.
    case "terminated":
      return { row: "terminated", action: replaceFrom(current, "terminated") };
    // Rows 8–9: divergence is the only thing that replaces a never-started instance.
    case "never-started":
      return current.recordedIntent === desired
        ? { row: "never-started-same-intent", action: { kind: "observe", instance: current.fence } }
        : { row: "never-started-diverged-intent", action: replaceFrom(current, "intent-diverged") };
    default: {
      const never: never = startup;
      throw new Error(`unreachable startup ${JSON.stringify(never)}`);
    }
  }
}

/**
 * `berth agent replace NAME`: the one path that may unload a started instance, because the user asked for it by name.
 * Only a row that settled on exactly one instance (started → no-op, never-started same intent → observe) turns into a
 * fenced replace of that instance; every other row is returned unchanged, so an explicit replace still settles first,
 * still refuses to act blind, and still never picks a side between duplicates on its own.
 */
export function classifyMeshReplace(observed: MeshObservation, desired: string): { row: MeshRow; action: MeshAction } {
  const classified = classifyMesh(observed, desired);
  const action = classified.action;
  if (action.kind !== "no-op" && action.kind !== "observe") return classified;
  const target = observed.instances.find((i) => i.fence === action.instance);
  if (target === undefined) return classified;
  return { row: classified.row, action: replaceFrom(target, "user") };
}
