/**
 * Building the mesh observation of one agent (issue 7) from what the shell gathered: every node's signed status rows,
 * the controller's placement records and its unsettled decisions. Pure: the shell does the calls, this decides what
 * they mean, so "which instances are this agent's, and in which startup state" is a unit test, not a network test.
 *
 * Rules, each a line below:
 * - an instance belongs to the agent only when the node's row names it (`verifyInstance`); a row with no agent is a
 *   plain `berth place` workload and is reported separately, never classified;
 * - a node that did not answer hides whatever it holds: each placement record of the agent on such a node becomes
 *   `unobservable` (a read error is never absence);
 * - a placement whose unload or stop answer was lost (`pending`) is going away as far as deploy is concerned: wait
 *   for the next status to resolve it, never place beside it;
 * - the age order of instances is the seq of their decision in the controller's chain; an instance this controller
 *   never decided (placed by another controller) sorts as the youngest, so an instance we placed is the one kept;
 * - "stale" is decided by identity (issue 21 case 3): a placement record only holds the name when the shell read that
 *   very record (its decision id) before it asked the nodes, and its node then answered without the instance. A
 *   record is written only after its node reported the instance, so such an answer proves the node let it go. A
 *   record whose decision id appeared only while the nodes were being asked was placed meanwhile (another berth
 *   process): it is never stale, and the observation is not a consistent picture to act on (`placedMeanwhile`).
 */
import type { NodeId } from "../crypto/ed25519.js";
import { type InstanceStartup, type MeshObservation, type VerifiedInstance, verifyInstance } from "./mesh-classify.js";

/** The fields of a node's instance status row (spec/mesh.md §11.2, plus issue 7's agent, intent and generation). */
export interface NodeInstanceRow {
  readonly instance_id: string;
  readonly decision_id: string;
  readonly name: string;
  readonly state: string;
  readonly exit_code: number | null;
  readonly agent: string | null;
  readonly intent: string | null;
  readonly generation: number;
  /** Issue 15: restarts by the node's supervisor since the operator last started it (0 from an older node). */
  readonly restarts: number;
  /** Issue 36: when its process last started (the node's clock, ms), null when it never ran; absent from older callers. */
  readonly started_ms?: number | null;
}

export type NodeAnswer =
  | { readonly kind: "answered"; readonly nodeId: NodeId; readonly rows: readonly NodeInstanceRow[] }
  | { readonly kind: "unreachable"; readonly nodeId: NodeId; readonly reason: string };

export interface ControllerRecords {
  readonly placements: readonly {
    readonly instance_id: string;
    readonly name: string;
    readonly node_id: string;
    readonly decision_id: string;
    readonly pending: string | null;
  }[];
  readonly unsettled: readonly { readonly decision_id: string; readonly name: string; readonly node_id: string }[];
  /** The decision ids of the placement records read before any node was asked (the identities a stale verdict may use). */
  readonly placedBefore: ReadonlySet<string>;
  /** The seq of a decision event in the controller's chain, or null when this controller never made it. */
  readonly seqOf: (decisionId: string) => number | null;
}

/** One instance as the audit event and the CLI show it. */
export interface ObservedInstance {
  readonly node_id: string;
  readonly instance_id: string;
  readonly state: string;
  readonly startup: InstanceStartup["kind"];
  readonly generation: number;
  readonly intent: string | null;
  readonly placed_seq: number | null;
  readonly restarts: number;
  /** Issue 36 (`berth top`, the per-agent metrics): when its process last started, by the node's clock. */
  readonly started_ms: number | null;
}

export interface MeshAgentObservation {
  readonly observation: MeshObservation;
  /** Plain data for the audit event and `--json`. */
  readonly shown: {
    readonly instances: readonly ObservedInstance[];
    readonly unsettled: readonly string[];
    readonly unobservable: readonly { readonly nodeId: string; readonly instanceId: string }[];
    readonly unreachable_nodes: readonly { readonly node_id: string; readonly reason: string }[];
    /** Instances named like the agent that were not placed as the agent (no agent identity on the node). */
    readonly unclaimed: readonly { readonly node_id: string; readonly instance_id: string }[];
  };
  /** Placement records of the agent, read before the nodes were asked, whose node answered without them: they only hold the name. */
  readonly staleRecords: readonly RecordRef[];
  /** Placement records of the agent that appeared while the nodes were being asked and that no answer lists yet. */
  readonly placedMeanwhile: readonly RecordRef[];
}

