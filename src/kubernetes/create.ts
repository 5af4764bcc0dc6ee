/**
 * The create path of a deploy (spec/kubernetes.md §8.7, §14.3): the workspace claim when asked for, then one attempt —
 * a Secret unique to its generation, then the Pod. Pod creation alone elects the winner, so no lease is needed; a
 * loser hands over to `race-loser.ts`. An existing Secret is never reused or updated.
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { withGeneration } from "../core/kubernetes/env.js";
import { claimManifest, podManifest, secretManifest } from "../core/kubernetes/manifests.js";
import { claimNameFor, generationFrom, labelsFor, secretNameFor } from "../core/kubernetes/naming.js";
import { claimProblem } from "../core/kubernetes/verify.js";
import { dropOwnSecret, outcomeName } from "./audited-mutation.js";
import type { ObjectPrecondition } from "./cluster.js";
import { Answer, type DeployAnswer, type DeployCall } from "./deploy-call.js";
import { loserPath } from "./race-loser.js";

export type CreateOutcome =
  | { kind: "created"; resourceVersion: string | undefined }
  | { kind: "answer"; answer: DeployAnswer };

const createOutcome = (kind: "created" | "already-exists" | "error") => outcomeName(kind);

export async function createPath(call: DeployCall): Promise<CreateOutcome> {
  const { cluster } = call.deps;
  const { identity, config } = call.inputs;
  if (config.workspaceStorage !== null) await ensureClaim(call, config.workspaceStorage);
  const generation = generationFrom(call.deps.random32());
  const env = withGeneration(call.inputs.env, generation);
  const secretName = secretNameFor(identity, generation);

  call.progress({ action: "create-secret" });
  const secretAction = await call.intent("k8s.secret.create", {
    object: secretName,
    generation,
    fence: { kind: "absent" },
  });
  const secret = await cluster.createSecret(call.ns, secretManifest(identity, config, generation, env), call.opts());
  await call.result(secretAction, "k8s.secret.create", {
    object: secretName,
    generation,
    outcome: createOutcome(secret.kind),
  });
  // A generation collision or any error: an existing Secret is never reused or updated.
  if (secret.kind === "already-exists") throw Answer.fail(catalogue.H2(secretName, "AlreadyExists"));
  if (secret.kind === "error") throw Answer.fail(catalogue.H2(secretName, describeApiError(secret.error)));
  const ours: ObjectPrecondition = {
    uid: secret.object.metadata.uid ?? "",
    resourceVersion: secret.object.metadata.resourceVersion ?? "",
  };

  call.progress({ action: "create-pod" });
  const podAction = await call.intent("k8s.pod.create", {
    object: call.podName,
    generation,
    fence: { kind: "absent" },
  });
  const pod = await cluster.createPod(call.ns, podManifest(identity, config, generation, call.desired), call.opts());
  await call.result(podAction, "k8s.pod.create", {
    object: call.podName,
    generation,
    outcome: createOutcome(pod.kind),
  });
  if (pod.kind === "created")
    return { kind: "created", resourceVersion: pod.object.metadata.resourceVersion ?? undefined };
  if (pod.kind === "already-exists") return { kind: "answer", answer: await loserPath(call, secretName, ours) };
  // A definite rejection: the pod cannot exist, so our Secret is litter now. Anything ambiguous (timeout, 5xx)
  // leaves it for the orphan sweep — the pod may exist and reference it.
  if (pod.error.kind === "status" && [400, 401, 403, 404, 422].includes(pod.error.code)) {
    await dropOwnSecret(call, secretName, ours, "failed-pod-create");
  }
  throw Answer.fail(catalogue.H3(call.podName, describeApiError(pod.error)));
}

async function ensureClaim(call: DeployCall, storage: string): Promise<void> {
  const { cluster } = call.deps;
  const { identity, config } = call.inputs;
  const name = claimNameFor(identity);
  const labels = labelsFor(identity, "2");
  const check = (claim: Parameters<typeof claimProblem>[0]) => {
    const problem = claimProblem(claim, labels, identity, storage, config.workspaceStorageClass);
    if (problem) throw Answer.fail(catalogue.claim(name, problem));
  };
  const got = await cluster.getClaim(call.ns, name, call.opts());
  if (got.kind === "error") throw Answer.fail(catalogue.J2(name, describeApiError(got.error)));
  if (got.kind === "found") return check(got.object);
  const actionId = await call.intent("k8s.claim.create", { object: name, fence: { kind: "absent" } });
  const created = await cluster.createClaim(call.ns, claimManifest(identity, config, storage), call.opts());
  await call.result(actionId, "k8s.claim.create", { object: name, outcome: createOutcome(created.kind) });
  if (created.kind === "created") return;
  if (created.kind === "error") throw Answer.fail(catalogue.J3(name, describeApiError(created.error)));
  const again = await cluster.getClaim(call.ns, name, call.opts());
  if (again.kind !== "found")
    throw Answer.fail(catalogue.J4(name, again.kind === "error" ? describeApiError(again.error) : "NotFound"));
  check(again.object);
}
