/**
 * Operator verbs beyond the protocol (spec/kubernetes.md §16): status, list, stop and replace. Each re-verifies ownership
 * on a fresh quorum GET just before acting and acts only with that observation's fence. `stop` is the one path in
 * berth allowed to delete a started pod — explicit, user-initiated and audited; `replace` refuses a started pod.
 */
import { userInfo } from "node:os";
import { type Requirement, selectorText } from "../core/agents/labels.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import { describeApiError } from "../core/kubernetes/api-status.js";
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import { latestCondition, POD_GONE } from "../core/kubernetes/condition.js";
import { decodeStartup, type Startup } from "../core/kubernetes/decode.js";
import { type DesiredIntent, intentMatches } from "../core/kubernetes/intent.js";
import {
  BINDING_LABEL,
  IMAGE_ANNOTATION,
  type AgentIdentity,
  MANAGED_SELECTOR,
  PUBKEY_FULL_ANNOTATION,
  selectorFor,
} from "../core/kubernetes/naming.js";
import { type PodObject, secretRefsOf } from "../core/kubernetes/objects.js";
import { userReplace, userStop } from "../core/kubernetes/user-authority.js";
import { isOurSecret, type VerifiedPod } from "../core/kubernetes/verify.js";
import type { K8sAudit } from "./audit.js";
import type { Cluster } from "./cluster.js";
import type { Clock } from "../kit/clock.js";
import type { Logger } from "../kit/log.js";
import { outcomeName } from "./audited-mutation.js";
import { type Observation, observePod } from "./observe.js";

export interface VerbDeps {
  readonly cluster: Cluster;
  readonly clock: Clock;
  readonly audit: K8sAudit;
  readonly log: Logger;
  readonly version: string;
  readonly pollMs?: number;
}

export interface AgentRef {
  readonly identity: AgentIdentity;
  readonly namespace: string;
}

/** The pods the verbs see, through the same observation as the converge loop (observe.ts). */
export function look(cluster: Cluster, ref: AgentRef): Promise<Observation> {
  return observePod(cluster, ref.namespace, ref.identity);
}

export function startupLabel(s: Startup): string {
  return s.kind === "pull-failing" ? `pull-failing (${s.failure})` : s.kind;
}

export interface StatusReport {
  readonly name: string;
  readonly namespace: string;
  readonly observed: "absent" | "foreign" | "verified";
  readonly startup?: string;
  readonly deletion_marked?: boolean;
  readonly condition?: string;
  readonly intent?: "matches" | "diverged" | "unknown";
  readonly image?: string | null;
  readonly generation?: string | null;
  readonly binding?: string | null;
  readonly age_seconds?: number | null;
  readonly node?: string | null;
}

/**
 * `desired` is the deploy's intent (a bare fingerprint is read as one with no equivalents). "diverged" means exactly
 * what the deploy loop would replace a never-started pod for: a pod Buzz created with intent template v1 or v2 for
 * the same config reads "matches" (intentMatches, issue 18.2).
 */
export async function status(
  deps: Pick<VerbDeps, "cluster" | "clock">,
  ref: AgentRef,
  desired: DesiredIntent | string | null,
): Promise<StatusReport | { error: string }> {
  const want: DesiredIntent | null = typeof desired === "string" ? { fingerprint: desired, equivalents: [] } : desired;
  const seen = await look(deps.cluster, ref);
  const base = { name: ref.identity.podName, namespace: ref.namespace };
  if (seen.kind === "error") return { error: seen.message };
  if (seen.kind === "absent") return { ...base, observed: "absent", condition: POD_GONE };
  const raw: PodObject = seen.raw;
  const created = raw.metadata.creationTimestamp ? Date.parse(raw.metadata.creationTimestamp) : Number.NaN;
  const common = {
    condition: latestCondition(raw),
    image: raw.metadata.annotations?.[IMAGE_ANNOTATION] ?? null,
    binding: raw.metadata.labels?.[BINDING_LABEL] ?? null,
    age_seconds: Number.isFinite(created) ? Math.max(0, Math.floor((deps.clock.wallNow() - created) / 1000)) : null,
    node: raw.spec.nodeName ?? null,
  };
  if (seen.kind === "foreign") return { ...base, observed: "foreign", ...common };
  const ref0 = seen.pod.secretRef;
  return {
    ...base,
    observed: "verified",
    startup: startupLabel(seen.pod.startup),
    deletion_marked: seen.pod.deletionMarked,
    intent: want === null ? "unknown" : intentMatches(seen.pod.recordedIntent, want) ? "matches" : "diverged",
    generation: ref0?.startsWith(`${ref.identity.podName}-`) ? ref0.slice(ref.identity.podName.length + 1) : null,
    ...common,
  };
}

