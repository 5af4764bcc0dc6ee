/**
 * Audited mutation (spec/kubernetes.md §17): every write to the cluster is a write-ahead pair — an intent record that
 * must be appended before the API call (else E2, and the call is not made) and a result record after, best effort.
 * Deleting the deploy's own Secret (a race loser's, or after a failed pod create) is one of these writes.
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { selectorFor } from "../core/kubernetes/naming.js";
import { secretRefsOf } from "../core/kubernetes/objects.js";
import type { Fence } from "../core/kubernetes/verify.js";
import type { Cluster, ObjectPrecondition, RequestOptions } from "./cluster.js";
import { Answer, commonFields, type DeployCall, type DeployDeps, type DeployInputs } from "./deploy-call.js";

export function outcomeName(
  kind: "created" | "already-exists" | "accepted" | "not-found" | "precondition-failed" | "error",
): string {
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
  const base = {
    ...commonFields(deps, inputs),
    ...(fingerprintHex ? { fingerprint: fingerprintHex } : {}),
    object: name,
    authority: authorityLabel,
    fence: fenceJson,
  };
  let actionId: string;
  try {
    actionId = await deps.audit.intent("k8s.pod.delete", base);
  } catch (error) {
    throw Answer.fail(catalogue.E2(error instanceof Error ? error.message : String(error)));
  }
  const r = await deps.cluster.deletePod(inputs.config.namespace, name, fence, authority, o);
  try {
    await deps.audit.result(actionId, "k8s.pod.delete", { ...base, outcome: outcomeName(r.kind) });
  } catch (error) {
    deps.log.error("could not record an audit result", {
      error: error instanceof Error ? error.message : String(error),
    });
  }
  return r;
}

/** Deletes our own Secret only if no listed pod references it (fenced with its create response). Errors are logged. */
export async function dropOwnSecret(
  call: DeployCall,
  secretName: string,
  pre: ObjectPrecondition,
  authority: "race-loser" | "failed-pod-create",
): Promise<void> {
  const { cluster } = call.deps;
  const listed = await cluster.listPods(call.ns, selectorFor(call.inputs.identity), call.opts());
  if (listed.kind === "error") {
    call.deps.log.warn(`could not list pods: ${describeApiError(listed.error)}`);
    return;
  }
  if (listed.items.some((p) => secretRefsOf(p).includes(secretName))) return;
  const fence = { kind: "precondition", ...pre };
  const actionId = await call.intent("k8s.secret.delete", { object: secretName, authority, fence });
  const r = await cluster.deleteSecret(call.ns, secretName, pre, call.opts());
  await call.result(actionId, "k8s.secret.delete", {
    object: secretName,
    authority,
    fence,
    outcome: outcomeName(r.kind),
  });
  if (r.kind === "error") call.deps.log.warn(`could not delete secret ${secretName}: ${describeApiError(r.error)}`);
}
