/**
 * Audited mutation (spec/kubernetes.md §17): every write to the cluster is a write-ahead pair — an intent record that
 * must be appended before the API call (else E2, and the call is not made) and a result record after, best effort.
 * The common fields every `k8s.*` record of a deploy carries live here too.
 */
import type { JsonObject } from "../core/crypto/canonical.js";
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { bindingOf } from "../core/kubernetes/manifests.js";
import type { Fence } from "../core/kubernetes/verify.js";
import type { Cluster, RequestOptions } from "./cluster.js";
import { Answer, type DeployDeps, type DeployInputs } from "./deploy-call.js";

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
    throw Answer.fail(catalogue.E2(error instanceof Error ? error.message : String(error)));
  }
  const r = await deps.cluster.deletePod(inputs.config.namespace, name, fence, authority, o);
  try {
    deps.audit.result(actionId, "k8s.pod.delete", { ...base, outcome: outcomeName(r.kind) });
  } catch (error) {
    deps.log.error("could not record an audit result", { error: error instanceof Error ? error.message : String(error) });
  }
  return r;
}
