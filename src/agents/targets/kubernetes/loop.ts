/**
 * The Kubernetes backend's converge loop as every verb outside the provider protocol runs it (`berth deploy`,
 * `berth agent replace`, `berth k8s deploy`, `POST /api/v1/agents`, `POST /api/v1/k8s/agents`): its dependencies
 * and its deadline are built here and nowhere else, so the CLI and the server cannot drift apart on the budget.
 *
 * The budget is spec/kubernetes.md §8.2 in CLI mode: the loop stops LOOP_RESERVE_SECONDS before D, measured from the
 * call's start. (The provider measures from process start against its answer-by, in `kubernetes/provider.ts`.)
 */
import { randomBytes } from "node:crypto";
import {
  type DeployBudget,
  type DeployDeps,
  type DeployInputs,
  type DeployReport,
  deploy,
} from "../../../kubernetes/converge.js";
import { type K8sSettings, LOOP_RESERVE_SECONDS } from "../../../kubernetes/settings.js";
import type { VerbDeps } from "../../../kubernetes/verbs.js";

/** What the loop needs beyond the verbs' dependencies: berth's settings and, for a person watching, progress. */
export interface LoopOptions {
  readonly settings: K8sSettings;
  /** The latest action and condition as one line (never kubelet messages: the loop's latestCondition omits them). */
  readonly onProgress?: (line: string) => void;
  /** Set by `berth serve`'s keep loop (serve/kubernetes/keeper.ts): the judged pod's uid, and `k8s.*` records name the loop. */
  readonly loop?: { readonly onlyReplacing: { readonly uid: string } };
}

/** D − reserve from `startedAt` (a monotonic reading of the clock the loop uses). */
export function cliBudget(startedAt: number, settings: K8sSettings): DeployBudget {
  return {
    startedAt,
    loopDeadlineAt: startedAt + (settings.deadlineSeconds - LOOP_RESERVE_SECONDS) * 1000,
    deadlineSeconds: settings.deadlineSeconds,
  };
}

export function loopDeps(deps: VerbDeps, opts: LoopOptions): DeployDeps {
  const onProgress = opts.onProgress;
  return {
    cluster: deps.cluster,
    clock: deps.clock,
    audit: deps.audit,
    log: deps.log,
    random32: () => randomBytes(4).readUInt32BE(0),
    wait: opts.settings.wait,
    // The keep loop's recorded mode keeps its old name: stored `k8s.*` records already hold it (deploy-call.ts).
    mode: opts.loop ? "reconcile-loop" : "cli",
    version: deps.version,
    ...(opts.loop ? { onlyReplacing: opts.loop.onlyReplacing } : {}),
    ...(onProgress ? { onProgress: (p) => onProgress(`${p.action}${p.condition ? `: ${p.condition}` : ""}`) } : {}),
  };
}

/** One deploy call of the backend's loop for `inputs`, starting now. */
export function runConvergeLoop(deps: VerbDeps, inputs: DeployInputs, opts: LoopOptions): Promise<DeployReport> {
  return deploy(inputs, loopDeps(deps, opts), cliBudget(deps.clock.now(), opts.settings));
}
