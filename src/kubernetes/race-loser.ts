/**
 * Losing the create race (spec/kubernetes.md §8.8): another deploy of this agent created the pod first. The loser drops
 * its own Secret and then only observes; what each observation means is the pure `loserStep` table.
 */
import { catalogue } from "../core/kubernetes/catalogue.js";
import { latestCondition } from "../core/kubernetes/condition.js";
import { assertNever } from "../core/kubernetes/classify.js";
import { loserStep } from "../core/kubernetes/loop-rules.js";
import { pullFailureMessage } from "../core/kubernetes/pull-failure.js";
import type { ObjectPrecondition } from "./cluster.js";
import { dropOwnSecret } from "./audited-mutation.js";
import { Answer, type DeployAnswer, type DeployCall } from "./deploy-call.js";
import type { Observation } from "./observe.js";

export async function loserPath(call: DeployCall, secretName: string, ours: ObjectPrecondition): Promise<DeployAnswer> {
  call.lastAction = "race-lost";
  const first = await call.observe();
  await dropOwnSecret(call, secretName, ours, "race-loser");
  if (first.kind === "foreign") throw Answer.fail(catalogue.K5(call.podName));
  let carried: Observation | undefined = first.kind === "error" ? undefined : first;
  for (;;) {
    const obs = await call.next(carried, (condition) => catalogue.K6(call.budget.deadlineSeconds, call.podName, condition));
    carried = undefined;
    if (obs.kind === "foreign") throw Answer.fail(catalogue.K5(call.podName));
    call.waiter.observed(obs.kind === "verified" ? (obs.raw.metadata.resourceVersion ?? undefined) : undefined);
    const step = loserStep(obs.kind === "verified" ? obs.pod : null);
    switch (step.kind) {
      case "succeed":
        return { ok: true, agentId: step.agentId };
      case "winner-dying":
        throw Answer.fail(catalogue.K7(call.podName));
      case "winner-did-not-start":
        throw Answer.fail(catalogue.K8(call.podName, obs.kind === "verified" ? latestCondition(obs.raw) : ""));
      case "report":
        throw Answer.fail(catalogue.K2(call.podName, pullFailureMessage(step.failure, call.inputs.config.image)));
      case "wait":
        await call.waiter.wait();
        break;
      default:
        assertNever(step);
    }
  }
}
