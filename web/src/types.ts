/**
 * The shapes the dashboard reads from berth's HTTP API (`/api/v1`), named after what the views call them. Every one is
 * taken from the generated `openapi.ts` (docs/api/openapi.json, by `node scripts/gen-web-types.mjs`), so a change to a
 * route's schema reaches the dashboard's typecheck instead of drifting from a hand copy (issue 14.3).
 */
import type { operations } from "./openapi";

type Operation = keyof operations;
type Responses<Op extends Operation> = operations[Op]["responses"];
type JsonOf<R> = R extends { readonly content: { readonly "application/json": infer Body } } ? Body : never;

/** The JSON body of an operation's success answer (200, or 201 for a create). */
export type Answer<Op extends Operation> =
  Responses<Op> extends { readonly 200: infer R }
    ? JsonOf<R>
    : Responses<Op> extends { readonly 201: infer R }
      ? JsonOf<R>
      : never;

/** The JSON body an operation takes. */
export type Body<Op extends Operation> = operations[Op] extends {
  readonly requestBody: { readonly content: { readonly "application/json": infer B } };
}
  ? B
  : operations[Op] extends { readonly requestBody?: { readonly content: { readonly "application/json": infer B } } }
    ? B
    : never;

export type NodeInfo = Answer<"listNodes">["nodes"][number];
export type Liveness = NodeInfo["liveness"];
export type Tier = NodeInfo["tier"];
export type PackageInfo = Answer<"listPackages">["packages"][number];
export type PlacementRecord = Answer<"listPlacements">["placements"][number];
export type InstanceInfo = Answer<"listInstances">["instances"][number];
/** A placement taken off its node (issue 16) whose old copy berth still stops or unloads when the node answers. */
export type MovedInfo = Answer<"listMoved">["moved"][number];
/** A fresh decision: `POST /placements` and its dry run `POST /placements/explain` answer alike. */
export type PlaceReport = Answer<"place"> | Answer<"explain">;
/** A past decision (`GET /placements/{decision_id}`), with its state; the explain view reads either. */
export type PastDecision = Answer<"getPlacement">;
export type DecisionReport = PlaceReport | PastDecision;
export type PlacementDecision = DecisionReport["decision"];
export type CandidateReport = PlacementDecision["candidates"][number];
export type ScoreBreakdown = NonNullable<CandidateReport["score"]>;
export type Attempt = DecisionReport["attempts"][number];
export type UnsettledDecision = Answer<"listUnsettled">["unsettled"][number];
export type SettleOutcome = Answer<"settle">;
export type AgentState = Answer<"listAgents">["agents"][number];
/** A deploy's answer; the dashboard never asks for the plan (`?dryRun=true`, issue 36), so that member is left out. */
export type DeployOutcome = Exclude<Answer<"deployAgent">, { readonly dry_run: true }>;
export type AgentLogs = Answer<"agentLogs">;
export type VerbResult = Answer<"getInstance">;
export type KubernetesAgents = Answer<"listK8sAgents">;
export type KubernetesAgent = KubernetesAgents["agents"][number];
export type ChainInfo = Answer<"listChains">["chains"][number];
export type AuditEvents = Answer<"auditEvents">;
export type AuditEvent = AuditEvents["events"][number];
export type VerifyResult = Answer<"auditVerify">;
/** The order the "place a package" form sends (the members of the place body it offers). */
export type PlaceOrder = Pick<Body<"place">, "package" | "name" | "allow_emulated">;
