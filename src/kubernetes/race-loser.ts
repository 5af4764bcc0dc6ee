/**
 * Losing the create race (spec/kubernetes.md §8.8): another deploy of this agent created the pod first. The loser drops
 * its own Secret and then only observes; what each observation means is the pure `loserStep` table.
 */
import { catalogue } from "../core/kubernetes/catalogue.js";
import { latestCondition } from "../core/kubernetes/condition.js";
import { assertNever } from "../core/kubernetes/classify.js";
import { loserStep } from "../core/kubernetes/loop-rules.js";
import { confirmStart, runningInstance } from "../core/kubernetes/confirm.js";
import { failingImage, pullFailureMessage } from "../core/kubernetes/pull-failure.js";
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
    const obs = await call.next(carried, (condition) => catalogue.K6(call.elapsedSeconds(), call.podName, condition));
    carried = undefined;
    if (obs.kind === "foreign") throw Answer.fail(catalogue.K5(call.podName));
    call.waiter.observed(obs.kind === "verified" ? (obs.raw.metadata.resourceVersion ?? undefined) : undefined);
    const step = loserStep(obs.kind === "verified" ? obs.pod : null);
    switch (step.kind) {
      case "succeed": {
        // The winner's container started after our create was refused: confirm it stays up, as the winner's own call
        // does (issue 34), so the loser never answers success for a harness that crashed at start.
        if (obs.kind !== "verified") throw new Error("unreachable: a started winner without a verified pod");
        const confirmation = confirmStart(
          call.runningSeen,
          runningInstance(obs.raw),
          call.deps.clock.now(),
          call.deps.wait.confirmStartMs,
        );
        if (confirmation.kind === "confirmed") return { ok: true, agentId: step.agentId };
        call.runningSeen = confirmation.seen;
        await call.waiter.waitUntil(confirmation.until);
        break;
      }
      case "winner-dying":
        throw Answer.fail(catalogue.K7(call.podName));
      case "winner-did-not-start":
        throw Answer.fail(catalogue.K8(call.podName, obs.kind === "verified" ? latestCondition(obs.raw) : ""));
      case "report":
        throw Answer.fail(
          catalogue.K2(
            call.podName,
            pullFailureMessage(
              step.failure,
              obs.kind === "verified" ? failingImage(obs.raw, call.inputs.config.image) : call.inputs.config.image,
            ),
          ),
        );
      case "wait":
        await call.waiter.wait();
        break;
      default:
        assertNever(step);
    }
  }
}
