/**
 * One type for "where an agent runs" (issue 14.1): the mesh and Kubernetes each implement `AgentTarget` in their own
 * folder (`targets/mesh/`, `targets/kubernetes/`), the way Hono keeps one folder per adapter behind one type. The
 * use cases (`deploy.ts`, `status.ts`, `verbs.ts`: stop, logs, purge) pick the target by the spec's `spec.target` and never
 * ask which one it is; the CLI and the server only translate flags or HTTP into these calls and the answers (and the
 * failures below) into output, exit codes and status codes.
 *
 * Expected failures are values (`Outcome`), each with a kind the edges map and a message that names what happened
 * and what to do, written once for both edges.
 */
import type { AgentDeployResult, DeployTarget } from "../core/agents/deploy-event.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import type { VerbResult } from "../mesh/controller/index.js";
import type { AgentRecord } from "./registry.js";
import type { LoadedSpec } from "./spec-file.js";
import type { AgentState } from "./state.js";
import type { DeployPlan } from "../core/agents/deploy-plan.js";
import type { Result } from "../kit/result.js";

export type AgentFailure =
  /** The spec failed its schema: one line per field, in the spec's own names (core/agents/spec-issues.ts). */
  | { readonly kind: "spec_invalid"; readonly message: string }
  /** The spec cannot run as written (package, nsec, provider_config): fix the named field. */
  | { readonly kind: "spec_unusable"; readonly message: string; readonly usage: boolean }
  | { readonly kind: "unknown_agent"; readonly agent: string; readonly message: string }
  /** `agent replace NAME` given a spec of another agent; `from` names where it came from (a file, `body.spec`). */
  | { readonly kind: "agent_mismatch"; readonly agent: string; readonly message: string }
  /** The registry's copy of the spec no longer parses (a spec written by another berth version). */
  | { readonly kind: "spec_unreadable"; readonly agent: string; readonly message: string }
  | { readonly kind: "settings_invalid"; readonly message: string }
  | { readonly kind: "audit_unavailable"; readonly message: string }
  | { readonly kind: "cluster_not_configured"; readonly message: string }
  | { readonly kind: "cluster_unreachable"; readonly message: string }
  /** A verb on the agent found nothing to act on. */
  | { readonly kind: "no_instance"; readonly agent: string; readonly verb: string; readonly message: string }
  /** The node did not carry out a verb on the agent's instance (refused, unreachable, indeterminate, error). */
  | {
      readonly kind: "instance_verb_failed";
      readonly agent: string;
      readonly instance: string;
      readonly verb: string;
      readonly result: Exclude<VerbResult, { kind: "ok" }>;
      readonly message: string;
    }
  | { readonly kind: "pod_absent"; readonly agent: string; readonly pod: string; readonly message: string }
  | { readonly kind: "log_unreadable"; readonly agent: string; readonly pod: string; readonly message: string };

/** A use case's answer: the kit's one result type (src/kit/result.ts) with the failures above; `ok()`/`err()` build it. */
export type Outcome<T> = Result<T, AgentFailure>;

/** The value, or the edge's own error for the failure (a `CliError`, an `ApiError`) thrown. */
export function unwrap<T>(o: Outcome<T>, raise: (f: AgentFailure) => Error): T {
  if (!o.ok) throw raise(o.error);
  return o.value;
}

/** An edge's translation of every failure kind, checked complete by the compiler. */
export type FailureMap<E> = { readonly [K in AgentFailure["kind"]]: (f: Extract<AgentFailure, { kind: K }>) => E };

export function translateFailure<E>(map: FailureMap<E>, f: AgentFailure): E {
  return (map[f.kind] as (f: AgentFailure) => E)(f);
}

/** A deploy's answer: the result, the intent remembered with the spec, and the `agent.deploy` event that chains it. */
export interface DeployDone {
  readonly result: AgentDeployResult;
  readonly intent: string;
  readonly event: { readonly chain: "controller" | "k8s"; readonly seq: number; readonly hash: string };
}

export interface StopAnswer {
  readonly ok: boolean;
  readonly agent: string;
  readonly instance: string | null;
  readonly message: string;
  /** The node's own answer (mesh). */
  readonly result?: JsonObject;
  /** Issue 36 (mesh): the instance had stopped before (the node said `already`); nothing was stopped now. */
  readonly already_stopped?: true;
}

export interface LogsAnswer {
  readonly agent: string;
  /** The mesh instance id or the pod name. */
  readonly instance: string;
  readonly stdout: string;
  readonly stderr: string;
}

/** An agent the registry knows, with its spec as last deployed. */
export interface KnownAgent {
  readonly record: AgentRecord;
  readonly loaded: LoadedSpec;
}

export interface DeployOptions {
  readonly userReplace: boolean;
  /** `berth serve`'s keep loop (issue 16): act only on the instance it judged, and say the loop acted. */
  readonly loop?: { readonly onlyReplacing: { readonly uid: string }; readonly by: JsonObject };
}

export interface AgentTarget {
  readonly kind: DeployTarget;
  /** `berth deploy`; with `userReplace`, `berth agent replace`. The outcome is chained on this target's chain. */
  deploy(loaded: LoadedSpec, opts: DeployOptions): Promise<Outcome<DeployDone>>;
  /**
   * Issue 36, `berth deploy --dry-run`: what `deploy` would do now (the row, the action, what it would replace, where it
   * would place), from the same observation; nothing is chained, created, deleted, placed or unloaded.
   */
  plan(loaded: LoadedSpec): Promise<Outcome<DeployPlan>>;
  /** What the classifier sees now for each agent (all of this target), and what a deploy would do; reads only. */
  states(agents: readonly KnownAgent[]): Promise<AgentState[]>;
  stop(agent: KnownAgent, opts: { readonly wait: boolean }): Promise<Outcome<StopAnswer>>;
  /**
   * Issue 15, `berth agent purge NAME`: unloads the agent's instance and removes its workspace with it. Only the mesh
   * has one to remove (a Kubernetes agent's persistent claim is never deleted by berth); absent = not offered.
   */
  purge?(agent: KnownAgent): Promise<Outcome<StopAnswer>>;
  /** `onChunk` receives the log as it is read, where the target streams it (Kubernetes). */
  logs(
    agent: KnownAgent,
    opts: { readonly tailBytes: number; readonly onChunk?: (chunk: string) => void },
  ): Promise<Outcome<LogsAnswer>>;
}

/** A person watching (the CLI on a terminal); the server has none. */
export interface Watch {
  /** Runs a wait that has no conditions to show (a spinner on a terminal). */
  waiting<T>(what: string, fn: () => Promise<T>): Promise<T>;
  /** Shows the latest condition of a longer wait until `stop`. */
  conditions(): { update(line: string): void; stop(): void };
}
