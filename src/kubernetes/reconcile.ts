/**
 * The reconcile loop (spec/kubernetes.md §8): one deploy call for one agent, bounded by a deadline. Level-triggered and
 * idempotent — every decision is taken on a fresh quorum GET, classified by the pure core, and acted on once; the
 * same call made twice against a started pod does nothing the second time.
 *
 *   fast path ─► namespace ─► preflight GC ─► fingerprint ─► loop: observe ─► classify ─► act ─► wait ─┐
 *                                                                 ▲────────────────────────────────────┘
 *
 * Structural guarantees kept here: a foreign pod is refused before any write; a delete only ever carries the fence of
 * the observation that classified it; at most one Secret create and one Pod create per call; a read error is never
 * absence; expiry never triggers cleanup.
 */
import type { JsonObject } from "../core/crypto/canonical.js";
import { describeApiError } from "../core/kubernetes/api-status.js";
import { classifiedDelete, type DeleteAuthority, GC_DELETE } from "../core/kubernetes/authority.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { type Action, classify, type DeleteAction } from "../core/kubernetes/classify.js";
import { latestCondition, POD_GONE, unreadableCondition } from "../core/kubernetes/condition.js";
import type { ProviderConfig } from "../core/kubernetes/config.js";
import { decodeStartup } from "../core/kubernetes/decode.js";
import { type AgentEnv, withGeneration } from "../core/kubernetes/env.js";
import { planGc } from "../core/kubernetes/gc.js";
import { fingerprint } from "../core/kubernetes/intent.js";
import { bindingOf, claimManifest, namespaceManifest, podManifest, secretManifest } from "../core/kubernetes/manifests.js";
import { type AgentIdentity, claimNameFor, generationFrom, labelsFor, secretNameFor, selectorFor } from "../core/kubernetes/naming.js";
import { type PodObject, secretRefsOf } from "../core/kubernetes/objects.js";
import { pullFailureMessage } from "../core/kubernetes/pull-failure.js";
import type { QuorumPod } from "../core/kubernetes/quorum.js";
import { claimProblem, type Fence, type VerifiedPod, verifyPod } from "../core/kubernetes/verify.js";
import { AuditWriteError, type K8sAudit, type K8sKind } from "./audit.js";
import type { Cluster, ObjectPrecondition, ReadResult, RequestOptions } from "./cluster.js";
import type { Clock } from "./clock.js";
import type { Logger } from "./log.js";
import { type WaitSettings, Waiter } from "./waiter.js";

export const REQUEST_TIMEOUT_MS = 30_000;
export const CONDITION_TIMEOUT_MS = 4_000;
export const MAX_READ_ERRORS = 3;

export type DeployMode = "provider-protocol" | "cli" | "api";
export type DeployAnswer = { readonly ok: true; readonly agentId: string } | { readonly ok: false; readonly error: string };

export interface DeployInputs {
  readonly identity: AgentIdentity;
  readonly config: ProviderConfig;
  /** The validated env; each attempt stamps its own generation into a copy. */
  readonly env: AgentEnv;
}

export interface Progress {
  readonly action: Action["kind"] | "namespace" | "gc" | "create-secret" | "create-pod";
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
}

export interface DeployBudget {
  /** Monotonic time at which the call started (process start in provider mode, §8.2). */
  readonly startedAt: number;
  /** Monotonic time the loop must stop at: answer-by − 5 s (provider) or D − 5 s (CLI). */
  readonly loopDeadlineAt: number;
  /** D in whole seconds, as named in K1/K3/K6. */
  readonly deadlineSeconds: number;
}

export interface DeployReport {
  readonly answer: DeployAnswer;
  readonly createdThisCall: boolean;
  readonly lastAction: string;
  readonly requests: number;
  readonly elapsedMs: number;
}

type Observation =
  | { kind: "absent" }
  | { kind: "foreign"; raw: QuorumPod }
  | { kind: "verified"; pod: VerifiedPod; raw: QuorumPod }
  | { kind: "error"; message: string };

