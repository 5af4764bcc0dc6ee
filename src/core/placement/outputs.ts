/**
 * What the placement engine returns (spec/mesh.md §8.1, §8.7). A decision is chained as the payload of
 * `workload.place {phase: "decision"}` (§16), so every number in it is an integer (`_centi` = hundredths of a
 * point), every member is present (`null`, never `undefined`), and lists are in a defined order: the decision is
 * canonical JSON and its hash does not depend on the order the shell listed the nodes in.
 */
import type { Result } from "../../kit/result.js";
import type { NodeId } from "../crypto/ed25519.js";
import type { PlacementStrategy } from "./inputs.js";

/** The stable constraint names of §8.3, in evaluation order. Explain, events and tests match these verbatim. */
export const CONSTRAINTS = [
  "liveness",
  "facts_expired",
  "trust",
  "revoked",
  "cordoned",
  "co_residency",
  "memory",
  "requirements",
  "emulation_not_allowed",
  "gate",
] as const;
export type ConstraintName = (typeof CONSTRAINTS)[number];

export interface Rejection {
  readonly constraint: ConstraintName;
  readonly detail: string;
}

export type Route = "native" | "emulated";
/** §8.4: `fallback` is a native route on a board listed in `weights.fallback_boards`. */
export type ExecutionTier = "native" | "fallback" | "emulated";

/** §8.6: the complete flag vocabulary, in the order flags are listed. */
export const FLAGS = ["affinity", "emulated", "load_unknown", "pinned", "unmeasured"] as const;
export type Flag = (typeof FLAGS)[number];

export interface ScoreBreakdown {
  readonly execution_centi: number;
  readonly locality_centi: number;
  readonly accel_fit_centi: number;
  readonly perf_centi: number;
  /** The load dimension: `load_cpu_centi + load_placed_centi`. */
  readonly load_centi: number;
  /** From the node's own cpu load (`load1_milli`). */
  readonly load_cpu_centi: number;
  /** From what is already placed on the node, per the decision's strategy. */
  readonly load_placed_centi: number;
  readonly stickiness_centi: number;
}

/** One candidate as the decision reports it; eligible ones carry their route and score, rejected ones why. */
export interface NodeReport {
  readonly node_id: NodeId;
  /** The facts' display name, for explain (`null` without facts). Not in §8.7; added so explain needs only the decision. */
  readonly name: string | null;
  readonly eligible: boolean;
  readonly rejections: readonly Rejection[];
  readonly variant: string | null;
  readonly route: Route | null;
  readonly execution: ExecutionTier | null;
  readonly score: ScoreBreakdown | null;
  readonly total_centi: number | null;
  readonly flags: readonly Flag[];
}

export interface Placement {
  readonly node_id: NodeId;
  readonly variant: string;
  readonly route: Route;
  readonly execution: ExecutionTier;
  readonly accelerator: string | null;
  readonly score: ScoreBreakdown;
  readonly total_centi: number;
  readonly flags: readonly Flag[];
}

export interface PlacementDecision {
  readonly name: string;
  readonly kind: string;
  readonly package_id: string;
  readonly allow_emulated: boolean;
  readonly pin: string | null;
  readonly prefer: readonly string[];
  readonly avoid: readonly string[];
  readonly strategy: PlacementStrategy;
  /** Ranked (§8.6): eligible by total descending then node id ascending, then the rejected by node id. */
  readonly candidates: readonly NodeReport[];
  /** `null` when nothing fits: a decision, not an error. */
  readonly placement: Placement | null;
}

export type PlacementErrorCode = "invalid_request" | "duplicate_node" | "unknown_pin" | "pin_ineligible";

export interface PlacementError {
  readonly code: PlacementErrorCode;
  /** For people: what happened, why it matters, what to do next. */
  readonly message: string;
  /** For `pin_ineligible`: every constraint the pinned node failed (chained as `constraints`, §16). Else empty. */
  readonly constraints: readonly Rejection[];
}

/** The decision (`placement: null` when nothing fits), or why none was made. */
export type PlacementResult = Result<PlacementDecision, PlacementError>;
