/**
 * What the controller's store speaks (spec/mesh.md §14.1): the records it keeps and returns, its typed refusals
 * (`NameTaken`, `IllegalTransition`), and the mapping from stored rows, the same for both engines.
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { Tier } from "../../core/identity/tier.js";
import { type DecisionEvent, type DecisionState, isDecisionState } from "../../core/mesh/decision-state.js";
import type { OwnerLease, OwnerVerdict } from "../../core/mesh/owner-liveness.js";
import type { Result } from "../../kit/result.js";

export type { DecisionState } from "../../core/mesh/decision-state.js";

declare const decisionIdBrand: unique symbol;
/** The hash of a committed decision event (§9.2 step 6); the only authority a mutating request may carry (I4). */
export type DecisionId = string & { readonly [decisionIdBrand]: true };

export type TierSource = "default" | "api" | "peers";

/** What the gate and the engine need to know about a placed workload, kept with its decision and placement. */
export interface WorkloadRecord {
  readonly kind: string;
  readonly network: "none" | "lan" | "egress";
  readonly secrets: boolean;
  readonly cpu_millis: number;
  readonly memory_bytes: number;
  readonly labels: readonly string[];
  readonly excludes: readonly string[];
  readonly package_id: string;
  readonly signer_keys: readonly string[];
  readonly file_hashes: readonly string[];
}

/** §9.5 PlacementRecord, plus `pending` (§12 step 6). */
export interface PlacementRecord {
  readonly instance_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly decision_id: string;
  readonly variant: string;
  readonly route: "native" | "emulated";
  readonly package_id: string;
  readonly placed_ms: number;
  readonly adopted: boolean;
  readonly pending: string | null;
}

export interface UnsettledDecision {
  readonly decision_id: DecisionId;
  readonly name: string;
  readonly node_id: string;
  readonly variant: string;
  readonly package_id: string;
  readonly created_ms: number;
  readonly workload: WorkloadRecord;
}

export interface StoredTarget {
  readonly addr: string;
  readonly node_id: string | null;
  readonly key: string | null;
  readonly tier: Tier;
  readonly tier_source: TierSource;
  readonly learned_ms: number | null;
}

/**
 * What the store keeps of a target's last contacts (issue 16): every process that talks to a node records the
 * outcome here, so every process judges the same truth (`judgeNodeLiveness`). Not chained: an observation is not a
 * decision, and a tick that changes nothing must add nothing to the chain.
 */
export interface StoredContact {
  readonly addr: string;
  readonly last_ok_ms: number | null;
  readonly unreachable_since_ms: number | null;
  readonly last_error: string | null;
  /** The name in the node's last accepted facts, so a fresh process can show it before describing. */
  readonly name: string | null;
  /** When the outcome recorded last was observed; an older outcome arriving later is dropped. */
  readonly contact_ms: number | null;
}

/**
 * A valid answer: `refusal` is a signed refusal's code and reason (the node is there, it said no; recorded as the last
 * error), null for an answer that was not a refusal; `name` the node's name in facts accepted with it.
 */
export interface ContactAnswered {
  readonly at_ms: number;
  readonly refusal: string | null;
  readonly name: string | null;
}

/** No valid answer: why (recorded as the last error). */
export interface ContactMissed {
  readonly at_ms: number;
  readonly reason: string;
}

/** One contact's outcome: a valid answer (a signed refusal included) or none. */
export type ContactOutcome = Result<ContactAnswered, ContactMissed>;

export interface AttemptRow {
  readonly decision_id: string;
  readonly n: number;
  readonly node_id: string;
  readonly variant: string;
  readonly state: "sending" | "done";
  readonly outcome: string | null;
  readonly code: string | null;
  readonly reason: string | null;
}

export interface DecisionRow {
  readonly id: string;
  readonly name: string;
  readonly state: DecisionState;
  readonly node_id: string | null;
  readonly variant: string | null;
  readonly package_id: string;
  readonly created_ms: number;
  readonly workload: WorkloadRecord;
  readonly owner_id: string | null;
  readonly epoch: number | null;
}

