/**
 * Ownership and identity verification (spec/kubernetes.md §5). `verifyPod` is the only way to obtain a `VerifiedPod` or a
 * `Fence`: both brands are declared here, unexported, so an unverified object cannot reach `classify`, the GC planner
 * or a delete (I-3), and a delete can only carry a fence some observation produced (I-1).
 */
import type { Startup } from "./decode.js";
import {
  type AgentIdentity,
  BINDING_LABEL,
  type BindingVersion,
  INTENT_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PUBKEY_FULL_ANNOTATION,
} from "./naming.js";
import { type ClaimObject, agentSecretRef, type SecretMeta } from "./objects.js";
import type { QuorumPod } from "./quorum.js";

declare const fenceBrand: unique symbol;
declare const verifiedBrand: unique symbol;

/** The compare-and-delete fence: uid + resourceVersion of one observation. */
export type Fence = { readonly uid: string; readonly resourceVersion: string } & { readonly [fenceBrand]: true };

export interface VerifiedPodData {
  readonly name: string;
  readonly fence: Fence;
  /** `metadata.deletionTimestamp` set. There is no Terminating phase: a dying pod reads `Running` for its grace period. */
  readonly deletionMarked: boolean;
  readonly startup: Startup;
  /** The create-intent annotation verbatim, or null for a pod written before the annotation existed. */
  readonly recordedIntent: string | null;
  readonly binding: BindingVersion;
  readonly secretRef: string | null;
}
export type VerifiedPod = VerifiedPodData & { readonly [verifiedBrand]: true };

export type PodObservation =
  | { readonly kind: "absent" }
  | { readonly kind: "foreign"; readonly reason: string }
  | { readonly kind: "verified"; readonly pod: VerifiedPod };

export type ForeignReason =
  | "no management marker"
  | "unsupported binding version"
  | "identity annotation missing or different"
  | "missing name, uid or resourceVersion";

/** Checks 1–3 of §5.1, shared with Secrets (§5.2). */
function ownershipProblem(
  labels: Record<string, string> | null | undefined,
  annotations: Record<string, string> | null | undefined,
  who: AgentIdentity,
): ForeignReason | null {
  if (labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_VALUE) return "no management marker";
  const binding = labels?.[BINDING_LABEL];
  if (binding !== "1" && binding !== "2") return "unsupported binding version";
  // Two keys can share the 32-hex label; only the full annotation proves identity.
  if (annotations?.[PUBKEY_FULL_ANNOTATION] !== who.pubkey) return "identity annotation missing or different";
  return null;
}

export function verifyPod(q: QuorumPod, who: AgentIdentity, startup: Startup): PodObservation {
  const meta = q.metadata;
  const problem = ownershipProblem(meta.labels, meta.annotations, who);
  if (problem) return { kind: "foreign", reason: problem };
  if (!meta.name || !meta.uid || !meta.resourceVersion)
    return { kind: "foreign", reason: "missing name, uid or resourceVersion" };
  const fence = { uid: meta.uid, resourceVersion: meta.resourceVersion } as Fence;
  const pod = {
    name: meta.name,
    fence,
    deletionMarked: meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null,
    startup,
    recordedIntent: meta.annotations?.[INTENT_ANNOTATION] ?? null,
    binding: meta.labels?.[BINDING_LABEL] as BindingVersion,
    secretRef: agentSecretRef(q),
  } as VerifiedPod;
  return { kind: "verified", pod };
}

/** §5.2: a Secret is ours iff checks 1–3 hold and it has a name and uid. Only our Secrets are ever deleted. */
export function isOurSecret(secret: SecretMeta, who: AgentIdentity): boolean {
  const m = secret.metadata;
  return ownershipProblem(m.labels, m.annotations, who) === null && Boolean(m.name) && Boolean(m.uid);
}

export type ClaimProblem =
  | "has no ownership labels"
  | "already exists but is not owned by this Buzz agent"
  | "has no identity annotation"
  | "belongs to a different agent identity"
  | "is missing its requested shape"
  | "exists without a spec"
  | "already exists with a different storage request; resize or replace it with cluster tools before retrying"
  | "already exists with a different storage class"
  | "does not allow ReadWriteOnce access";

/** §5.2 for claims, in J-row catalogue order. `desiredLabels` carries binding "2" exactly. */
export function claimProblem(
  claim: ClaimObject,
  desiredLabels: Record<string, string>,
  who: AgentIdentity,
  storage: string,
  storageClass: string | null,
): ClaimProblem | null {
  const labels = claim.metadata.labels;
  if (!labels || Object.keys(labels).length === 0) return "has no ownership labels";
  for (const [k, v] of Object.entries(desiredLabels))
    if (labels[k] !== v) return "already exists but is not owned by this Buzz agent";
  const full = claim.metadata.annotations?.[PUBKEY_FULL_ANNOTATION];
  if (full === undefined) return "has no identity annotation";
  if (full !== who.pubkey) return "belongs to a different agent identity";
  if (!claim.spec) return "exists without a spec";
  const requested = claim.spec.resources?.requests?.storage;
  if (requested === undefined) return "is missing its requested shape";
  if (requested !== storage)
    return "already exists with a different storage request; resize or replace it with cluster tools before retrying";
  if (storageClass !== null && claim.spec.storageClassName !== storageClass)
    return "already exists with a different storage class";
  if (!(claim.spec.accessModes ?? []).includes("ReadWriteOnce")) return "does not allow ReadWriteOnce access";
  return null;
}