/** Ends the call with a catalogued answer (internal control flow; never escapes `deploy`). */
class Answer extends Error {
  constructor(readonly answer: DeployAnswer) {
    super(answer.ok ? "ok" : answer.error);
  }
}

const fail = (error: string): Answer => new Answer({ ok: false, error });

/**
 * One deploy call. Catalogued failures become `{ok:false}` answers; an exception escaping this function is a bug.
 */
export async function deploy(inputs: DeployInputs, deps: DeployDeps, budget: DeployBudget): Promise<DeployReport> {
  const call = new DeployCall(inputs, deps, budget);
  const requestsBefore = deps.cluster.requestCount;
  let answer: DeployAnswer;
  try {
    answer = await call.run();
  } catch (error) {
    if (!(error instanceof Answer)) throw error;
    answer = error.answer;
  } finally {
    call.close();
  }
  const report: DeployReport = {
    answer,
    createdThisCall: call.createdThisCall,
    lastAction: call.lastAction,
    requests: deps.cluster.requestCount - requestsBefore,
    elapsedMs: Math.round(deps.clock.now() - budget.startedAt),
  };
  recordOutcome(deps, inputs, report);
  return report;
}

function recordOutcome(deps: DeployDeps, inputs: DeployInputs, report: DeployReport): void {
  try {
    deps.audit.record("k8s.deploy.outcome", {
      ...commonFields(deps, inputs),
      ok: report.answer.ok,
      ...(report.answer.ok ? { agent_id: report.answer.agentId } : { error: report.answer.error }),
      created_this_call: report.createdThisCall,
      last_action: report.lastAction,
      elapsed_ms: report.elapsedMs,
      api_requests: report.requests,
    });
  } catch (error) {
    deps.log.error("could not record the deploy outcome", { error: error instanceof Error ? error.message : String(error) });
  }
}

