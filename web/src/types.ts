/**
 * The shapes the dashboard reads from berth's HTTP API (`/api/v1`), written by hand from the API contract of issue 8
 * and berth's library records (snake_case, field for field). Only what the views read is typed strictly; the rest
 * of a record is kept as it came so the views can show it without the dashboard dropping fields.
 */

export type Liveness = "alive" | "suspect" | "dead" | "unknown";
export type Tier = "discovered" | "paired" | "pinned";

/** TargetInfo (src/mesh/controller/targets.ts), plus the facts summary the server adds. */
export interface NodeInfo {
  readonly addr: string;
  readonly node_id: string | null;
  readonly key: string | null;
  readonly name: string | null;
  readonly tier: Tier;
  readonly tier_source: string;
  readonly liveness: Liveness;
  readonly boot_id: string | null;
  readonly learned_ms: number | null;
  readonly last_ok_ms: number | null;
  readonly facts_expire_at_ms: number | null;
  readonly error: string | null;
  readonly facts?: Readonly<Record<string, unknown>> | null;
}

export interface PackageInfo {
  readonly package_id: string;
  readonly name: string;
  readonly version: string;
  readonly kind: string;
  readonly path?: string | null;
}

/** PlacementRecord (src/mesh/controller/store.ts). */
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

/** An instance as `GET /instances` lists it: its placement record and the state its node last reported. */
export interface InstanceInfo extends Partial<PlacementRecord> {
  readonly instance_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly state?: string | null;
}

export interface Rejection {
  readonly constraint: string;
  readonly detail: string;
}

export interface ScoreBreakdown {
  readonly execution_centi: number;
  readonly locality_centi: number;
  readonly accel_fit_centi: number;
  readonly perf_centi: number;
  readonly load_centi: number;
  readonly stickiness_centi: number;
}

/** NodeReport (src/core/placement/outputs.ts): one candidate of a decision. */
export interface CandidateReport {
  readonly node_id: string;
  readonly name: string | null;
  readonly eligible: boolean;
  readonly rejections: readonly Rejection[];
  readonly variant: string | null;
  readonly route: string | null;
  readonly execution: string | null;
  readonly score: ScoreBreakdown | null;
  readonly total_centi: number | null;
  readonly flags: readonly string[];
}

export interface PlacementDecision {
  readonly name: string;
  readonly kind: string;
  readonly package_id: string;
  readonly allow_emulated: boolean;
  readonly pin: string | null;
  readonly prefer: readonly string[];
  readonly avoid: readonly string[];
  readonly candidates: readonly CandidateReport[];
  readonly placement: { readonly node_id: string; readonly variant: string; readonly total_centi: number } | null;
}

/**
 * Attempt (src/mesh/controller/dispatch.ts) in a PlaceReport; a past decision lists its stored attempt rows, which
 * carry `n` and `state` and may lack the report-only members.
 */
export interface Attempt {
  readonly n?: number;
  readonly node_id: string;
  readonly variant: string;
  readonly state?: string;
  readonly outcome: string | null;
  readonly code?: string | null;
  readonly reason?: string | null;
  readonly next?: string | null;
  readonly instance_id?: string | null;
}

/**
 * PlaceReport (`POST /placements` and its dry run `POST /placements/explain`, whose decision is recorded but nothing
 * is sent) and a past decision (`GET /placements/{decision_id}`, with its state) share these members.
 */
export interface DecisionReport {
  readonly decision: PlacementDecision;
  readonly decision_id: string;
  readonly explain: string;
  readonly attempts: readonly Attempt[];
  readonly placed?: PlacementRecord | null;
  readonly unsettled?: boolean;
  readonly state?: string;
  readonly dry_run?: boolean;
}

export interface UnsettledDecision {
  readonly decision_id: string;
  readonly name: string;
  readonly node_id: string;
  readonly variant: string;
  readonly package_id: string;
  readonly created_ms: number;
}

/** `POST /unsettled/settle`: the SettleReport and what is still unsettled after it. */
export interface SettleOutcome {
  readonly settled: {
    readonly adopted: number;
    readonly settledEmpty: number;
    readonly skipped: ReadonlyArray<{ readonly decision_id: string; readonly reason: string }>;
  };
  readonly unsettled: readonly UnsettledDecision[];
}

/** One agent as `berth agents --json` prints it. */
export interface AgentState {
  readonly name: string;
  readonly target: string;
  readonly state: string;
  readonly row: string | null;
  readonly next: string | null;
  readonly instance: string | null;
  readonly error: string | null;
}

/** ListRow (src/kubernetes/verbs.ts). */
export interface KubernetesAgent {
  readonly name: string;
  readonly namespace: string;
  readonly binding: string;
  readonly startup: string;
  readonly registry: string;
}

export interface KubernetesAgents {
  readonly configured: boolean;
  readonly context: string | null;
  readonly agents: readonly KubernetesAgent[];
  readonly error: string | null;
}

/** One chain the server holds (`GET /audit/chains`); `name` is what `?chain=` takes. */
export interface ChainInfo {
  readonly name: string;
  readonly chain_id: string;
  readonly role: string;
  readonly events: number;
  readonly head: { readonly seq: number; readonly hash: string };
}

/** SealedEvent (src/core/chain/event.ts). */
export interface AuditEvent {
  readonly seq: number;
  readonly chain_id: string;
  readonly ts: number;
  readonly prev_hash: string;
  readonly source: string;
  readonly kind: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly hash: string;
  readonly sig: string;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly chain_id: string | null;
  readonly events: number;
  readonly head: { readonly seq: number; readonly hash: string } | null;
  readonly failure?: { readonly seq?: number; readonly code?: string; readonly detail?: string };
}

/** The order the "place a package" form sends (the fields of PlaceOrderSchema it offers). */
export interface PlaceOrder {
  readonly package: string;
  readonly name: string | null;
  readonly allow_emulated: boolean;
}