export interface ListRow {
  readonly name: string;
  readonly namespace: string;
  readonly binding: string;
  readonly startup: string;
  readonly registry: "verified" | "no record" | "mismatch";
}

/**
 * `selector` (issue 36, `berth k8s list -l`): the pods' own labels, evaluated by the apiserver beside the management
 * marker. Those are the binding's labels only: berth puts no other label on a pod (spec/kubernetes.md §4.2), so an
 * agent's `metadata.labels` are selected by `berth agents -l`, not here.
 */
export async function list(
  cluster: Cluster,
  namespace: string | null,
  selector: readonly Requirement[] = [],
): Promise<ListRow[] | { error: string }> {
  const r = await cluster.listPods(namespace, [MANAGED_SELECTOR, ...selector.map(selectorText)].join(","));
  if (r.kind === "error") return { error: `could not list pods: ${describeApiError(r.error)}` };
  return r.items.map((p) => {
    const binding = p.metadata.labels?.[BINDING_LABEL] ?? "";
    const d = decodeStartup(p, "present");
    return {
      name: p.metadata.name ?? "?",
      namespace: p.metadata.namespace ?? namespace ?? "?",
      binding: binding === "1" || binding === "2" ? binding : `unsupported (${JSON.stringify(binding)})`,
      startup: d.kind === "decided" ? startupLabel(d.startup) : "unknown",
      // berth has no agent registry yet, so no pod can be matched against a record.
      registry: p.metadata.annotations?.[PUBKEY_FULL_ANNOTATION] ? "no record" : "no record",
    };
  });
}

const operator = () => {
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
};

function auditBase(deps: VerbDeps, ref: AgentRef, mode: string): JsonObject {
  return {
    agent_pubkey: ref.identity.pubkey,
    namespace: ref.namespace,
    context: deps.cluster.identity.context,
    server: deps.cluster.identity.server,
    mode,
    berth_version: deps.version,
    operator: operator(),
  };
}

async function fencedUserDelete(
  deps: VerbDeps,
  ref: AgentRef,
  pod: VerifiedPod,
  authority: DeleteAuthority,
  label: "user-stop" | "user-replace",
) {
  const fence = { kind: "precondition", uid: pod.fence.uid, resourceVersion: pod.fence.resourceVersion };
  const base = { ...auditBase(deps, ref, "cli"), object: pod.name, authority: label, fence };
  const actionId = await deps.audit.intent("k8s.pod.delete", base);
  // The pod's own grace period applies: gracePeriodSeconds is never sent (P-11).
  const r = await deps.cluster.deletePod(ref.namespace, pod.name, pod.fence, authority);
  await deps.audit.result(actionId, "k8s.pod.delete", { ...base, outcome: outcomeName(r.kind) });
  return r;
}

async function awaitGone(deps: VerbDeps, ref: AgentRef, uid: string, timeoutMs: number): Promise<boolean> {
  const until = deps.clock.now() + timeoutMs;
  for (;;) {
    const r = await deps.cluster.getPod(ref.namespace, ref.identity.podName);
    if (r.kind === "absent" || (r.kind === "found" && r.object.metadata.uid !== uid)) return true;
    if (deps.clock.now() >= until) return false;
    await deps.clock.sleep(Math.min(deps.pollMs ?? 2000, until - deps.clock.now()));
  }
}

export type VerbOutcome = { ok: true; message: string } | { ok: false; message: string };

