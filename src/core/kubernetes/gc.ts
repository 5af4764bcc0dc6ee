/**
 * The preflight GC planner (spec/kubernetes.md §11 step 3), pure. Hygiene only, so it errs towards keeping things: an
 * unverified pod is never planned and never protects a Secret; a Secret referenced by any surviving pod of ours is
 * protected whether that pod started or not; orphans age out only by the *server's* clock, both operands from the
 * apiserver, so a fast laptop clock can never expire a Secret an in-flight deploy is about to reference.
 */
import { isTerminated } from "./decode.js";
import type { AgentIdentity } from "./naming.js";
import { type SecretMeta, secretRefsOf } from "./objects.js";
import type { QuorumPod } from "./quorum.js";
import { type Fence, isOurSecret, verifyPod } from "./verify.js";

/** 2 × the maximum deadline (600 s): a fresh Secret must outlive every attempt that could still reference it. */
export const ORPHAN_AGE_MS = 1_200_000;

export interface SecretPrecondition {
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
}

export interface GcPlan {
  /** Terminated pods of ours, with the LIST's fence (execution re-reads and uses the new fence). */
  readonly doomedPods: ReadonlyArray<{
    readonly name: string;
    readonly fence: Fence;
    readonly secrets: readonly SecretPrecondition[];
  }>;
  readonly orphanSecrets: readonly SecretPrecondition[];
}

function preconditionOf(secret: SecretMeta): SecretPrecondition | null {
  const m = secret.metadata;
  if (!m.name || !m.uid || !m.resourceVersion) return null;
  return { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion };
}

export function planGc(
  pods: readonly QuorumPod[],
  secrets: readonly SecretMeta[],
  who: AgentIdentity,
  serverNowMs: number | null,
): GcPlan {
  const ourSecrets = new Map<string, { meta: SecretMeta; pre: SecretPrecondition }>();
  for (const s of secrets) {
    if (!isOurSecret(s, who)) continue;
    const pre = preconditionOf(s);
    if (pre) ourSecrets.set(pre.name, { meta: s, pre });
  }
  const planned = new Set<string>();
  const protectedNames = new Set<string>();
  const doomedPods: Array<{ name: string; fence: Fence; secrets: SecretPrecondition[] }> = [];
  for (const pod of pods) {
    const terminated = isTerminated(pod);
    const observed = verifyPod(pod, who, terminated ? { kind: "terminated" } : { kind: "recoverable" });
    if (observed.kind !== "verified") continue;
    const refs = secretRefsOf(pod);
    if (!terminated) {
      for (const r of refs) protectedNames.add(r);
      continue;
    }
    doomedPods.push({ name: observed.pod.name, fence: observed.pod.fence, secrets: [] });
  }
  // Protection first, so a Secret shared by a doomed and a surviving pod is kept.
  for (const doomed of doomedPods) {
    const pod = pods.find((p) => p.metadata.uid === doomed.fence.uid);
    for (const r of pod ? secretRefsOf(pod) : []) {
      const ours = ourSecrets.get(r);
      if (!ours || protectedNames.has(r) || planned.has(r)) continue;
      planned.add(r);
      doomed.secrets.push(ours.pre);
    }
  }
  const orphanSecrets: SecretPrecondition[] = [];
  if (serverNowMs !== null) {
    for (const { meta, pre } of ourSecrets.values()) {
      if (protectedNames.has(pre.name) || planned.has(pre.name)) continue;
      const created = meta.metadata.creationTimestamp ? Date.parse(meta.metadata.creationTimestamp) : Number.NaN;
      if (!Number.isFinite(created)) continue;
      // floor to whole seconds; the boundary (exactly 1200 s) is eligible.
      if (Math.floor((serverNowMs - created) / 1000) * 1000 >= ORPHAN_AGE_MS) {
        planned.add(pre.name);
        orphanSecrets.push(pre);
      }
    }
  }
  return { doomedPods, orphanSecrets };
}
