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
export { type HistoryReads, historyReads, isRead, placedSummary } from "./history.js";
export { type ExplainAttempt, type ExplainOptions, points, renderExplain, renderPlacementError } from "./explain.js";
export {
  attrValueSchema,
  type Capability,
  capabilitySchema,
  clusterInstanceSchema,
  clusterStateSchema,
  type ClusterInstance,
  type ClusterState,
  type PlacedTotal,
  placedTotalSchema,
  DEFAULT_WEIGHTS,
  type PlaceVerdict,
  type Liveness,
  placeVerdictSchema,
  type NodeFacts,
  type NodeRoute,
  nodeFactsSchema,
  nodeIdSchema,
  type NodeView,
  nodeViewSchema,
  type Os,
  type PlacementInput,
  type PlacementInputDraft,
  type PlacementRequest,
  placementInputSchema,
  placementRequestSchema,
  type Predicate,
  predicateSchema,
  type Provenance,
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
