/**
 * What the controller verbs (`berth nodes`, `place`, `instances`, `instance`, `unsettled`, `deploy`, `agents`,
 * `agent`) ask of a controller, whichever way it is reached: the home's files on this machine (local.ts) or a
 * `berth serve` over its API (remote.ts). Both answer with the same documents and fail with the same
 * CliError kinds and exit statuses, so a verb prints the same whichever it got (test/cli/remote.test.ts runs them
 * side by side). Only types here, which both implementations import and neither owns; `openBackend` (index.ts)
 * loads one of them only when a verb runs.
 */
import type { AgentState, HistoryAnswer, LogsAnswer } from "../../agents/index.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Tier } from "../../core/identity/tier.js";
import type { MovedRecord } from "../../mesh/controller/move-records.js";
import type {
  PlacementRecord,
  PlaceOrderInput,
  PlaceReport,
  SettleReport,
  TargetInfo,
  UnsettledDecision,
  Verb,
  VerbResult,
} from "../../mesh/controller/index.js";
import type { TargetFlags } from "../remote/target.js";
import type { DeployPlan } from "../../core/agents/deploy-plan.js";
import type { Result } from "../../kit/result.js";

/**
 * A target with the summary of its last signed facts (null before a describe) and the operator's marks on it
 * (issue 16: `berth node cordon|drain|forget`), as `GET /nodes` lists it.
 */
export type TargetRow = TargetInfo & {
  readonly facts: JsonObject | null;
  readonly cordoned: boolean;
  readonly cordon_reason: string | null;
  readonly forgotten_ms: number | null;
  readonly forget_reason: string | null;
};

/** A placement with what its node says of it now. */
export type InstanceRow = PlacementRecord & {
  readonly state: string;
  readonly status: JsonObject | null;
  /** Issue 35: a stored row only: when its node last reported `state` (null: never); absent from a live answer. */
  readonly seen_ms?: number | null;
};

/** The `agent.deploy` payload (core/agents/deploy-event.ts), as `berth deploy --json` prints it. */
export type DeployDocument = JsonObject & {
  readonly ok: boolean;
  readonly message: string;
  readonly target: string;
  readonly outcome: string;
  readonly rounds: ReadonlyArray<{ readonly row?: unknown; readonly action?: unknown }>;
};

/** An agent spec as the CLI read it: where from (a file, or `-` for stdin) and its text. */
export interface SpecInput {
  /** Absolute path of the file; for stdin, a file name in the current directory (relative paths resolve there). */
  readonly path: string;
  readonly text: string;
}

export interface StopDocument {
  readonly ok: boolean;
  readonly agent: string;
  readonly instance: string | null;
  readonly message: string;
  /** Issue 36: the instance had stopped before this stop; absent otherwise. */
  readonly already_stopped?: true;
}

export interface ControllerBackend {
  /** `local` or how the server was found (a context, BERTH_ADDR, the home's running serve). */
  readonly where: string;
  /** `selector`: a `-l` the caller already judged well-formed (issue 36). */
  targets(refresh: boolean, selector?: string): Promise<TargetRow[]>;
  addTarget(addr: string, tier: Tier | null, key: string | null): Promise<Result<TargetRow>>;
  /** false: no such node. */
  setTier(ref: string, tier: Tier): Promise<boolean>;
  /** Throws a CliError (exit 1) naming the refusal and its constraints. */
  place(order: PlaceOrderInput & { readonly dry_run: boolean }): Promise<PlaceReport>;
  /** The placements with their nodes' states, and (issue 16) those taken off their node whose old copy is still settled. */
  /**
   * `refresh`: ask every node now; else (issue 35) the placements as stored, each state as last seen (a server answers
   * live). `selector` (issue 36): only the instances of agents whose metadata.labels match (judged by the CLI first).
   */
  instances(
    refresh: boolean,
    selector?: string,
  ): Promise<{ readonly placements: InstanceRow[]; readonly moved: MovedRecord[] }>;
  /** `purge` (unload): also remove the name's workspace on the node (issue 15). */
  instance(
    verb: Verb,
    id: string,
    opts: { readonly grace_ms: number; readonly tail_bytes: number; readonly purge?: boolean },
  ): Promise<VerbResult>;
  unsettled(settle: boolean): Promise<{ settled: SettleReport | null; unsettled: UnsettledDecision[] }>;
  /**
   * `refresh`: ask every target now; else (issue 35) the mesh agents as the store last saw them (a server answers live).
   * `selector`: issue 36's `-l` (the text as given; both sides parse it the same way).
   */
  agents(refresh: boolean, selector?: string): Promise<AgentState[]>;
  deploy(spec: SpecInput): Promise<DeployDocument>;
  /** Issue 36, `berth deploy --dry-run`: what the deploy would do; nothing is done or chained. */
  planDeploy(spec: SpecInput): Promise<DeployPlan>;
  agentStatus(name: string): Promise<AgentState>;
  agentLogs(name: string, tailBytes: number, onChunk?: (chunk: string) => void): Promise<LogsAnswer>;
  agentStop(name: string, wait: boolean): Promise<StopDocument>;
  agentReplace(name: string, spec: SpecInput | undefined): Promise<DeployDocument>;
  /** Issue 15: unloads the agent's instance and removes its workspace (mesh). */
  agentPurge(name: string): Promise<StopDocument>;
  /** Issue 36: the spec revisions deployed (from the chain) with their diffs. */
  agentHistory(name: string): Promise<HistoryAnswer>;
  /** Issue 36: a deploy of an earlier revision (default: the previous); the document says which (`rollback_of`). */
  agentRollback(name: string, revision: number | undefined): Promise<DeployDocument>;
  /** Issue 33: the explicit start that ends a stop (a deploy of the spec last deployed). */
  agentStart(name: string): Promise<DeployDocument>;
  /** Issue 33: removes the agent's record once nothing of it runs; ok false with the reason otherwise. */
  agentDelete(name: string): Promise<{ ok: boolean; agent: string; message: string }>;
  /** Issue 16: `berth node cordon|uncordon|forget|drain`; the document node-admin.ts answers. Unknown node: exit 1. */
  nodeAdmin(verb: NodeAdminVerb, ref: string, reason: string): Promise<JsonObject>;
}

export type NodeAdminVerb = "cordon" | "uncordon" | "forget" | "drain" | "remove";

export interface BackendFlags extends TargetFlags {
  readonly keyFile?: string;
  /** `--database` (issue 20): the controller's store, for a local backend. */
  readonly database?: string;
  /** kubeconfig context for Kubernetes agents (local only; a server uses its own kubeconfig). */
  readonly kubeContext?: string;
  readonly json?: boolean;
}
