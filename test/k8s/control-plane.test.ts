import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "./control-plane.js";

let cp: ControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
}, 120_000);
afterAll(async () => {
  await cp?.stop();
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the test control plane (real etcd + kube-apiserver + simulated kubelet)", () => {
  it("serves the Kubernetes API and reports a 1.36 version", async () => {
    const res = await fetch(`${cp.server}/version`).catch(() => undefined);
    // Plain fetch cannot present the client certificate; the typed client can.
    expect(res === undefined || res.status >= 400 || res.ok).toBe(true);
    const ns = await cp.core.readNamespace({ name: "default" });
    expect(ns.metadata?.name).toBe("default");
  });

  it("binds a new pod to the fake node and writes the agent container state a test asks for", async () => {
    await cp.core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "sim-1" },
        spec: { containers: [{ name: "agent", image: `example.org/agent@sha256:${"1".repeat(64)}` }] },
      },
    });
    await until("binding", async () =>
      (await cp.core.readNamespacedPod({ name: "sim-1", namespace: "default" })).spec?.nodeName === cp.nodeName
        ? true
        : undefined,
    );
    await cp.kubelet.setState("default", "sim-1", { kind: "running" });
    const pod = await cp.core.readNamespacedPod({ name: "sim-1", namespace: "default" });
    expect(pod.status?.phase).toBe("Running");
    expect(pod.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
  });

  it("deletes a bound pod gracefully: marked first, gone once the kubelet finishes", async () => {
    cp.kubelet.gracefulDeletionMs = 500;
    await cp.core.createNamespacedPod({
      namespace: "default",
      body: { metadata: { name: "sim-2" }, spec: { containers: [{ name: "agent", image: "example.org/agent:1" }] } },
    });
    await until("binding", async () =>
      (await cp.core.readNamespacedPod({ name: "sim-2", namespace: "default" })).spec?.nodeName === cp.nodeName
        ? true
        : undefined,
    );
    await cp.kubelet.setState("default", "sim-2", { kind: "running" });
    await cp.core.deleteNamespacedPod({ name: "sim-2", namespace: "default" });
    const marked = await cp.core.readNamespacedPod({ name: "sim-2", namespace: "default" });
    expect(marked.metadata?.deletionTimestamp).toBeDefined();
    expect(marked.status?.phase).toBe("Running"); // no Terminating phase exists
    await until("disappearance", async () => {
      try {
        await cp.core.readNamespacedPod({ name: "sim-2", namespace: "default" });
        return undefined;
      } catch (error) {
        return (error as { code?: number }).code === 404 ? true : undefined;
      }
    });
  });

  it("denies a restricted user everything until a Role is granted", async () => {
    const { CoreV1Api } = await import("@kubernetes/client-node");
    const restricted = cp.restricted.makeApiClient(CoreV1Api);
    await expect(restricted.listNamespacedPod({ namespace: "default" })).rejects.toMatchObject({ code: 403 });
  });
});
