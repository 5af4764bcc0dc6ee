/**
 * What the real-node tier's files share: the stack's facts (injected by global-setup.ts), a client, deploy requests
 * sized for a 2-CPU node, and waits on the kubelet's own status writes. The provider, the verbs, keys, the audit reader
 * and the TLS proxy are the conformance suite's (test/k8s/conformance/support.ts), so a row reads the same against
 * both kubelets.
 */
import { CoreV1Api, KubeConfig, type V1ContainerStatus, type V1Pod } from "@kubernetes/client-node";
import { inject } from "vitest";
import type { ControlPlane } from "../k8s/control-plane.js";
import { deployRequest, readPod, type TestAgent, until } from "../k8s/conformance/support.js";
import type { RealNode } from "./stack.js";

const provided = inject("realNode");
/** Why the tier cannot run here (outside CI only; in CI global setup fails instead), or null. */
export const skipReason: string | null = "skip" in provided ? provided.skip : null;
export const node = provided as RealNode;

let client: CoreV1Api | undefined;
export function core(): CoreV1Api {
  if (client === undefined) {
    const kc = new KubeConfig();
    kc.loadFromFile(node.kubeconfig);
    client = kc.makeApiClient(CoreV1Api);
  }
  return client;
}

/** The stack's PKI has the file names the conformance proxy reads (ca.crt, serving.*, admin.*). */
export function asControlPlane(): ControlPlane {
  return { server: node.server, pkiDir: `${node.dir}/pki`, kubeconfigPath: node.kubeconfig } as unknown as ControlPlane;
}

/**
 * A deploy request for this node: berth's default requests (1 CPU, 2 Gi) fit only twice on the 2-CPU node, and pods
 * of earlier tests may still be terminating, so every row asks for little unless it is about requests.
 */
export function request(
  agent: TestAgent,
  namespace: string,
  config: Record<string, unknown> = {},
): Record<string, unknown> {
  return deployRequest(agent, namespace, {
    image: node.images.agent,
    cpu_request: "10m",
    memory_request: "32Mi",
    ...config,
  });
}

export function agentStatus(pod: V1Pod | undefined): V1ContainerStatus | undefined {
  return pod?.status?.containerStatuses?.find((c) => c.name === "agent");
}

/** Waits until the pod satisfies `ok` (the kubelet's writes, read through the apiserver). */
export async function podWhere(
  namespace: string,
  name: string,
  what: string,
  ok: (p: V1Pod) => boolean,
  timeoutMs = 60_000,
): Promise<V1Pod> {
  return until(
    `${namespace}/${name}: ${what}`,
    async () => {
      const p = await readPod(core(), namespace, name);
      return p !== undefined && ok(p) ? p : undefined;
    },
    timeoutMs,
  );
}

/** Deletes a test's namespace without waiting: its pods stop in the background and free the node's resources. */
export async function dropNamespace(namespace: string): Promise<void> {
  await core()
    .deleteNamespace({ name: namespace, gracePeriodSeconds: 0 })
    .catch(() => undefined);
}