/** §16.1. */
export async function stop(
  deps: VerbDeps,
  ref: AgentRef,
  opts: { wait: boolean; waitMs?: number },
): Promise<VerbOutcome> {
  const start = await deps.audit.intent("k8s.stop", { ...auditBase(deps, ref, "cli"), object: ref.identity.podName });
  const finish = async (o: VerbOutcome): Promise<VerbOutcome> => {
    await deps.audit.result(start, "k8s.stop", {
      ...auditBase(deps, ref, "cli"),
      object: ref.identity.podName,
      ok: o.ok,
      message: o.message,
    });
    return o;
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const seen = await look(deps.cluster, ref);
    if (seen.kind === "error") return finish({ ok: false, message: seen.message });
    if (seen.kind === "absent")
      return finish({ ok: true, message: `${ref.identity.podName} does not exist; nothing to stop` });
    if (seen.kind === "foreign")
      return finish({
        ok: false,
        message: `${ref.identity.podName} is not managed by berth/Buzz for this agent; refusing to stop it`,
      });
    const pod = seen.pod;
    let uid = pod.fence.uid;
    if (!pod.deletionMarked) {
      const r = await fencedUserDelete(deps, ref, pod, userStop(start), "user-stop");
      if (r.kind === "precondition-failed") continue; // the authority is the user's command: re-read and retry
      if (r.kind === "error")
        return finish({ ok: false, message: `could not delete pod ${pod.name}: ${describeApiError(r.error)}` });
      uid = pod.fence.uid;
    } else if (!opts.wait) {
      return finish({ ok: true, message: `${pod.name} is already being deleted` });
    }
    if (!opts.wait)
      return finish({
        ok: true,
        message: `${pod.name} is stopping (its 60 s shutdown budget applies); its Secret is collected by the next deploy`,
      });
    if (!(await awaitGone(deps, ref, uid, opts.waitMs ?? 120_000)))
      return finish({
        ok: false,
        message: `${pod.name} did not disappear within ${Math.round((opts.waitMs ?? 120_000) / 1000)}s`,
      });
    await dropUnreferencedSecret(deps, ref, pod.secretRef);
    return finish({ ok: true, message: `${pod.name} stopped` });
  }
  return finish({ ok: false, message: `${ref.identity.podName} kept changing; gave up after 3 fenced attempts` });
}

async function dropUnreferencedSecret(deps: VerbDeps, ref: AgentRef, name: string | null): Promise<void> {
  if (!name) return;
  const s = await deps.cluster.getSecret(ref.namespace, name);
  if (s.kind !== "found" || !isOurSecret(s.object, ref.identity)) return;
  const pods = await deps.cluster.listPods(ref.namespace, selectorFor(ref.identity));
  if (pods.kind !== "listed" || pods.items.some((p) => secretRefsOf(p).includes(name))) return;
  const pre = { uid: s.object.metadata.uid ?? "", resourceVersion: s.object.metadata.resourceVersion ?? "" };
  const fence = { kind: "precondition", ...pre };
  const actionId = await deps.audit.intent("k8s.secret.delete", {
    ...auditBase(deps, ref, "cli"),
    object: name,
    authority: "stop-cleanup",
    fence,
  });
  const r = await deps.cluster.deleteSecret(ref.namespace, name, pre);
  await deps.audit.result(actionId, "k8s.secret.delete", {
    ...auditBase(deps, ref, "cli"),
    object: name,
    authority: "stop-cleanup",
    fence,
    outcome: outcomeName(r.kind),
  });
}

/**
 * §16.2 steps 2–3: clears a never-started pod (pull-failing included) so the following normal deploy can create.
 * Refuses a started pod; leaves terminated, marked or absent pods to the deploy's own rows.
 */
export async function clearForReplace(
  deps: VerbDeps,
  ref: AgentRef,
  actionId: string,
  awaitMs: number,
): Promise<VerbOutcome> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const seen = await look(deps.cluster, ref);
    if (seen.kind === "error") return { ok: false, message: seen.message };
    if (seen.kind === "absent") return { ok: true, message: "absent" };
    if (seen.kind === "foreign")
      return {
        ok: false,
        message: `${ref.identity.podName} is not managed by berth/Buzz for this agent; refusing to replace it`,
      };
    const pod = seen.pod;
    if (pod.deletionMarked || pod.startup.kind === "terminated") return { ok: true, message: "left to deploy" };
    if (pod.startup.kind === "started")
      return {
        ok: false,
        message: `${pod.name} has started; replace only clears a never-started pod. Stop it first (berth k8s stop), then deploy.`,
      };
    const r = await fencedUserDelete(deps, ref, pod, userReplace(actionId), "user-replace");
    if (r.kind === "precondition-failed") continue;
    if (r.kind === "error")
      return { ok: false, message: `could not delete pod ${pod.name}: ${describeApiError(r.error)}` };
    if (!(await awaitGone(deps, ref, pod.fence.uid, awaitMs)))
      return { ok: false, message: `${pod.name} did not disappear in time` };
    return { ok: true, message: "cleared" };
  }
  return { ok: false, message: `${ref.identity.podName} kept changing; gave up after 3 fenced attempts` };
}

export function replaceAuditStart(deps: VerbDeps, ref: AgentRef): Promise<string> {
  return deps.audit.intent("k8s.replace", { ...auditBase(deps, ref, "cli"), object: ref.identity.podName });
}

export async function replaceAuditEnd(
  deps: VerbDeps,
  ref: AgentRef,
  actionId: string,
  outcome: VerbOutcome,
): Promise<void> {
  await deps.audit.result(actionId, "k8s.replace", {
    ...auditBase(deps, ref, "cli"),
    object: ref.identity.podName,
    ok: outcome.ok,
    message: outcome.message,
  });
}
