/**
 * Hard constraints (spec/mesh.md §8.3): feasibility, one node at a time.
 *
 * Every constraint is evaluated for every node, in the order of the table, and every failure is recorded under
 * its stable name with a detail, not only the first: "why not there?" always has a complete answer. A node is
 * eligible exactly when it has no rejection, and then it also has a chosen variant and route.
 *
 * Constraints that read facts are skipped when the node has no usable facts; `facts_expired` has already said so.
 * Stale facts (present but expired) are still read, so the explain shows what else would stand in the way.
 *
 * Issue 35 (1,000 nodes, 3,000 decisions a second): an eligible node allocates nothing here; what a node's facts
 * alone decide comes from its facts memo (facts-memo.ts); a rejection whose detail is the same for many nodes (a
 * liveness, a tier, a cordon, a missing or denied verdict, a revoked ref) is one object per decision, shared by the
 * reports that carry it. Reports are read-only values, so sharing changes nothing a reader can see.
 */
import { TIER_RANK } from "../identity/tier.js";
import { type FactsMemo, type RequestShape, shapeOf } from "./facts-memo.js";
import type { ClusterInstance, ClusterState, NodeView, PlacedTotal, PlacementRequest, PlaceVerdict } from "./inputs.js";
import type { Rejection } from "./outputs.js";

/** What the cluster's history says about one node: the instances constraints read, and the placed totals. */
export interface NodeHistory {
  /** In a fixed order, so details never depend on the order the shell listed them. */
  instances: ClusterInstance[];
  count: number;
  memory_bytes: number;
}

/** What every node's evaluation shares, computed once per decision. */
export interface ConstraintContext {
  readonly request: PlacementRequest;
  readonly shape: RequestShape;
  readonly nowMs: number;
  /** The workload's own revoked refs: the same for every node, so worded once. */
  readonly revokedRefs: readonly Rejection[];
  readonly minTierRank: number;
  /** Whether co-residency can reject anything: the workload excludes or carries labels. */
  readonly coResidency: boolean;
  /** Shared rejections, one per liveness, tier and gate reason met in the decision. */
  readonly livenessRejections: Map<string, Rejection>;
  readonly trustRejections: Map<string, Rejection>;
  readonly gateRejections: Map<string, Rejection>;
}

