/**
 * The placement engine (spec/mesh.md §8) and its explain rendering (§17): pure, total, synchronous.
 * See README.md in this folder for the pipeline, the vocabulary and which file holds which stage.
 */
export { type CapabilityIndex, capabilitiesOf, checkRequirement, indexCapabilities } from "./capabilities.js";
export {
  decide,
  decideUnknown,
  type ParsedInput,
  parsePlacementInput,
  parsePlacementInputWithParts,
  parsePlacementInputWithViews,
  type ValidatedParts,
} from "./decide.js";
export { type ExplainAttempt, type ExplainOptions, points, renderExplain, renderPlacementError } from "./explain.js";
export { type HistoryReads, historyReads, isRead, placedSummary, withInFlight } from "./history.js";
export {
  attrValueSchema,
  type Capability,
  type ClusterInstance,
  type ClusterState,
  capabilitySchema,
  clusterInstanceSchema,
  clusterStateSchema,
  DEFAULT_WEIGHTS,
  type Liveness,
  type NodeFacts,
  type NodeRoute,
  type NodeView,
  nodeFactsSchema,
  nodeIdSchema,
  nodeViewSchema,
  type Os,
  type PlacedTotal,
  type PlacementInput,
  type PlacementInputDraft,
  type PlacementRequest,
  type PlaceVerdict,
  type Predicate,
  type Provenance,
  placedTotalSchema,
  placementInputSchema,
  placementRequestSchema,
  placeVerdictSchema,
  predicateSchema,
  type Requirement,
  requirementSchema,
  routeSchema,
  type ScoringWeights,
  scoringWeightsSchema,
  type Variant,
  variantSchema,
  type WorkloadSpec,
  workloadSpecSchema,
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
