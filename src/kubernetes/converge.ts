/**
 * The converge loop (spec/kubernetes.md §8; "reconcile" names the mesh's lost answer only, issue 32): one deploy call
 * for one agent, bounded by a deadline. Level-triggered and idempotent — every decision is taken on a fresh quorum
 * GET, classified by the pure core, and acted on once; the same call made twice against a started pod does nothing
 * the second time.
 *
 *   fast path ─► namespace ─► preflight GC ─► fingerprint ─► loop: observe ─► classify ─► loopStep ─► act ─► wait ─┐
 *                                                                 ▲───────────────────────────────────────────────┘
 *
 * This file is the executor only: `classify` and `loopStep` (src/core/kubernetes) decide, the steps live one per file
 * (observe.ts, namespace.ts, preflight-gc.ts, create.ts, race-loser.ts, audited-mutation.ts) over the call's context
 * (deploy-call.ts). Structural guarantees kept: a foreign pod is refused before any write; a delete only ever carries
 * the fence of the observation that classified it; at most one Secret create and one Pod create per call; a read
 * error is never absence; expiry never triggers cleanup.
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { classifiedDelete } from "../core/kubernetes/authority.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { assertNever, classify, type DeleteAction } from "../core/kubernetes/classify.js";
import { latestCondition, POD_GONE } from "../core/kubernetes/condition.js";
import { confirmStart, runningInstance } from "../core/kubernetes/confirm.js";
import { equivalentFingerprints, fingerprint } from "../core/kubernetes/intent.js";
import { loopStep } from "../core/kubernetes/loop-rules.js";
import { failingImage, pullFailureMessage } from "../core/kubernetes/pull-failure.js";
import { attemptSecrets, scrubberFor } from "../core/kubernetes/scrub.js";
import { deletePodAudited } from "./audited-mutation.js";
import { createPath } from "./create.js";
import {
  Answer,
  commonFields,
  type DeployAnswer,
  type DeployBudget,
  DeployCall,
  type DeployDeps,
  type DeployInputs,
  type Progress,
} from "./deploy-call.js";
import { ensureNamespace } from "./namespace.js";
import type { Observation } from "./observe.js";
import { preflightGc } from "./preflight-gc.js";
import { scrubbingAudit, scrubbingCluster, scrubbingLogger } from "./scrubbing.js";

export type {
  DeployAnswer,
  DeployBudget,
  DeployDeps,
  DeployInputs,
  DeployMode,
  Progress,
} from "./deploy-call.js";
/** Re-exported for the verbs layer, which answers with the same control flow. */
export { Answer as DeployAnswerSignal };

export interface DeployReport {
  readonly answer: DeployAnswer;
  readonly createdThisCall: boolean;
  readonly lastAction: string;
  readonly requests: number;
  readonly elapsedMs: number;
}

/**
 * One deploy call. Catalogued failures become `{ok:false}` answers; an exception escaping this function is a bug.
 */
export async function deploy(inputs: DeployInputs, given: DeployDeps, budget: DeployBudget): Promise<DeployReport> {
  // Server text may quote the Secret it refuses: scrubbed at the seam, before any step, log, answer or record sees it.
  // Only real secrets, and never text inside the call's own public names (issue 34: a `buzz-agent` launch command once
  // turned every pod name into `[redacted]-…`).
  const scrub = scrubberFor(attemptSecrets(inputs.env), [
    inputs.identity.podName,
    inputs.identity.pubkey,
    inputs.config.namespace,
    inputs.config.image,
  ]);
  const deps: DeployDeps = {
    ...given,
    cluster: scrubbingCluster(given.cluster, scrub),
    log: scrubbingLogger(given.log, scrub),
    audit: scrubbingAudit(given.audit, scrub),
    ...(given.onProgress
      ? {
          onProgress: (p: Progress) =>
            given.onProgress?.(p.condition === undefined ? p : { ...p, condition: scrub(p.condition) }),
        }
      : {}),
  };
  const call = new DeployCall(inputs, deps, budget);
  const requestsBefore = deps.cluster.requestCount;
  let answer: DeployAnswer;
  try {
    answer = await run(call);
  } catch (error) {
    if (!(error instanceof Answer)) throw error;
    answer = error.answer;
  } finally {
    call.close();
  }
  // Kubelet text in a pod condition is server text too.
  if (!answer.ok) answer = { ok: false, error: scrub(answer.error) };
  const report: DeployReport = {
    answer,
    createdThisCall: call.createdThisCall,
    lastAction: call.lastAction,
    requests: deps.cluster.requestCount - requestsBefore,
    elapsedMs: Math.round(deps.clock.now() - budget.startedAt),
  };
  await recordOutcome(deps, inputs, report);
  return report;
}