/** How an attempt ends the dispatch, when it does (§9.4 step 5–6). */
export type AttemptEnding =
  | { readonly state: "unsettled"; readonly node_id: string; readonly variant: string }
  | { readonly state: "unplaced"; readonly exhausted: EventDraft }
  | null;

/** Who holds a name a new decision wanted: a placement, or an open decision (with its owner when one is recorded). */
export type NameHolder =
  | { readonly kind: "placement"; readonly instance_id: string; readonly node_id: string; readonly decision_id: string }
  | {
      readonly kind: "decision";
      readonly decision_id: string;
      readonly state: DecisionState;
      readonly since_ms: number;
      readonly owner: {
        readonly pid: number;
        readonly host: string;
        readonly epoch: number;
        readonly alive: boolean;
      } | null;
    };

export class NameTaken extends Error {
  override name = "NameTaken";
  constructor(
    message: string,
    readonly holder: NameHolder | null = null,
  ) {
    super(message);
  }
}

/** The store refused a change of a decision's state that its machine does not allow (decision-state.ts). */
export class IllegalTransition extends Error {
  override name = "IllegalTransition";
  constructor(
    readonly decisionId: string,
    readonly from: DecisionState | "absent",
    readonly event: DecisionEvent,
    reason: string,
  ) {
    super(`decision ${decisionId}: ${reason}`);
  }
}

/** A decision `unsettled` while a placement already records it: the wedge of issue 21 case 2 (`berth doctor`). */
export interface WedgedDecision {
  readonly decision_id: string;
  readonly name: string;
  readonly instance_id: string;
  readonly node_id: string;
}

/** A decision in an owned state, with its owner as judged from here. */
export interface OwnedDecision {
  readonly decision: DecisionRow;
  readonly owner: OwnerLease | null;
  readonly verdict: OwnerVerdict;
  readonly sending: AttemptRow | null;
}

export function holderText(name: string, holder: NameHolder): string {
  if (holder.kind === "placement") {
    return `name ${name} is already placed: instance ${holder.instance_id} on node ${holder.node_id} (decision ${holder.decision_id})`;
  }
  const since = new Date(holder.since_ms).toISOString();
  if (holder.state === "unsettled") {
    return `name ${name} is held by unsettled decision ${holder.decision_id} since ${since}: its node may hold the instance (see \`berth unsettled --settle\`)`;
  }
  const by = holder.owner
    ? `pid ${holder.owner.pid} on ${holder.owner.host} (epoch ${holder.owner.epoch})`
    : "an owner that was not recorded";
  return `name ${name} is held by a decision in flight by ${by} since ${since} (decision ${holder.decision_id}, ${holder.state}); wait for it to finish`;
}

export interface PlacementSql {
  instance_id: string;
  name: string;
  node_id: string;
  decision_id: string;
  variant: string;
  route: string;
  package_id: string;
  placed_ms: number;
  adopted: number;
  pending: string | null;
}

export interface DecisionSql {
  id: string;
  name: string;
  state: string;
  node_id: string | null;
  variant: string | null;
  package_id: string;
  created_ms: number;
  workload: string;
  owner_id: string | null;
  epoch: number | null;
}

export function placementOf(r: PlacementSql): PlacementRecord {
  return {
    instance_id: r.instance_id,
    name: r.name,
    node_id: r.node_id,
    decision_id: r.decision_id,
    variant: r.variant,
    route: r.route === "emulated" ? "emulated" : "native",
    package_id: r.package_id,
    placed_ms: Number(r.placed_ms),
    adopted: Number(r.adopted) === 1,
    pending: r.pending,
  };
}

export function decisionOf(r: DecisionSql): DecisionRow {
  return {
    id: r.id,
    name: r.name,
    state: isDecisionState(r.state) ? r.state : "unplaced",
    node_id: r.node_id,
    variant: r.variant,
    package_id: r.package_id,
    created_ms: Number(r.created_ms),
    workload: JSON.parse(r.workload) as WorkloadRecord,
    owner_id: r.owner_id,
    epoch: r.epoch === null ? null : Number(r.epoch),
  };
}
