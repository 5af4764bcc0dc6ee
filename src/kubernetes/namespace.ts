/** Step 2 of a deploy (spec/kubernetes.md §12): the namespace exists, or is created; a failure ends the call with nothing written. */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { namespaceManifest } from "../core/kubernetes/manifests.js";
import { Answer, type DeployCall } from "./deploy-call.js";

export async function ensureNamespace(call: DeployCall): Promise<void> {
  const ns = call.ns;
  const got = await call.deps.cluster.getNamespace(ns, call.opts());
  if (got.kind === "found") return;
  // Any error, 403 included, is G1: only the create earns the kubectl hint (P-10).
  if (got.kind === "error") throw Answer.fail(catalogue.G1(ns, describeApiError(got.error)));
  const actionId = await call.intent("k8s.namespace.create", { object: ns, fence: { kind: "absent" } });
  const created = await call.deps.cluster.createNamespace(namespaceManifest(ns), call.opts());
  const outcome =
    created.kind === "created" ? "Created" : created.kind === "already-exists" ? "AlreadyExists" : "error";
  await call.result(actionId, "k8s.namespace.create", { object: ns, outcome });
  if (created.kind !== "error") return;
  if (created.error.kind === "status" && created.error.reason === "Forbidden") throw Answer.fail(catalogue.G2(ns));
  throw Answer.fail(catalogue.G3(ns, describeApiError(created.error)));
}
