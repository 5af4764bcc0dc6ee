/**
 * Hard constraints (spec/mesh.md §8.3): feasibility, one node at a time.
 *
 * Every constraint is evaluated for every node, in the order of the table, and every failure is recorded under
 * its stable name with a detail, not only the first: "why not there?" always has a complete answer. A node is
 * eligible exactly when it has no rejection, and then it also has a chosen variant and route.
 *
 * Constraints that read facts are skipped when the node has no usable facts; `facts_expired` has already said so.
 * Stale facts (present but expired) are still read, so the explain shows what else would stand in the way.
 */
import { TIER_RANK } from "../../../../src/core/identity/tier.js";
import type {
  ClusterInstance,
  ClusterState,
  NodeFacts,
  NodeView,
  PlacementRequest,
} from "../../../../src/core/placement/inputs.js";
import type { Rejection } from "../../../../src/core/placement/outputs.js";
import {
  CapabilityIndex,
  checkPreparedRequirement,
  type PreparedRequirement,
  prepareRequirement,
} from "./capabilities.js";
import { chooseRoute, type PreparedVariant, prepareVariants, type RouteContext, type RouteFit } from "./route.js";

/** What every node's evaluation shares, computed once per decision. */
export interface ConstraintContext {
  readonly request: PlacementRequest;
  readonly nowMs: number;
  readonly revokedNodes: ReadonlySet<string>;
  readonly cordonedNodes: ReadonlySet<string>;
  /** The workload's own revoked refs: the same for every node, so worded once. */
  readonly revokedRefDetails: readonly string[];
  /** Cluster instances per node, in a fixed order so details never depend on the order the shell listed them. */
  readonly instancesByNode: ReadonlyMap<string, readonly ClusterInstance[]>;
  readonly minTierRank: number;
  readonly requirements: readonly PreparedRequirement[];
  readonly variants: readonly PreparedVariant[];
  readonly route: RouteContext;
  /** What requirements, variants and route context are, as one string: the key of a node's memoised fit (`fitOf`). */
  readonly fitKey: string;
}

export type Fit = Extract<RouteFit, { kind: "fits" }>;

export interface Assessment {
  readonly node: NodeView;
  /** The facts the engine may read, `null` when there are none or they were refused as self-asserting trust. */
  readonly facts: NodeFacts | null;
  /** Matching's view of those facts, `null` exactly when `facts` is. */
  readonly capabilities: CapabilityIndex | null;
  readonly rejections: readonly Rejection[];
  /** Present exactly when the node is eligible. */
  readonly fit: Fit | null;
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
  const byNode = new Map<string, ClusterInstance[]>();
  for (const inst of cluster.instances) {
    const list = byNode.get(inst.node_id);
    if (list) list.push(inst);
    else byNode.set(inst.node_id, [inst]);
  }
  for (const [id, list] of byNode) if (list.length > 1) byNode.set(id, sortInstances(list));
  return {
    request,
    nowMs: cluster.now_ms,
    revokedNodes: new Set(cluster.revoked_nodes),
    cordonedNodes: new Set(cluster.cordoned_nodes),
    revokedRefDetails,
    instancesByNode: byNode,
    minTierRank: TIER_RANK[request.spec.policy.min_tier],
    requirements: request.spec.requirements.map(prepareRequirement),
    variants: prepareVariants(request.spec.variants),
    route: { allowEmulated: request.allow_emulated, fallbackBoards: request.weights.fallback_boards },
    fitKey: JSON.stringify([
      request.spec.requirements,
      request.spec.variants,
      request.allow_emulated,
      request.weights.fallback_boards,
    ]),
  };
}

/**
 * What a node's facts alone decide, worked out once per facts object rather than once per decision (issue 35: at 1,000
 * nodes this was most of a decision's cost). A controller hands the engine the same facts objects until it describes
 * the node again, so consecutive decisions over one view meet them again. Memoised by identity in a WeakMap: a pure
 * function of immutable inputs, so a hit gives exactly what computing it would; the entry goes with the facts.
 */
interface FactsMemo {
  /** `selfAssertedTrust(facts)`. */
  readonly refusal: string | null;
  readonly capabilities: CapabilityIndex;
  /** Per `fitKey`: the requirements' and the route's rejections, and the fit (null unless every one held). */
  readonly fits: Map<string, NodeFit>;
}

interface NodeFit {
  readonly rejections: readonly Rejection[];
  readonly fit: Fit | null;
}

/** Distinct requests remembered per facts object: beyond this the oldest is forgotten (many packages, one view). */
const FITS_PER_FACTS = 32;

const memos = new WeakMap<NodeFacts, FactsMemo>();

function memoOf(facts: NodeFacts): FactsMemo {
  let memo = memos.get(facts);
  if (memo === undefined) {
    memo = { refusal: selfAssertedTrust(facts), capabilities: new CapabilityIndex(facts), fits: new Map() };
    memos.set(facts, memo);
  }
  return memo;
}

