/**
 * Step 3 of a deploy (spec/kubernetes.md §11): the preflight GC pass, hygiene only — the caller logs its failures and
 * never fails the call on them. Every doomed pod is re-read and re-verified before its delete, which carries the new
 * observation's fence, never the LIST's; a Secret is collected only once its pod is gone or deleted.
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { GC_DELETE } from "../core/kubernetes/authority.js";
import { decodeStartup } from "../core/kubernetes/decode.js";
import { planGc } from "../core/kubernetes/gc.js";
import { selectorFor } from "../core/kubernetes/naming.js";
import type { PodObject } from "../core/kubernetes/objects.js";
import { verifyPod } from "../core/kubernetes/verify.js";
import { deletePodAudited, outcomeName } from "./audited-mutation.js";
import type { ObjectPrecondition } from "./cluster.js";
import type { DeployCall } from "./deploy-call.js";

/**
 * Runs the pass; `planned` is set before the first mutation is sent, so a caller knows whether an observation it took
 * before the pass (the fast path's 404) may have been made stale by it (converge.ts), whatever the pass's end.
 */
export async function preflightGc(call: DeployCall, planned: { any: boolean }): Promise<void> {
  const { cluster, log } = call.deps;
  const who = call.inputs.identity;
  const selector = selectorFor(who);
  // Issued together (issue 19): one round trip instead of two. Their order does not matter to the plan — a Secret is
  // an orphan only at ≥ 1200 s of age by the pod LIST's server clock, and no pod created after either LIST can
  // reference a Secret that old (an attempt lives ≤ 600 s); a Secret listed after that Date only looks younger.
  // Kubernetes has no LIST across two resources, so two requests remain the floor of this step.
  const [pods, secrets] = await Promise.all([
    cluster.listPods(call.ns, selector, call.opts()),
    cluster.listSecrets(call.ns, selector, call.opts()),
  ]);
  if (pods.kind === "error") throw new Error(`could not list pods: ${describeApiError(pods.error)}`);
  if (secrets.kind === "error") throw new Error(`could not list secrets: ${describeApiError(secrets.error)}`);
  const plan = planGc(pods.items, secrets.items, who, pods.serverDateMs);
  planned.any = plan.doomedPods.length > 0 || plan.orphanSecrets.length > 0;
  for (const doomed of plan.doomedPods) {
    const r = await cluster.getPod(call.ns, doomed.name, call.opts());
    if (r.kind === "error") {
      log.warn(`gc: could not re-read pod ${doomed.name}: ${describeApiError(r.error)}`);
      continue;
    }
    let goneOrDeleted = r.kind === "absent" || r.object.metadata.uid !== doomed.fence.uid;
    if (!goneOrDeleted && r.kind === "found") {
      const again = verifyPod(r.object, who, startupOf(r.object));
      if (again.kind !== "verified" || again.pod.startup.kind !== "terminated") continue;
      // The new observation's fence, not the LIST's.
      const outcome = await deletePodAudited(
        call.deps,
        call.inputs,
        call.desired,
        doomed.name,
        again.pod.fence,
        GC_DELETE,
        call.opts(),
      );
      if (outcome.kind === "error") {
        log.warn(`gc: could not delete pod ${doomed.name}: ${describeApiError(outcome.error)}`);
        continue;
      }
      // A Conflict is tolerated silently; the doomed pod's Secret then waits (P-14).
      goneOrDeleted = outcome.kind === "accepted" || outcome.kind === "not-found";
    }
    if (!goneOrDeleted) continue;
    for (const s of doomed.secrets) await gcSecret(call, s, "gc-doomed");
  }
  for (const s of plan.orphanSecrets) await gcSecret(call, s, "gc-orphan");
}

async function gcSecret(
  call: DeployCall,
  s: ObjectPrecondition & { name: string },
  authority: "gc-doomed" | "gc-orphan",
): Promise<void> {
  const fence = { kind: "precondition", uid: s.uid, resourceVersion: s.resourceVersion };
  const actionId = await call.intent("k8s.secret.delete", { object: s.name, authority, fence });
  const r = await call.deps.cluster.deleteSecret(call.ns, s.name, s, call.opts());
  await call.result(actionId, "k8s.secret.delete", { object: s.name, authority, fence, outcome: outcomeName(r.kind) });
  if (r.kind === "error") call.deps.log.warn(`gc: could not delete secret ${s.name}: ${describeApiError(r.error)}`);
}

function startupOf(pod: PodObject) {
  const d = decodeStartup(pod, "present");
  return d.kind === "decided" ? d.startup : ({ kind: "recoverable" } as const);
}
