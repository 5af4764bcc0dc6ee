/**
 * The slice of the Kubernetes object model berth reads, narrowed from `unknown` with zod at the adapter edge.
 * Unknown fields pass through untouched; fields berth never reads (Secret `data`, container messages aside from
 * their presence) are not modelled, so they cannot leak into a decision by accident.
 */
import { z } from "zod";

const StringMap = z.record(z.string(), z.string());

export const MetadataSchema = z.looseObject({
  name: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().nullish(),
  labels: StringMap.nullish(),
  annotations: StringMap.nullish(),
});

const ContainerStateSchema = z.looseObject({
  running: z.looseObject({ startedAt: z.string().nullish() }).nullish(),
  terminated: z.looseObject({ exitCode: z.number().optional(), reason: z.string().nullish() }).nullish(),
  waiting: z.looseObject({ reason: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

const EnvFromSchema = z.looseObject({ secretRef: z.looseObject({ name: z.string().optional() }).nullish() });

export const PodSchema = z.looseObject({
  metadata: MetadataSchema.default({}),
  spec: z
    .looseObject({
      nodeName: z.string().nullish(),
      containers: z
        .array(
          z.looseObject({
            name: z.string().optional(),
            image: z.string().nullish(),
            envFrom: z.array(EnvFromSchema).nullish(),
          }),
        )
        .default([]),
      terminationGracePeriodSeconds: z.number().nullish(),
    })
    .default({ containers: [] }),
  status: z
    .looseObject({
      phase: z.string().nullish(),
      conditions: z
        .array(
          z.looseObject({
            type: z.string(),
            status: z.string(),
            reason: z.string().nullish(),
            message: z.string().nullish(),
          }),
        )
        .nullish(),
      containerStatuses: z
        .array(
          z.looseObject({
            name: z.string(),
            state: ContainerStateSchema.nullish(),
            containerID: z.string().nullish(),
            restartCount: z.number().nullish(),
          }),
        )
        .nullish(),
    })
    .nullish(),
});
export type PodObject = z.infer<typeof PodSchema>;

/** A Secret as berth sees it: metadata only. The adapter drops `data`/`stringData` before anything else runs. */
export const SecretMetaSchema = z.looseObject({ metadata: MetadataSchema.default({}) });
export type SecretMeta = { readonly metadata: z.infer<typeof MetadataSchema> };

export const ClaimSchema = z.looseObject({
  metadata: MetadataSchema.default({}),
  spec: z
    .looseObject({
      accessModes: z.array(z.string()).nullish(),
      storageClassName: z.string().nullish(),
      resources: z.looseObject({ requests: StringMap.nullish() }).nullish(),
    })
    .nullish(),
});
export type ClaimObject = z.infer<typeof ClaimSchema>;

/**
 * The agent's own Secret: the *last* `envFrom.secretRef.name` across the pod's containers (§5.1 `secretRef`, §6 row 6).
 * Last, as Buzz's provider reads it (observe.rs `referenced_secret`): the per-attempt identity Secret is always the
 * last source, and a cluster-managed source (a team's shared env, say) may precede it. Reading the first one would
 * probe that shared Secret's existence instead, and a missing identity Secret would never be proved absent.
 */
export function agentSecretRef(pod: PodObject): string | null {
  const names = secretRefsOf(pod);
  return names.at(-1) ?? null;
}

/** Every Secret name a pod's containers reference through `envFrom` (GC protection, loser cleanup). */
export function secretRefsOf(pod: PodObject): string[] {
  const names: string[] = [];
  for (const container of pod.spec.containers) {
    for (const source of container.envFrom ?? []) if (source.secretRef?.name) names.push(source.secretRef.name);
  }
  return names;
}