export function commonFields(deps: Pick<DeployDeps, "cluster" | "mode" | "version">, inputs: Pick<DeployInputs, "identity" | "config">): JsonObject {
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

class DeployCall {
  createdThisCall = false;
  lastAction = "none";
  private readonly ns: string;
  private readonly podName: string;
  private readonly waiter: Waiter;
  private readErrors = 0;
  private desired = "";
  private generation = "";

  constructor(
    private readonly inputs: DeployInputs,
    private readonly deps: DeployDeps,
    private readonly budget: DeployBudget,
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
  private opts(): RequestOptions {
    return { timeoutMs: Math.max(1, Math.min(REQUEST_TIMEOUT_MS, this.left())) };
  }

  private expired(): boolean {
    return this.left() <= 0;
  }

  private progress(p: Progress): void {
    this.deps.onProgress?.(p);
  }

  // ---- audit ----------------------------------------------------------------------------------------------------

  private common(extra: JsonObject): JsonObject {
    return { ...commonFields(this.deps, this.inputs), fingerprint: this.desired, ...extra };
  }

  /** Write-ahead: no intent record, no mutation (E2). */
  private intent(kind: K8sKind, extra: JsonObject): string {
    try {
      return this.deps.audit.intent(kind, this.common(extra));
    } catch (error) {
      const e = error instanceof AuditWriteError ? error.message : String(error);
      throw fail(catalogue.E2(e));
    }
  }

  private result(actionId: string, kind: K8sKind, extra: JsonObject): void {
    try {
      this.deps.audit.result(actionId, kind, this.common(extra));
    } catch (error) {
      this.deps.log.error("could not record an audit result", { kind, error: error instanceof Error ? error.message : String(error) });
    }
  }

  // ---- observation ----------------------------------------------------------------------------------------------

  /** Quorum GET → verify → settle (the Secret read of §6 row 6 only for a pod that is ours). */
  private async observe(): Promise<Observation> {
    const r = await this.deps.cluster.getPod(this.ns, this.podName, this.opts());
    return this.settle(r);
  }

  private async settle(r: ReadResult<QuorumPod>): Promise<Observation> {
    if (r.kind === "error") return { kind: "error", message: catalogue.H5(this.podName, describeApiError(r.error)) };
    if (r.kind === "absent") return { kind: "absent" };
    const raw = r.object;
    if (verifyPod(raw, this.inputs.identity, { kind: "recoverable" }).kind === "foreign") return { kind: "foreign", raw };
    let decoding = decodeStartup(raw);
    if (decoding.kind === "needs-secret") {
      const s = await this.deps.cluster.getSecret(this.ns, decoding.secretName, this.opts());
      if (s.kind === "error") return { kind: "error", message: catalogue.H1(decoding.secretName, describeApiError(s.error)) };
      decoding = decodeStartup(raw, s.kind === "found" ? "present" : "absent");
    }
    if (decoding.kind !== "decided") throw new Error("unreachable: decoding needs a second Secret read");
    const v = verifyPod(raw, this.inputs.identity, decoding.startup);
    if (v.kind !== "verified") return { kind: "foreign", raw };
    return { kind: "verified", pod: v.pod, raw };
  }

  /** Counts consecutive read errors: retried at the next wake; the third answers H5 (or H1). */
  private async onReadError(obs: { message: string }): Promise<void> {
    this.readErrors++;
    this.deps.log.warn("read failed; retrying at the next wake", { pod: this.podName, attempt: this.readErrors });
    if (this.readErrors >= MAX_READ_ERRORS) throw fail(obs.message);
    await this.waiter.wait();
  }

  /** §10.3: a fresh quorum GET when answering, with a 4 s timeout. */
  private async condition(): Promise<string> {
    const r = await this.deps.cluster.getPod(this.ns, this.podName, { timeoutMs: CONDITION_TIMEOUT_MS });
    if (r.kind === "found") return latestCondition(r.object);
    if (r.kind === "absent") return POD_GONE;
    return unreadableCondition(describeApiError(r.error));
  }

  // ---- the steps ------------------------------------------------------------------------------------------------

  async run(): Promise<DeployAnswer> {
    // Step 1, fast path: a started pod of ours costs one request and no mutation.
    const fast = await this.observe();
    if (fast.kind === "verified" && !fast.pod.deletionMarked && fast.pod.startup.kind === "started") {
      this.lastAction = "no-op";
      return { ok: true, agentId: fast.pod.name };
    }
    // Step 2: namespace; failure ends the call with nothing written.
    this.progress({ action: "namespace" });
    await this.ensureNamespace();
    // Step 3: preflight GC is hygiene: its failures are logged and never fail the call.
    this.progress({ action: "gc" });
    try {
      await this.preflightGc();
    } catch (error) {
      const e = error instanceof Answer ? error.answer : error;
      this.deps.log.warn(`gc: preflight pass skipped: ${e instanceof Error ? e.message : JSON.stringify(e)}`);
    }
    // Step 4: the desired fingerprint, once per call.
    this.desired = fingerprint(this.inputs.config, Object.keys(this.inputs.env));
    return this.loop();
  }

  private async loop(): Promise<DeployAnswer> {
    let carried: Observation | undefined;
    for (;;) {
      if (this.expired()) throw fail(catalogue.K1(this.budget.deadlineSeconds, this.podName, await this.condition()));
      const obs = carried ?? (await this.observe());
      carried = undefined;
      if (obs.kind === "error") {
        await this.onReadError(obs);
        continue;
      }
      this.readErrors = 0;
      this.waiter.observed(obs.kind === "absent" ? undefined : (obs.raw.metadata.resourceVersion ?? undefined));
      // A foreign pod on our name is refused before any write (P-15).
      if (obs.kind === "foreign") throw fail(catalogue.K5(this.podName));
      const action = classify(obs.kind === "verified" ? obs.pod : null, this.desired);
      this.lastAction = action.kind;
      this.progress({ action: action.kind, ...(obs.kind === "verified" ? { condition: latestCondition(obs.raw) } : {}) });
      switch (action.kind) {
        case "no-op":
          // The only success edge.
          return { ok: true, agentId: action.agentId };
        case "observe":
          await this.waiter.wait();
          break;
        case "report":
          throw fail(catalogue.K2(this.podName, pullFailureMessage(action.failure, this.inputs.config.image)));
        case "await-disappearance":
          carried = await this.awaitDisappearance(action.uid);
          break;
        case "delete": {
          if (this.createdThisCall) {
            // One attempt per call: our own pod did not stay running; an immediate exit recurs until fixed.
            throw fail(catalogue.K4(this.podName, obs.kind === "verified" ? latestCondition(obs.raw) : POD_GONE));
          }
          const outcome = await this.fencedDelete(action);
          if (outcome === "precondition-failed") {
            // The object changed since the read: re-classify on a fresh read, never retry with a newer fence.
            await this.waiter.pause();
            break;
          }
          carried = await this.awaitDisappearance(action.fence.uid);
          break;
        }
        case "create": {
          if (this.createdThisCall) throw fail(catalogue.K4(this.podName, POD_GONE));
          const created = await this.createPath();
          if (created.kind === "answer") return created.answer;
          this.createdThisCall = true;
          this.waiter.observed(created.resourceVersion);
          await this.waiter.wait();
          break;
        }
        default: {
          const never: never = action;
          throw new Error(`unreachable action ${JSON.stringify(never)}`);
        }
      }
    }
  }

  // ---- §12 namespace --------------------------------------------------------------------------------------------

  private async ensureNamespace(): Promise<void> {
    const ns = this.ns;
    const got = await this.deps.cluster.getNamespace(ns, this.opts());
    if (got.kind === "found") return;
    // Any error, 403 included, is G1: only the create earns the kubectl hint (P-10).
    if (got.kind === "error") throw fail(catalogue.G1(ns, describeApiError(got.error)));
    const actionId = this.intent("k8s.namespace.create", { object: ns, fence: { kind: "absent" } });
    const created = await this.deps.cluster.createNamespace(namespaceManifest(ns), this.opts());
    const outcome = created.kind === "created" ? "Created" : created.kind === "already-exists" ? "AlreadyExists" : "error";
    this.result(actionId, "k8s.namespace.create", { object: ns, outcome });
    if (created.kind !== "error") return;
    if (created.error.kind === "status" && created.error.reason === "Forbidden") throw fail(catalogue.G2(ns));
    throw fail(catalogue.G3(ns, describeApiError(created.error)));
  }

  // ---- §8.6 fenced delete, §8.5 await disappearance -------------------------------------------------------------

  private async fencedDelete(action: DeleteAction): Promise<"accepted" | "not-found" | "precondition-failed"> {
    const authority = classifiedDelete(action);
    const outcome = await deletePodAudited(this.deps, this.inputs, this.desired, action.name, action.fence, authority, this.opts());
    if (outcome.kind === "error") throw fail(catalogue.H4(action.name, describeApiError(outcome.error)));
    return outcome.kind;
  }

  /**
   * Until a quorum GET shows 404 or another uid (a new generation, which the loop re-classifies). No fixed sleep:
   * unbound and terminal pods vanish at once. Returns that final observation so the loop need not read again.
   */
  private async awaitDisappearance(uid: string): Promise<Observation> {
    for (;;) {
      if (this.expired()) throw fail(catalogue.K3(this.budget.deadlineSeconds, this.podName));
      const r = await this.deps.cluster.getPod(this.ns, this.podName, this.opts());
      if (r.kind === "error") {
        await this.onReadError({ message: catalogue.H5(this.podName, describeApiError(r.error)) });
        continue;
      }
      this.readErrors = 0;
      if (r.kind === "absent" || r.object.metadata.uid !== uid) return this.settle(r);
      this.waiter.observed(r.object.metadata.resourceVersion ?? undefined);
      await this.waiter.wait();
    }
  }

  // ---- §8.7 create path, §14.3 claim ----------------------------------------------------------------------------

  private async createPath(): Promise<{ kind: "created"; resourceVersion: string | undefined } | { kind: "answer"; answer: DeployAnswer }> {
    const { cluster } = this.deps;
    const config = this.inputs.config;
    if (config.workspaceStorage !== null) await this.ensureClaim(config.workspaceStorage);
    this.generation = generationFrom(this.deps.random32());
    const env = withGeneration(this.inputs.env, this.generation);
    const secretName = secretNameFor(this.inputs.identity, this.generation);

    // The Secret first: unique per attempt, so pod creation alone elects the winner and no lease is needed.
    this.progress({ action: "create-secret" });
    const secretAction = this.intent("k8s.secret.create", { object: secretName, generation: this.generation, fence: { kind: "absent" } });
    const secret = await cluster.createSecret(this.ns, secretManifest(this.inputs.identity, config, this.generation, env), this.opts());
    this.result(secretAction, "k8s.secret.create", {
      object: secretName,
      generation: this.generation,
      outcome: secret.kind === "created" ? "Created" : secret.kind === "already-exists" ? "AlreadyExists" : "error",
    });
    // A generation collision or any error: an existing Secret is never reused or updated.
    if (secret.kind === "already-exists") throw fail(catalogue.H2(secretName, "AlreadyExists"));
    if (secret.kind === "error") throw fail(catalogue.H2(secretName, describeApiError(secret.error)));
    const ours: ObjectPrecondition = { uid: secret.object.metadata.uid ?? "", resourceVersion: secret.object.metadata.resourceVersion ?? "" };

    this.progress({ action: "create-pod" });
    const podAction = this.intent("k8s.pod.create", { object: this.podName, generation: this.generation, fence: { kind: "absent" } });
    const pod = await cluster.createPod(this.ns, podManifest(this.inputs.identity, config, this.generation, this.desired), this.opts());
    this.result(podAction, "k8s.pod.create", {
      object: this.podName,
      generation: this.generation,
      outcome: pod.kind === "created" ? "Created" : pod.kind === "already-exists" ? "AlreadyExists" : "error",
    });
    if (pod.kind === "created") return { kind: "created", resourceVersion: pod.object.metadata.resourceVersion ?? undefined };
    if (pod.kind === "already-exists") return { kind: "answer", answer: await this.loserPath(secretName, ours) };
    // A definite rejection: the pod cannot exist, so our Secret is litter now. Anything ambiguous (timeout, 5xx)
    // leaves it for the orphan sweep — the pod may exist and reference it.
    if (pod.error.kind === "status" && [400, 401, 403, 404, 422].includes(pod.error.code)) {
      await this.dropOwnSecret(secretName, ours, "failed-pod-create");
    }
    throw fail(catalogue.H3(this.podName, describeApiError(pod.error)));
  }

  private async ensureClaim(storage: string): Promise<void> {
    const { cluster } = this.deps;
    const config = this.inputs.config;
    const name = claimNameFor(this.inputs.identity);
    const labels = labelsFor(this.inputs.identity, "2");
    const check = (claim: Parameters<typeof claimProblem>[0]) => {
      const problem = claimProblem(claim, labels, this.inputs.identity, storage, config.workspaceStorageClass);
      if (problem) throw fail(catalogue.claim(name, problem));
    };
    const got = await cluster.getClaim(this.ns, name, this.opts());
    if (got.kind === "error") throw fail(catalogue.J2(name, describeApiError(got.error)));
    if (got.kind === "found") return check(got.object);
    const actionId = this.intent("k8s.claim.create", { object: name, fence: { kind: "absent" } });
    const created = await cluster.createClaim(this.ns, claimManifest(this.inputs.identity, config, storage), this.opts());
    this.result(actionId, "k8s.claim.create", {
      object: name,
      outcome: created.kind === "created" ? "Created" : created.kind === "already-exists" ? "AlreadyExists" : "error",
    });
    if (created.kind === "created") return;
    if (created.kind === "error") throw fail(catalogue.J3(name, describeApiError(created.error)));
    const again = await cluster.getClaim(this.ns, name, this.opts());
    if (again.kind !== "found") throw fail(catalogue.J4(name, again.kind === "error" ? describeApiError(again.error) : "NotFound"));
    check(again.object);
  }

  /** Deletes our own Secret only if no listed pod references it (fenced with its create response). Errors are logged. */
  private async dropOwnSecret(secretName: string, pre: ObjectPrecondition, authority: "race-loser" | "failed-pod-create"): Promise<void> {
    const { cluster } = this.deps;
    const listed = await cluster.listPods(this.ns, selectorFor(this.inputs.identity), this.opts());
    if (listed.kind === "error") {
      this.deps.log.warn(`could not list pods: ${describeApiError(listed.error)}`);
      return;
    }
    if (listed.items.some((p) => secretRefsOf(p).includes(secretName))) return;
    const actionId = this.intent("k8s.secret.delete", { object: secretName, authority, fence: { kind: "precondition", ...pre } });
    const r = await cluster.deleteSecret(this.ns, secretName, pre, this.opts());
    this.result(actionId, "k8s.secret.delete", { object: secretName, authority, fence: { kind: "precondition", ...pre }, outcome: outcomeName(r.kind) });
    if (r.kind === "error") this.deps.log.warn(`could not delete secret ${secretName}: ${describeApiError(r.error)}`);
  }

  // ---- §8.8 losing the create race ------------------------------------------------------------------------------

  private async loserPath(secretName: string, ours: ObjectPrecondition): Promise<DeployAnswer> {
    this.lastAction = "race-lost";
    const first = await this.observe();
    if (first.kind === "foreign") {
      await this.dropOwnSecret(secretName, ours, "race-loser");
      throw fail(catalogue.K5(this.podName));
    }
    await this.dropOwnSecret(secretName, ours, "race-loser");
    let carried: Observation | undefined = first.kind === "error" ? undefined : first;
    // Observe only: never delete the winner, never apply the divergence row to it (two contenders would delete
    // each other), never create again.
    for (;;) {
      if (this.expired()) throw fail(catalogue.K6(this.budget.deadlineSeconds, this.podName, await this.condition()));
      const obs = carried ?? (await this.observe());
      carried = undefined;
      if (obs.kind === "error") {
        await this.onReadError(obs);
        continue;
      }
      this.readErrors = 0;
      if (obs.kind === "foreign") throw fail(catalogue.K5(this.podName));
      if (obs.kind === "verified") {
        this.waiter.observed(obs.raw.metadata.resourceVersion ?? undefined);
        const pod = obs.pod;
        // Deletion mark before started: a dying winner is not success (berth follows Buzz's spec here, P-4).
        if (pod.deletionMarked) throw fail(catalogue.K7(this.podName));
        const s = pod.startup;
        if (s.kind === "started") return { ok: true, agentId: pod.name };
        if (s.kind === "terminated" || s.kind === "provably-broken") throw fail(catalogue.K8(this.podName, latestCondition(obs.raw)));
        if (s.kind === "pull-failing") throw fail(catalogue.K2(this.podName, pullFailureMessage(s.failure, this.inputs.config.image)));
      } else {
        this.waiter.observed(undefined);
      }
      await this.waiter.wait();
    }
  }

  // ---- §11 preflight GC -----------------------------------------------------------------------------------------

  private async preflightGc(): Promise<void> {
    const { cluster, log } = this.deps;
    const who = this.inputs.identity;
    const selector = selectorFor(who);
    const pods = await cluster.listPods(this.ns, selector, this.opts());
    if (pods.kind === "error") throw new Error(`could not list pods: ${describeApiError(pods.error)}`);
    const secrets = await cluster.listSecrets(this.ns, selector, this.opts());
    if (secrets.kind === "error") throw new Error(`could not list secrets: ${describeApiError(secrets.error)}`);
    const plan = planGc(pods.items, secrets.items, who, pods.serverDateMs);
    for (const doomed of plan.doomedPods) {
      const r = await cluster.getPod(this.ns, doomed.name, this.opts());
      if (r.kind === "error") {
        log.warn(`gc: could not re-read pod ${doomed.name}: ${describeApiError(r.error)}`);
        continue;
      }
      let goneOrDeleted = r.kind === "absent" || r.object.metadata.uid !== doomed.fence.uid;
      if (!goneOrDeleted && r.kind === "found") {
        const again = verifyPod(r.object, who, startupOf(r.object));
        if (again.kind !== "verified" || again.pod.startup.kind !== "terminated") continue;
        // The new observation's fence, not the LIST's.
        const outcome = await deletePodAudited(this.deps, this.inputs, this.desired, doomed.name, again.pod.fence, GC_DELETE, this.opts());
        if (outcome.kind === "error") {
          log.warn(`gc: could not delete pod ${doomed.name}: ${describeApiError(outcome.error)}`);
          continue;
        }
        // A Conflict is tolerated silently; the doomed pod's Secret then waits (P-14).
        goneOrDeleted = outcome.kind === "accepted" || outcome.kind === "not-found";
      }
      if (!goneOrDeleted) continue;
      for (const s of doomed.secrets) await this.gcSecret(s, "gc-doomed");
    }
    for (const s of plan.orphanSecrets) await this.gcSecret(s, "gc-orphan");
  }

  private async gcSecret(s: ObjectPrecondition & { name: string }, authority: "gc-doomed" | "gc-orphan"): Promise<void> {
    const fence = { kind: "precondition", uid: s.uid, resourceVersion: s.resourceVersion };
    const actionId = this.intent("k8s.secret.delete", { object: s.name, authority, fence });
    const r = await this.deps.cluster.deleteSecret(this.ns, s.name, s, this.opts());
    this.result(actionId, "k8s.secret.delete", { object: s.name, authority, fence, outcome: outcomeName(r.kind) });
    if (r.kind === "error") this.deps.log.warn(`gc: could not delete secret ${s.name}: ${describeApiError(r.error)}`);
  }
}

function startupOf(pod: PodObject) {
  const d = decodeStartup(pod, "present");
  return d.kind === "decided" ? d.startup : ({ kind: "recoverable" } as const);
}

export function outcomeName(kind: "created" | "already-exists" | "accepted" | "not-found" | "precondition-failed" | "error"): string {
  return {
    created: "Created",
    "already-exists": "AlreadyExists",
    accepted: "Accepted",
    "not-found": "NotFound",
    "precondition-failed": "PreconditionFailed",
    error: "error",
  }[kind];
}

/** A fenced pod delete wrapped in its write-ahead audit pair; shared by the loop, GC and the operator verbs. */
export async function deletePodAudited(
  deps: Pick<DeployDeps, "cluster" | "audit" | "log" | "mode" | "version">,
  inputs: Pick<DeployInputs, "identity" | "config">,
  fingerprintHex: string,
  name: string,
  fence: Fence,
  authority: DeleteAuthority,
  o: RequestOptions,
): Promise<Awaited<ReturnType<Cluster["deletePod"]>>> {
  const authorityLabel = authority.kind === "classified" ? authority.action.cause : authority.kind;
  const fenceJson = { kind: "precondition", uid: fence.uid, resourceVersion: fence.resourceVersion };
  const base = { ...commonFields(deps, inputs), ...(fingerprintHex ? { fingerprint: fingerprintHex } : {}), object: name, authority: authorityLabel, fence: fenceJson };
  let actionId: string;
  try {
    actionId = deps.audit.intent("k8s.pod.delete", base);
  } catch (error) {
    throw fail(catalogue.E2(error instanceof Error ? error.message : String(error)));
  }
  const r = await deps.cluster.deletePod(inputs.config.namespace, name, fence, authority, o);
  try {
    deps.audit.result(actionId, "k8s.pod.delete", { ...base, outcome: outcomeName(r.kind) });
  } catch (error) {
    deps.log.error("could not record an audit result", { error: error instanceof Error ? error.message : String(error) });
  }
  return r;
}

/** Re-exported for the verbs layer, which answers with the same control flow. */
export { Answer as DeployAnswerSignal };