/** The requirements and the route for a node whose facts are accepted (they are the same for every decision of one request shape). */
function fitOf(memo: FactsMemo, ctx: ConstraintContext): NodeFit {
  const known = memo.fits.get(ctx.fitKey);
  if (known !== undefined) return known;
  const capabilities = memo.capabilities;
  const rejections: Rejection[] = [];
  let fit: Fit | null = null;
  for (const req of ctx.requirements) {
    const check = checkPreparedRequirement(capabilities, req);
    if (!check.ok) rejections.push({ constraint: "requirements", detail: check.why });
  }
  const route = chooseRoute(ctx.variants, capabilities, ctx.route);
  switch (route.kind) {
    case "fits":
      fit = route;
      break;
    case "none":
      for (const m of route.misfits)
        rejections.push({ constraint: "requirements", detail: `variant ${m.variant}: ${m.why}` });
      break;
    case "emulation_not_allowed":
      rejections.push({
        constraint: "emulation_not_allowed",
        detail: `only emulated route(s) fit (${route.emulated.join(", ")}); emulation needs allow_emulated`,
      });
      break;
    default: {
      const unreachable: never = route;
      return unreachable;
    }
  }
  const made: NodeFit = { rejections, fit };
  if (memo.fits.size >= FITS_PER_FACTS) {
    const oldest = memo.fits.keys().next();
    if (oldest.done !== true) memo.fits.delete(oldest.value);
  }
  memo.fits.set(ctx.fitKey, made);
  return made;
}

/** §3.4: facts that assert trust are refused whole, so the node has no facts. The shell should already have. */
function selfAssertedTrust(facts: NodeFacts): string | null {
  for (const c of facts.capabilities) {
    if (c.id === "trust" || c.id.startsWith("trust.")) {
      return `facts refused: capability ${c.id} asserts trust, which only the operator assigns`;
    }
  }
  for (const key in facts.labels) {
    if (Object.hasOwn(facts.labels, key) && key.startsWith("berth.io/tier")) {
      return `facts refused: label ${key} asserts a tier, which only the operator assigns`;
    }
  }
  return null;
}

const NO_INSTANCES: readonly ClusterInstance[] = [];

export function assessNode(node: NodeView, ctx: ConstraintContext): Assessment {
  const { request } = ctx;
  const { spec } = request;
  const rejections: Rejection[] = [];
  const memo = node.facts ? memoOf(node.facts) : null;
  const refusal = memo === null ? null : memo.refusal;
  const facts = refusal === null ? node.facts : null;
  const capabilities = facts === null || memo === null ? null : memo.capabilities;

  // liveness
  if (node.liveness !== "alive") rejections.push({ constraint: "liveness", detail: `node is ${node.liveness}` });

  // facts_expired
  if (refusal !== null) rejections.push({ constraint: "facts_expired", detail: refusal });
  else if (facts === null) rejections.push({ constraint: "facts_expired", detail: "no accepted facts" });
  else if (node.facts_expire_at_ms <= ctx.nowMs) {
    rejections.push({ constraint: "facts_expired", detail: `facts expired at ${node.facts_expire_at_ms}` });
  }

  // trust
  if (TIER_RANK[node.tier] < ctx.minTierRank) {
    rejections.push({ constraint: "trust", detail: `tier ${node.tier} is below required ${spec.policy.min_tier}` });
  }

  // revoked
  if (ctx.revokedNodes.has(node.node_id))
    rejections.push({ constraint: "revoked", detail: `node ${node.node_id} is revoked` });
  for (const detail of ctx.revokedRefDetails) rejections.push({ constraint: "revoked", detail });

  // cordoned (issue 16): the operator's mark; what is already there stays, nothing new lands
  if (ctx.cordonedNodes.has(node.node_id))
    rejections.push({
      constraint: "cordoned",
      detail: "the operator cordoned this node (berth node cordon, drain or forget): no new placements",
    });

  // co_residency: both directions; one line per offending instance and label
  const here = ctx.instancesByNode.get(node.node_id) ?? NO_INSTANCES;
  if (here.length > 0 && (spec.policy.excludes.length > 0 || spec.policy.labels.length > 0)) {
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
    for (const detail of unique) rejections.push({ constraint: "co_residency", detail });
  }

  // memory: a zero demand always fits; instances placed after the facts were issued are not in them yet
  if (facts !== null && spec.memory_bytes > 0) {
    let pending = 0;
    for (const inst of here) if (inst.placed_at_ms > facts.issued_at_ms) pending += inst.memory_bytes;
    const free = facts.memory.available_bytes - pending;
    if (spec.memory_bytes > free) {
      const shown = Math.max(0, free);
      const note = pending > 0 ? ` (${pending} pending for instances placed since the facts were issued)` : "";
      rejections.push({ constraint: "memory", detail: `needs ${spec.memory_bytes} bytes, ${shown} available${note}` });
    }
  }

  // requirements and emulation_not_allowed
  let fit: Fit | null = null;
  if (capabilities !== null && memo !== null) {
    const known = fitOf(memo, ctx);
    for (const r of known.rejections) rejections.push(r);
    fit = known.fit;
  }

  // gate: a missing verdict is a deny (§7: governance fails closed). One plain read: a node id is 32 hex
  // characters (inputs.ts), never the name of an inherited member such as `constructor`.
  const verdict = request.gate[node.node_id];
  if (verdict === undefined)
    rejections.push({ constraint: "gate", detail: "workload.place has no gate verdict for this node" });
  else if (verdict.verdict !== "permit")
    rejections.push({ constraint: "gate", detail: `workload.place denied: ${verdict.reason}` });

  return { node, facts, capabilities, rejections, fit: rejections.length === 0 ? fit : null };
}
