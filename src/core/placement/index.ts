/**
 * The placement engine (mesh.md §8) and its explain rendering (§17): pure, total, synchronous.
 * See README.md in this folder for the pipeline, the vocabulary and which file holds which stage.
 */
export { type CapabilityIndex, capabilitiesOf, checkRequirement, indexCapabilities } from "./capabilities.js";
export { decide, decideUnknown, type ParsedInput, parsePlacementInput } from "./decide.js";
export { type ExplainAttempt, type ExplainOptions, points, renderExplain, renderPlacementError } from "./explain.js";
export {
  type Arch,
  type Capability,
  type ClusterInstance,
  type ClusterState,
  DEFAULT_WEIGHTS,
  type GateVerdict,
  type Liveness,
  type NodeFacts,
  type NodeView,
  type Os,
  type PlacementInput,
  type PlacementInputDraft,
  type PlacementRequest,
  placementInputSchema,
  type Provenance,
  type Requirement,
  type ScoringWeights,
  type Tier,
  type Variant,
  type WorkloadSpec,
} from "./inputs.js";
export {
  CONSTRAINTS,
  type ConstraintName,
  type ExecutionTier,
  FLAGS,
  type Flag,
  type NodeReport,
  type Placement,
  type PlacementDecision,
  type PlacementError,
  type PlacementErrorCode,
  type PlacementResult,
  type Rejection,
  type Route,
  type ScoreBreakdown,
} from "./outputs.js";
export { type DispatchCandidate, dispatchOrder } from "./select.js";
