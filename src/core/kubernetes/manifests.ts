/**
 * Pod, Secret, claim and namespace bodies (spec/kubernetes.md §14). berth's objects must be indistinguishable from Buzz's
 * for the same inputs: exactly three labels, the listed annotations, nothing else (provenance lives in the audit chain).
 */
import type { ProviderConfig } from "./config.js";
import type { AgentEnv } from "./env.js";
import {
  AGENT_CONTAINER,
  type AgentIdentity,
  type BindingVersion,
  claimNameFor,
  IMAGE_ANNOTATION,
  INTENT_ANNOTATION,
  labelsFor,
  PUBKEY_FULL_ANNOTATION,
  secretNameFor,
} from "./naming.js";

export const WORKSPACE_MOUNT_PATH = "/home/agent";
export const RUN_AS = 10001;
export const GRACE_SECONDS = 60;

export function bindingOf(config: Pick<ProviderConfig, "workspaceStorage">): BindingVersion {
  return config.workspaceStorage !== null ? "2" : "1";
}

export function podManifest(
  who: AgentIdentity,
  config: ProviderConfig,
  generation: string,
  fingerprint: string,
): Record<string, unknown> {
  const binding = bindingOf(config);
  const opts = config.podOptions;
  const requests: Record<string, string> = { cpu: config.cpuRequest, memory: config.memoryRequest };
  const limits: Record<string, string> = { cpu: config.cpuLimit, memory: config.memoryLimit };
  if (opts?.ephemeralStorageRequest !== undefined) requests["ephemeral-storage"] = opts.ephemeralStorageRequest;
  if (opts?.ephemeralStorageLimit !== undefined) limits["ephemeral-storage"] = opts.ephemeralStorageLimit;
  const workspace =
    config.workspaceStorage !== null
      ? { name: "workspace", persistentVolumeClaim: { claimName: claimNameFor(who), readOnly: false } }
      : {
          name: "workspace",
          emptyDir: opts?.workspaceSizeLimit !== undefined ? { sizeLimit: opts.workspaceSizeLimit } : {},
        };
  const spec: Record<string, unknown> = {
    // Never: an intentional exit (owner !shutdown, inactivity reap) is final.
    restartPolicy: "Never",
    // The harness's declared shutdown budget; 30 s would kill it mid-drain.
    terminationGracePeriodSeconds: GRACE_SECONDS,
    automountServiceAccountToken: false,
  };
  if (config.serviceAccount !== null) spec.serviceAccountName = config.serviceAccount;
  if (opts?.nodeSelector) spec.nodeSelector = { ...opts.nodeSelector };
  if (opts?.tolerations) spec.tolerations = opts.tolerations.map((t) => ({ ...t }));
  if (opts?.activeDeadlineSeconds !== undefined) spec.activeDeadlineSeconds = opts.activeDeadlineSeconds;
  spec.securityContext = {
    runAsNonRoot: true,
    runAsUser: RUN_AS,
    runAsGroup: RUN_AS,
    fsGroup: RUN_AS,
    seccompProfile: { type: "RuntimeDefault" },
  };
  spec.containers = [
    {
      name: AGENT_CONTAINER,
      image: config.image,
      // A required envFrom prevents an identity-less start.
      envFrom: [{ secretRef: { name: secretNameFor(who, generation), optional: false } }],
      // setup_pending (Buzz's pilot line): the pod UID from the API; explicit env wins over envFrom, so the Secret
      // cannot spoof it.
      ...(opts?.setupPending
        ? {
            env: [
              { name: "BUZZ_PILOT_POD_UID", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.uid" } } },
            ],
          }
        : {}),
      resources: { requests, limits },
      volumeMounts: [{ name: "workspace", mountPath: WORKSPACE_MOUNT_PATH }],
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
    },
  ];
  spec.volumes = [workspace];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: who.podName,
      namespace: config.namespace,
      labels: labelsFor(who, binding),
      annotations: {
        [PUBKEY_FULL_ANNOTATION]: who.pubkey,
        [INTENT_ANNOTATION]: fingerprint,
        [IMAGE_ANNOTATION]: config.image,
      },
    },
    spec,
  };
}

/** One immutable Secret per attempt; `stringData`, never `data`; type unset (Opaque). */
export function secretManifest(
  who: AgentIdentity,
  config: ProviderConfig,
  generation: string,
  env: AgentEnv,
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: secretNameFor(who, generation),
      namespace: config.namespace,
      labels: labelsFor(who, bindingOf(config)),
      annotations: { [PUBKEY_FULL_ANNOTATION]: who.pubkey },
    },
    immutable: true,
    stringData: { ...env },
  };
}

export function claimManifest(who: AgentIdentity, config: ProviderConfig, storage: string): Record<string, unknown> {
  const spec: Record<string, unknown> = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage } } };
  if (config.workspaceStorageClass !== null) spec.storageClassName = config.workspaceStorageClass;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claimNameFor(who),
      namespace: config.namespace,
      labels: labelsFor(who, "2"),
      annotations: { [PUBKEY_FULL_ANNOTATION]: who.pubkey },
    },
    spec,
  };
}

/** §12 step 3: a Namespace carrying only its name. */
export function namespaceManifest(namespace: string): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } };
}
