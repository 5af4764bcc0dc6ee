/**
 * One deploy call's context (spec/kubernetes.md §8): its inputs, dependencies and deadline, the state the steps share
 * (what this call created, consecutive read errors, the desired fingerprint), the request timeout rule, the write-ahead
 * audit helpers and the observation the loop reads through. The steps (namespace, preflight GC, create, race loser)
 * and the converge loop in `converge.ts` are functions over this context; none keeps state of its own.
 */
import type { JsonObject } from "../core/crypto/canonical.js";
import { describeApiError } from "../core/kubernetes/api-status.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import type { Action } from "../core/kubernetes/classify.js";
import { latestCondition, POD_GONE, unreadableCondition } from "../core/kubernetes/condition.js";
import type { ProviderConfig } from "../core/kubernetes/config.js";
import type { RunningSeen } from "../core/kubernetes/confirm.js";
import { bindingOf } from "../core/kubernetes/manifests.js";
import type { AgentEnv } from "../core/kubernetes/env.js";
import type { AgentIdentity } from "../core/kubernetes/naming.js";
import type { QuorumPod } from "../core/kubernetes/quorum.js";
import { AuditWriteError, type K8sAudit, type K8sKind } from "./audit.js";
import type { Cluster, ReadResult, RequestOptions } from "./cluster.js";
import type { Clock } from "../kit/clock.js";
import type { Logger } from "../kit/log.js";
import { type Observation, observePod, settlePod } from "./observe.js";
import { type WaitSettings, Waiter } from "./waiter.js";

export const REQUEST_TIMEOUT_MS = 30_000;
export const CONDITION_TIMEOUT_MS = 4_000;
export const MAX_READ_ERRORS = 3;

/**
 * Who runs the call, in every `k8s.*` record: the provider protocol, a person (CLI, API), or `berth serve`'s loop.
 * `"reconcile-loop"` is the keep loop (issue 32's word); the value stays as it is because stored records and chains
 * already hold it.
 */
export type DeployMode = "provider-protocol" | "cli" | "api" | "reconcile-loop";
export type DeployAnswer =
  | { readonly ok: true; readonly agentId: string }
  | { readonly ok: false; readonly error: string };

export interface DeployInputs {
  readonly identity: AgentIdentity;
  readonly config: ProviderConfig;
  /** The validated env; each attempt stamps its own generation into a copy. */
  readonly env: AgentEnv;
}

export interface Progress {
  readonly action: Action["kind"] | "namespace" | "gc" | "create-secret" | "create-pod" | "confirm-start";
  readonly condition?: string;
}

export interface DeployDeps {
  readonly cluster: Cluster;
  readonly clock: Clock;
  readonly audit: K8sAudit;
  readonly log: Logger;
  /** A uniformly random 32-bit value per attempt (the generation). */
  readonly random32: () => number;
  readonly wait: WaitSettings;
  readonly mode: DeployMode;
  readonly version: string;
  readonly onProgress?: (p: Progress) => void;
  /**
   * The keep loop's guard (issue 16): act only while the pod is the one the loop judged — the first observation
   * of the call must be that uid, else the call answers without touching anything (a pod stopped or replaced
   * meanwhile is never re-created by the loop).
   */
  readonly onlyReplacing?: { readonly uid: string };
}

export interface DeployBudget {
  /** Monotonic time at which the call started (process start in provider mode, §8.2). */
  readonly startedAt: number;
  /** Monotonic time the loop must stop at: answer-by − 5 s (provider) or D − 5 s (CLI). */
  readonly loopDeadlineAt: number;
  /** D in whole seconds, as named in K1/K3/K6. */
  readonly deadlineSeconds: number;
}

/** Ends the call with a catalogued answer (internal control flow; never escapes `deploy`). */
export class Answer extends Error {
  constructor(readonly answer: DeployAnswer) {
    super(answer.ok ? "ok" : answer.error);
  }

  static fail(error: string): Answer {
    return new Answer({ ok: false, error });
  }
}

export class DeployCall {
  createdThisCall = false;
  lastAction = "none";
  /** The desired create-intent fingerprint, computed once per call after the preflight steps. */
  desired = "";
  /** Recorded fingerprints equal in meaning to `desired` (the other template version). */
  equivalents: readonly string[] = [];
  /** The running container this call is confirming before it answers success (core/kubernetes/confirm.ts). */
  runningSeen: RunningSeen | null = null;
  readonly ns: string;
  readonly podName: string;
  readonly waiter: Waiter;
  private readErrors = 0;