/** Orders a node's instances by everything a co-residency detail is made of, so equal keys mean equal details. */
function sortInstances(list: ClusterInstance[]): ClusterInstance[] {
  if (list.length < 2) return list;
  const keyed = list.map((i) => ({
    i,
    k: `${i.name}\u0000${i.labels.join("\u0001")}\u0000${i.excludes.join("\u0001")}`,
  }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return keyed.map((x) => x.i);
}

/**
 * The history per list position (`positionOf` gives a node id's, or -1 for a node not listed, whose history no
 * decision reads): the instances from `instances`, the totals from `placed` when the shell gives them (history.ts),
 * else counted from `instances` (rows for one node add up; order-independent). `undefined` where nothing is placed.
 */
export function historyByPosition(
  instances: readonly ClusterInstance[],
  placed: readonly PlacedTotal[] | null,
  n: number,
  positionOf: (id: string) => number,
): (NodeHistory | undefined)[] {
  const at: (NodeHistory | undefined)[] = new Array(n);
  for (const inst of instances) {
    const position = positionOf(inst.node_id);
    if (position < 0) continue;
    const h = at[position];
    if (h === undefined) {
      at[position] = {
        instances: [inst],
        count: placed === null ? 1 : 0,
        memory_bytes: placed === null ? inst.memory_bytes : 0,
      };
    } else {
      h.instances.push(inst);
      if (placed === null) {
        h.count += 1;
        h.memory_bytes += inst.memory_bytes;
      }
    }
  }
  if (placed !== null) {
    for (const t of placed) {
      const position = positionOf(t.node_id);
      if (position < 0) continue;
      const h = at[position];
      if (h === undefined) at[position] = { instances: [], count: t.count, memory_bytes: t.memory_bytes };
      else {
        h.count += t.count;
        h.memory_bytes += t.memory_bytes;
      }
    }
  }
  for (const h of at) if (h !== undefined && h.instances.length > 1) h.instances = sortInstances(h.instances);
  return at;
}

export function constraintContext(request: PlacementRequest, cluster: ClusterState): ConstraintContext {
  const revoked = new Set(cluster.revoked_refs);
  const revokedRefDetails: string[] = [];
  for (const ref of new Set(request.spec.refs)) {
    if (!revoked.has(ref)) continue;
    revokedRefDetails.push(ref === request.spec.package_id ? `package ${ref} is revoked` : `ref ${ref} is revoked`);
  }
  if (revoked.has(request.spec.package_id) && !request.spec.refs.includes(request.spec.package_id)) {
    revokedRefDetails.unshift(`package ${request.spec.package_id} is revoked`);
  }
  const { policy } = request.spec;
  return {
    request,
    shape: shapeOf(request),
    nowMs: cluster.now_ms,
    revokedRefs: revokedRefDetails.map((detail) => ({ constraint: "revoked", detail })),
    minTierRank: TIER_RANK[policy.min_tier],
    coResidency: policy.excludes.length > 0 || policy.labels.length > 0,
    livenessRejections: new Map(),
    trustRejections: new Map(),
    gateRejections: new Map(),
  };
}

/** One rejection per distinct detail within a decision, under one key each (a liveness, a tier, a gate reason). */
function sharedIn(table: Map<string, Rejection>, key: string, make: () => Rejection): Rejection {
  let r = table.get(key);
  if (r === undefined) {
    r = make();
    table.set(key, r);
  }
  return r;
}

const CORDONED: Rejection = {
  constraint: "cordoned",
  detail: "the operator cordoned this node (berth node cordon, drain or forget): no new placements",
};
const NO_FACTS: Rejection = { constraint: "facts_expired", detail: "no accepted facts" };
const NO_VERDICT: Rejection = { constraint: "gate", detail: "workload.place has no gate verdict for this node" };

function add(list: Rejection[] | null, r: Rejection): Rejection[] {
  if (list === null) return [r];
  list.push(r);
  return list;
}

/** `marks` bits: the node is in `cluster.revoked_nodes`, in `cluster.cordoned_nodes` (node-slots.ts `markIds`). */
export const REVOKED = 1;
export const CORDONED_MARK = 2;

/**
 * Every constraint `node` fails, in §8.3 order, or `null` when it fails none (eligible: then `memo.fit` is its
 * variant and route). `factsMemo` is its facts' memo (null without facts), answering for the request's shape
 * (`useShape`) unless the facts were refused; `history` its entry of `historyByPosition`; `marks` its REVOKED and
 * CORDONED_MARK bits.
 */
export function rejectionsOf(
  node: NodeView,
  factsMemo: FactsMemo | null,
  history: NodeHistory | undefined,
  marks: number,
  ctx: ConstraintContext,
): Rejection[] | null {
  const { request } = ctx;
  const { spec } = request;
  let rejections: Rejection[] | null = null;
  const refusal = factsMemo === null ? null : factsMemo.refusal;
  const memo = refusal === null ? factsMemo : null;

  // liveness
  const liveness = node.liveness;
  if (liveness !== "alive")
    rejections = add(
      rejections,
      sharedIn(ctx.livenessRejections, liveness, () => ({ constraint: "liveness", detail: `node is ${liveness}` })),
    );

  // facts_expired
  if (refusal !== null) rejections = add(rejections, refusal);
  else if (memo === null) rejections = add(rejections, NO_FACTS);
  else if (node.facts_expire_at_ms <= ctx.nowMs) {
    rejections = add(rejections, {
      constraint: "facts_expired",
      detail: `facts expired at ${node.facts_expire_at_ms}`,
    });
  }

  // trust
  const tier = node.tier;
  if (TIER_RANK[tier] < ctx.minTierRank) {
    rejections = add(
      rejections,
      sharedIn(ctx.trustRejections, tier, () => ({
        constraint: "trust",
        detail: `tier ${tier} is below required ${spec.policy.min_tier}`,
      })),
    );
  }

  // revoked
  if ((marks & REVOKED) !== 0)
    rejections = add(rejections, { constraint: "revoked", detail: `node ${node.node_id} is revoked` });
  for (const r of ctx.revokedRefs) rejections = add(rejections, r);

  // cordoned (issue 16): the operator's mark; what is already there stays, nothing new lands
  if ((marks & CORDONED_MARK) !== 0) rejections = add(rejections, CORDONED);

  // co_residency: both directions; one line per offending instance and label
  const here = history === undefined ? null : history.instances;
  if (here !== null && here.length > 0 && ctx.coResidency) {
    const details: string[] = [];
    for (const inst of here) {
      for (const label of inst.labels) {
        if (spec.policy.excludes.includes(label)) details.push(`instance ${inst.name} carries excluded label ${label}`);
      }
      for (const label of inst.excludes) {
        if (spec.policy.labels.includes(label))
          details.push(`instance ${inst.name} excludes label ${label}, which this workload carries`);
      }
    }
    // Two instances of one name with the same labels say the same thing once.
    const unique = details.length > 1 ? new Set(details) : details;
    for (const detail of unique) rejections = add(rejections, { constraint: "co_residency", detail });
  }

  // memory: a zero demand always fits; instances placed after the facts were issued are not in them yet
  if (memo !== null && spec.memory_bytes > 0) {
    let pending = 0;
    if (here !== null) for (const inst of here) if (inst.placed_at_ms > memo.issuedAtMs) pending += inst.memory_bytes;
    const free = memo.availableBytes - pending;
    if (spec.memory_bytes > free) {
      const shown = Math.max(0, free);
      const note = pending > 0 ? ` (${pending} pending for instances placed since the facts were issued)` : "";
      rejections = add(rejections, {
        constraint: "memory",
        detail: `needs ${spec.memory_bytes} bytes, ${shown} available${note}`,
      });
    }
  }

  // requirements and emulation_not_allowed
  if (memo !== null) for (const r of memo.rejections) rejections = add(rejections, r);

  // gate: a missing verdict is a deny (§7: governance fails closed). One plain read: a node id is 32 hex
  // characters (inputs.ts), never the name of an inherited member such as `constructor`.
  const verdict: PlaceVerdict | undefined = request.gate[node.node_id];
  if (verdict === undefined) rejections = add(rejections, NO_VERDICT);
  else if (verdict.verdict !== "permit") {
    const reason = verdict.reason;
    rejections = add(
      rejections,
      sharedIn(ctx.gateRejections, reason, () => ({ constraint: "gate", detail: `workload.place denied: ${reason}` })),
    );
  }
  return rejections;
}
