/**
 * The placement history a decision reads (issue 19). What is already placed weighs on a decision in two ways:
 *
 * - in bulk, per node: how many instances it holds and how much memory they declared (the placed part of the load
 *   dimension, score.ts), which needs totals and nothing else;
 * - one by one, only where a constraint names an instance in its detail (constraints.ts): `co_residency` (an
 *   instance carrying a label this workload excludes, or excluding a label it carries) and `memory` (instances placed
 *   after the node's facts were issued, whose memory those facts cannot show as used yet).
 *
 * So a shell need not hand the engine every placement it knows: `cluster.placed` carries the totals per node (the
 * controller store keeps them in the transaction that writes or removes each placement), and `cluster.instances`
 * then need hold only the instances `historyReads` selects. Structural rule: any list of instances that contains
 * those gives the decision the full list gives (the property test in history.test.ts): the totals come from
 * `placed` alone, and an instance outside the selection can add no detail and no pending memory.
 */
import type { ClusterInstance, NodeView, PlacedTotal, WorkloadSpec } from "./inputs.js";

/** Which instances the constraints read one by one, for one request over one set of node views. */
export interface HistoryReads {
  /** Instances carrying any of these labels (the workload's excludes). */
  readonly carrying: readonly string[];
  /** Instances excluding any of these labels (the workload's own labels). */
  readonly excluding: readonly string[];
  /**
   * Per node id, instances there placed after this time (the issue time of the facts the engine reads); empty when
   * the workload declares no memory, since a zero demand always fits and no pending sum is ever worded.
   */
  readonly placedAfter: ReadonlyMap<string, number>;
}

export function historyReads(
  request: { readonly spec: Pick<WorkloadSpec, "memory_bytes" | "policy"> },
  nodes: readonly NodeView[],
): HistoryReads {
  const { policy, memory_bytes } = request.spec;
  const placedAfter = new Map<string, number>();
  if (memory_bytes > 0) for (const n of nodes) if (n.facts !== null) placedAfter.set(n.node_id, n.facts.issued_at_ms);
  return { carrying: [...policy.excludes], excluding: [...policy.labels], placedAfter };
}

/** Whether `historyReads` selects this instance (what a store's query must return at least). */
export function isRead(reads: HistoryReads, inst: ClusterInstance): boolean {
  const after = reads.placedAfter.get(inst.node_id);
  if (after !== undefined && inst.placed_at_ms > after) return true;
  return inst.labels.some((l) => reads.carrying.includes(l)) || inst.excludes.some((l) => reads.excluding.includes(l));
}

/** The per-node totals of a full list of instances, as `cluster.placed` carries them (by node id). */
export function placedSummary(instances: readonly ClusterInstance[]): PlacedTotal[] {
  const byNode = new Map<string, { count: number; memory_bytes: number }>();
  for (const i of instances) {
    const was = byNode.get(i.node_id);
    if (was) {
      was.count += 1;
      was.memory_bytes += i.memory_bytes;
    } else byNode.set(i.node_id, { count: 1, memory_bytes: i.memory_bytes });
  }
  return [...byNode]
    .map(([node_id, t]) => ({ node_id, ...t }))
    .sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0));
}

/**
 * Issue 35: the history a decision reads with the placements still being dispatched added, as if each had just been
 * made: in its node's totals, and among the instances when `reads` selects it. Decisions made while others are in flight
 * (a keep pass's moves, concurrent API placements) then weigh one another instead of all seeing the same least-loaded
 * node. With nothing in flight the history is returned as it was, so sequential decisions are the same as before.
 */
export function withInFlight(
  history: { readonly placed: readonly PlacedTotal[]; readonly instances: readonly ClusterInstance[] },
  inFlight: readonly ClusterInstance[],
  reads: HistoryReads,
): { placed: PlacedTotal[]; instances: ClusterInstance[] } {
  if (inFlight.length === 0) return { placed: [...history.placed], instances: [...history.instances] };
  const totals = new Map(history.placed.map((t) => [t.node_id, { ...t }]));
  for (const added of placedSummary(inFlight)) {
    const was = totals.get(added.node_id);
    if (was) {
      was.count += added.count;
      was.memory_bytes += added.memory_bytes;
    } else totals.set(added.node_id, added);
  }
  return {
    placed: [...totals.values()].sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0)),
    instances: [...history.instances, ...inFlight.filter((i) => isRead(reads, i))],
  };
}