async function recordOutcome(deps: DeployDeps, inputs: DeployInputs, report: DeployReport): Promise<void> {
  try {
    await deps.audit.record("k8s.deploy.outcome", {
      ...commonFields(deps, inputs),
      ok: report.answer.ok,
      ...(report.answer.ok ? { agent_id: report.answer.agentId } : { error: report.answer.error }),
      created_this_call: report.createdThisCall,
      last_action: report.lastAction,
      elapsed_ms: report.elapsedMs,
      api_requests: report.requests,
    });
  } catch (error) {
    deps.log.error("could not record the deploy outcome", {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

async function run(call: DeployCall): Promise<DeployAnswer> {
  // Step 1, fast path: a started pod of ours costs one request and no mutation.
  const fast = await call.observe();
  const guard = call.deps.onlyReplacing;
  if (guard !== undefined && !(fast.kind === "verified" && fast.pod.fence.uid === guard.uid)) {
    call.lastAction = "changed-since-judged";
    if (fast.kind === "error") throw Answer.fail(fast.message);
    throw Answer.fail(
      `pod ${call.podName} is no longer the one the keep loop judged (uid ${guard.uid}); nothing was done`,
    );
  }
  if (fast.kind === "verified" && !fast.pod.deletionMarked && fast.pod.startup.kind === "started") {
    call.lastAction = "no-op";
    return { ok: true, agentId: fast.pod.name };
  }
  // Step 2: namespace; failure ends the call with nothing written.
  call.progress({ action: "namespace" });
  await ensureNamespace(call);
  // Step 3: preflight GC is hygiene: its failures are logged and never fail the call. After a fast path that found no
  // pod (a fresh deploy), that 404 is step 5's first observation when the pass planned no mutation (issue 19: no second
  // GET). Nothing the loop could learn from another read is unsafe to miss: a pod created meanwhile by a racing deploy
  // makes our Pod create answer AlreadyExists (the loser path, §8.8), exactly as if it had appeared just after a fresh
  // GET. A pass that planned anything is followed by a fresh GET; a pod at the fast path keeps the order GC, then GET.
  call.progress({ action: "gc" });
  const planned = { any: false };
  await preflightGc(call, planned).catch((error: unknown) => {
    const e = error instanceof Answer ? error.answer : error;
    call.deps.log.warn(`gc: preflight pass skipped: ${e instanceof Error ? e.message : JSON.stringify(e)}`);
  });
  // Step 4: the desired fingerprint, once per call.
  call.desired = fingerprint(call.inputs.config, Object.keys(call.inputs.env));
  call.equivalents = equivalentFingerprints(call.inputs.config, Object.keys(call.inputs.env));
  return loop(call, fast.kind === "absent" && !planned.any ? fast : undefined);
}

async function loop(call: DeployCall, first: Observation | undefined): Promise<DeployAnswer> {
  let carried: Observation | undefined = first;
  for (;;) {
    const obs = await call.next(carried, (condition) => catalogue.K1(call.elapsedSeconds(), call.podName, condition));
    carried = undefined;
    call.waiter.observed(obs.kind === "absent" ? undefined : (obs.raw.metadata.resourceVersion ?? undefined));
    // A foreign pod on our name is refused before any write (P-15).
    if (obs.kind === "foreign") throw Answer.fail(catalogue.K5(call.podName));
    const action = classify(obs.kind === "verified" ? obs.pod : null, call.desired, call.equivalents);
    call.lastAction = action.kind;
    call.progress({ action: action.kind, ...(obs.kind === "verified" ? { condition: latestCondition(obs.raw) } : {}) });
    const step = loopStep(action, call.createdThisCall);
    switch (step.kind) {
      case "succeed": {
        // Started, but seen by this loop (not the fast path): answer only once the same container is still running a
        // confirmation window later (issue 34), so a harness that crashes at start is reported as what it is (K4).
        if (obs.kind !== "verified") throw new Error("unreachable: a no-op without a verified pod");
        const confirmation = confirmStart(
          call.runningSeen,
          runningInstance(obs.raw),
          call.deps.clock.now(),
          call.deps.wait.confirmStartMs,
        );
        if (confirmation.kind === "confirmed") return { ok: true, agentId: step.agentId };
        call.runningSeen = confirmation.seen;
        call.progress({ action: "confirm-start", condition: "the container is running; confirming it stays up" });
        await call.waiter.waitUntil(confirmation.until);
        break;
      }
      case "wait":
        await call.waiter.wait();
        break;
      case "report":
        // The failing pod's own image (issue 34): a never-started pod from an earlier config is reported, not replaced.
        throw Answer.fail(
          catalogue.K2(
            call.podName,
            pullFailureMessage(
              step.failure,
              obs.kind === "verified" ? failingImage(obs.raw, call.inputs.config.image) : call.inputs.config.image,
            ),
          ),
        );
      case "await-disappearance":
        carried = await awaitDisappearance(call, step.uid);
        break;
      // One attempt per call: our own pod did not stay running (or vanished); an immediate exit recurs until fixed.
      case "give-up":
        throw Answer.fail(
          catalogue.K4(
            call.podName,
            step.condition === "observed" && obs.kind === "verified" ? latestCondition(obs.raw) : POD_GONE,
          ),
        );
      case "delete": {
        const outcome = await fencedDelete(call, step.action);
        if (outcome === "precondition-failed") {
          // The object changed since the read: re-classify on a fresh read, never retry with a newer fence.
          await call.waiter.pause();
          break;
        }
        carried = await awaitDisappearance(call, step.action.fence.uid);
        break;
      }
      case "create": {
        // The watch opens now (from the current state: the pod is absent), established while the creates travel.
        call.waiter.prime();
        const created = await createPath(call);
        if (created.kind === "answer") return created.answer;
        call.createdThisCall = true;
        call.waiter.observed(created.resourceVersion);
        await call.waiter.wait();
        break;
      }
      default:
        assertNever(step);
    }
  }
}

/** §8.6: the delete carries the classified action's fence and authority, nothing fresher. */
async function fencedDelete(
  call: DeployCall,
  action: DeleteAction,
): Promise<"accepted" | "not-found" | "precondition-failed"> {
  const outcome = await deletePodAudited(
    call.deps,
    call.inputs,
    call.desired,
    action.name,
    action.fence,
    classifiedDelete(action),
    call.opts(),
  );
  if (outcome.kind === "error") throw Answer.fail(catalogue.H4(action.name, describeApiError(outcome.error)));
  return outcome.kind;
}

/**
 * §8.5: until a quorum GET shows 404 or another uid (a new generation, which the loop re-classifies). No fixed sleep:
 * unbound and terminal pods vanish at once. Returns that final observation so the loop need not read again.
 */
async function awaitDisappearance(call: DeployCall, uid: string): Promise<Observation> {
  for (;;) {
    if (call.expired()) throw Answer.fail(catalogue.K3(call.elapsedSeconds(), call.podName));
    const r = await call.deps.cluster.getPod(call.ns, call.podName, call.opts());
    if (r.kind === "error") {
      await call.onReadError({ message: catalogue.H5(call.podName, describeApiError(r.error)) });
      continue;
    }
    call.readSucceeded();
    if (r.kind === "absent" || r.object.metadata.uid !== uid) return call.settle(r);
    // Still there: a pod in its grace period reads phase Running, so say what it really is (issue 34).
    call.progress({ action: "await-disappearance", condition: latestCondition(r.object) });
    call.waiter.observed(r.object.metadata.resourceVersion ?? undefined);
    await call.waiter.wait();
  }
}
