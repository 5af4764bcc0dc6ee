/**
 * The mesh controller (spec/mesh.md §3, §9, §10, §12, §14): targets and trust, dispatch of engine decisions, lost-answer
 * reconciliation, settling and adoption, instance verbs, and the SQLite store beneath them. See README.md.
 */
export { CONTROLLER_DB, ControllerError, type ControllerOptions, MeshController } from "./controller.js";
export {
  type Attempt,
  type AttemptOutcome,
  NEXT_CANDIDATE,
  PlaceError,
  type PlaceExtras,
  type PlaceReport,
  STOPPED,
  type Timeouts,
} from "./dispatch.js";
export type { AgentSpecSource } from "./move-records.js";
export { type PlaceOrder, type PlaceOrderInput, PlaceOrderSchema } from "./order.js";
export { PEERS_FILE, type PeerEntry } from "./policy.js";
export type { PlacePreview } from "./preview.js";
export type { SettleReport } from "./settle.js";
export type { DecisionId, PlacementRecord, UnsettledDecision } from "./store.js";
export type { AddResult, TargetInfo } from "./targets.js";
export { VERBS, type Verb, type VerbOptions, type VerbResult } from "./verbs.js";