/** A placement record by identity: its instance, node and the decision that made it. */
export interface RecordRef {
  readonly instanceId: string;
  readonly nodeId: string;
  readonly decisionId: string;
}

/** The node's lifecycle states (spec/mesh.md §11) in the classifier's vocabulary. */
export function startupOf(state: string, exitCode: number | null, pending: string | null): InstanceStartup {
  // A lost unload/stop answer: the instance may be on its way out; resolved by the next status (§12 step 6).
  if (pending === "unload" || pending === "stop") return { kind: "going-away" };
  switch (state) {
    case "running":
    // Issue 15: the node is keeping it alive (failing its health check, or waiting out a restart's backoff).
    case "unhealthy":
    case "backoff":
      return { kind: "started" };
    // Loaded and not (yet) started: `load` without start, or a place still between load and spawn.
    case "loading":
    case "loaded":
    case "starting":
      return { kind: "never-started" };
    // The process is gone: stopped by the user, exited by itself, lost across a node restart, or failed to spawn.
    case "stopped":
    case "exited":
    case "lost":
    case "failed":
    case "finished":
    // Issue 16: stopped by its node when the controller's lease ran out; gone as far as the agent is concerned.
    case "lease_stopped":
      return { kind: "terminated", exitCode };
    // A state this berth does not know: touch nothing and place nothing beside it.
    default:
      return { kind: "going-away" };
  }
}

export function observeMeshAgent(
  agent: string,
  answers: readonly NodeAnswer[],
  records: ControllerRecords,
): MeshAgentObservation {
  const ours = records.placements.filter((p) => p.name === agent);
  const pendingOf = new Map(records.placements.map((p) => [p.instance_id, p.pending]));
  const answered = new Map<string, readonly NodeInstanceRow[]>();
  const unreachable: { node_id: string; reason: string }[] = [];
  for (const a of answers) {
    if (a.kind === "answered") answered.set(a.nodeId, a.rows);
    else unreachable.push({ node_id: a.nodeId, reason: a.reason });
  }
  const instances: VerifiedInstance[] = [];
  const shown: ObservedInstance[] = [];
  const unclaimed: { node_id: string; instance_id: string }[] = [];
  for (const a of answers) {
    if (a.kind !== "answered") continue;
    for (const row of a.rows) {
      if (row.agent === null && row.name === agent) unclaimed.push({ node_id: a.nodeId, instance_id: row.instance_id });
      const seq = records.seqOf(row.decision_id);
      const startup = startupOf(row.state, row.exit_code, pendingOf.get(row.instance_id) ?? null);
      const v = verifyInstance(
        {
          nodeId: a.nodeId,
          instanceId: row.instance_id,
          generation: row.generation,
          agent: row.agent,
          intent: row.intent,
          startup,
          placedSeq: seq ?? Number.MAX_SAFE_INTEGER,
        },
        agent,
      );
      if (v === null) continue;
      instances.push(v);
      shown.push({
        node_id: a.nodeId,
        instance_id: row.instance_id,
        state: row.state,
        startup: startup.kind,
        generation: row.generation,
        intent: row.intent,
        placed_seq: seq,
        restarts: row.restarts,
        started_ms: row.started_ms ?? null,
      });
    }
  }
  const unobservable = ours
    .filter((p) => !answered.has(p.node_id))
    .map((p) => ({ nodeId: p.node_id, instanceId: p.instance_id }));
  const unlisted = ours.filter((p) => answered.get(p.node_id)?.some((r) => r.instance_id === p.instance_id) === false);
  const ref = (p: (typeof ours)[number]): RecordRef => ({
    instanceId: p.instance_id,
    nodeId: p.node_id,
    decisionId: p.decision_id,
  });
  const staleRecords = unlisted.filter((p) => records.placedBefore.has(p.decision_id)).map(ref);
  const placedMeanwhile = unlisted.filter((p) => !records.placedBefore.has(p.decision_id)).map(ref);
  const unsettled = records.unsettled.filter((d) => d.name === agent).map((d) => d.decision_id);
  return {
    observation: { instances, unsettled, unobservable },
    shown: { instances: shown, unsettled, unobservable, unreachable_nodes: unreachable, unclaimed },
    staleRecords,
    placedMeanwhile,
  };
}