  constructor(
    readonly inputs: DeployInputs,
    readonly deps: DeployDeps,
    readonly budget: DeployBudget,
  ) {
    this.ns = inputs.config.namespace;
    this.podName = inputs.identity.podName;
    this.waiter = new Waiter(deps.cluster, this.ns, this.podName, deps.clock, deps.wait, budget.loopDeadlineAt);
  }

  close(): void {
    this.waiter.close();
  }

  // ---- time -----------------------------------------------------------------------------------------------------

  private left(): number {
    return this.budget.loopDeadlineAt - this.deps.clock.now();
  }

  /** min(30 s, time left). */
  opts(): RequestOptions {
    return { timeoutMs: Math.max(1, Math.min(REQUEST_TIMEOUT_MS, this.left())) };
  }

  expired(): boolean {
    return this.left() <= 0;
  }

  /**
   * The whole seconds this call has really waited, for K1, K3 and K6 (issue 34): the loop stops before D to leave room
   * for the final read, so naming D ("within 30s" after 26 s) would overstate the wait.
   */
  elapsedSeconds(): number {
    return Math.max(0, Math.floor((this.deps.clock.now() - this.budget.startedAt) / 1000));
  }

  progress(p: Progress): void {
    this.deps.onProgress?.(p);
  }

  // ---- audit ----------------------------------------------------------------------------------------------------

  private common(extra: JsonObject): JsonObject {
    return { ...commonFields(this.deps, this.inputs), fingerprint: this.desired, ...extra };
  }

  /** Write-ahead: no intent record, no mutation (E2). */
  async intent(kind: K8sKind, extra: JsonObject): Promise<string> {
    try {
      return await this.deps.audit.intent(kind, this.common(extra));
    } catch (error) {
      const e = error instanceof AuditWriteError ? error.message : String(error);
      throw Answer.fail(catalogue.E2(e));
    }
  }

  async result(actionId: string, kind: K8sKind, extra: JsonObject): Promise<void> {
    try {
      await this.deps.audit.result(actionId, kind, this.common(extra));
    } catch (error) {
      this.deps.log.error("could not record an audit result", {
        kind,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  // ---- observation ----------------------------------------------------------------------------------------------

  observe(): Promise<Observation> {
    return observePod(this.deps.cluster, this.ns, this.inputs.identity, this.opts());
  }

  settle(r: ReadResult<QuorumPod>): Promise<Observation> {
    return settlePod(this.deps.cluster, this.ns, this.inputs.identity, r, this.opts());
  }

  /** Counts consecutive read errors: retried at the next wake; the third answers H5 (or H1). */
  async onReadError(obs: { message: string }): Promise<void> {
    this.readErrors++;
    this.deps.log.warn("read failed; retrying at the next wake", { pod: this.podName, attempt: this.readErrors });
    if (this.readErrors >= MAX_READ_ERRORS) throw Answer.fail(obs.message);
    await this.waiter.wait();
  }

  readSucceeded(): void {
    this.readErrors = 0;
  }

  /**
   * The next settled observation: `carried` when the previous step already read one, else a fresh read. Read errors
   * wait for the next wake (the third answers); a loop past its deadline answers `expiry(condition)` (K1, K6).
   */
  async next(
    carried: Observation | undefined,
    expiry: (condition: string) => string,
  ): Promise<Exclude<Observation, { kind: "error" }>> {
    let obs = carried;
    for (;;) {
      if (this.expired()) throw Answer.fail(expiry(await this.condition()));
      obs ??= await this.observe();
      if (obs.kind !== "error") {
        this.readSucceeded();
        return obs;
      }
      await this.onReadError(obs);
      obs = undefined;
    }
  }

  /** §10.3: a fresh quorum GET when answering, with a 4 s timeout. */
  async condition(): Promise<string> {
    const r = await this.deps.cluster.getPod(this.ns, this.podName, { timeoutMs: CONDITION_TIMEOUT_MS });
    if (r.kind === "found") return latestCondition(r.object);
    if (r.kind === "absent") return POD_GONE;
    return unreadableCondition(describeApiError(r.error));
  }
}

/** The fields every Kubernetes audit record of a deploy carries (spec/kubernetes.md §12). */
export function commonFields(
  deps: Pick<DeployDeps, "cluster" | "mode" | "version">,
  inputs: Pick<DeployInputs, "identity" | "config">,
): JsonObject {
  return {
    agent_pubkey: inputs.identity.pubkey,
    namespace: inputs.config.namespace,
    context: deps.cluster.identity.context,
    server: deps.cluster.identity.server,
    binding_version: bindingOf(inputs.config),
    mode: deps.mode,
    berth_version: deps.version,
  };
}
