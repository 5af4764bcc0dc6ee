/**
 * The rows where a real pod waits (issue 34): pull failures as containerd and the kubelet really word them (a closed
 * port, a registry answering 404 and 401), a missing Secret, requests no node can satisfy, a changed request on a
 * never-started pod, namespace deletion, and a node whose kubelet stopped. Nothing here may delete a pod on a hint.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  auditOf,
  buzzShapedPod,
  deployRequest,
  freshNamespace,
  generation,
  isPodDelete,
  newAgent,
  podsIn,
  removeTempDirs,
  runProvider,
  secretPath,
  startApiProxy,
  startProvider,
  tempHome,
  until,
  type ApiProxy,
} from "../k8s/conformance/support.js";
import { killAll } from "../support/process.js";
import { alive, containerPid, kubelet } from "./stack.js";
import { agentStatus, asControlPlane, core, dropNamespace, node, podWhere, request, skipReason } from "./support.js";

const namespaces: string[] = [];
const proxies: ApiProxy[] = [];
const fresh = (tag: string) => {
  const ns = freshNamespace(`real-${tag}`);
  namespaces.push(ns);
  return ns;
};
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
});
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
  removeTempDirs();
});

/** A digest that no store holds, without the substrings 401/403/404 (a classifier reading free text could trip on them). */
function unknownDigest(): string {
  for (;;) {
    const hex = randomBytes(32).toString("hex");
    if (!/40[134]/.test(hex)) return `sha256:${hex}`;
  }
}

describe.skipIf(skipReason !== null)("waiting pods on a real kubelet", () => {
  it("a digest the registry does not have (404) is ErrImagePull, answered at once as an unknown manifest, and the pod is never deleted", async () => {
    const ns = fresh("pull404");
    const agent = newAgent();
    const home = tempHome("real-404");
    const image = `${node.registry}/gone@${unknownDigest()}`;
    const r = await runProvider(request(agent, ns, { image }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 60,
    });
    expect(r.answer).toEqual({
      ok: false,
      error: `${agent.podName} did not start: ${node.registry} has no image at ${image}. Check the digest and repository.`,
    });
    expect(r.ms).toBeLessThan(45_000);
    const pod = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(["ErrImagePull", "ImagePullBackOff"]).toContain(agentStatus(pod)?.state?.waiting?.reason);
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("a deploy with a fixed image while the earlier pod still fails to pull names the failing pod's image, not the configured one, and deletes nothing (the seed: a pull failure never reaches delete, even under divergent intent)", async () => {
    const ns = fresh("pullfixed");
    const agent = newAgent();
    const home = tempHome("real-pullfixed");
    const failing = `${node.registry}/gone@${unknownDigest()}`;
    const first = await runProvider(request(agent, ns, { image: failing }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 60,
    });
    expect(first.answer.ok).toBe(false);
    const fixed = `${node.registry}/fixed@${unknownDigest()}`;
    const again = await runProvider(request(agent, ns, { image: fixed }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 60,
    });
    expect(again.answer).toEqual({
      ok: false,
      error: `${agent.podName} did not start: ${node.registry} has no image at ${failing}. Check the digest and repository.`,
    });
    const pod = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(pod.spec?.containers[0]?.image).toBe(failing);
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("a registry that answers 401 is reported at once as not authorized, and the pod is never deleted", async () => {
    const ns = fresh("pull401");
    const agent = newAgent();
    const home = tempHome("real-401");
    const image = `${node.registry}/locked@${unknownDigest()}`;
    const r = await runProvider(request(agent, ns, { image }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 60,
    });
    expect(r.answer.ok).toBe(false);
    expect(String(r.answer.error)).toContain(`the cluster is not authorized to pull ${image} from ${node.registry}`);
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("a pull refused by a closed port is a network failure that may heal: observed until the deadline, never reported as unauthorized even when the digest contains 401 (fails before the k8sfix branch: substrings of the URL decide)", async () => {
    const ns = fresh("pullnet");
    const agent = newAgent();
    const home = tempHome("real-net");
    // berth.invalid resolves to the closed port 127.0.0.1:1 inside the node (certs.d/berth.invalid/hosts.toml).
    const image = `berth.invalid/harness@sha256:401${randomBytes(32).toString("hex").slice(3)}`;
    // 30 s: the shortest deadline berth accepts.
    const r = await runProvider(request(agent, ns, { image }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 30,
    });
    expect(r.answer.ok).toBe(false);
    expect(String(r.answer.error)).not.toContain("not authorized");
    // The seconds named are the ones really waited (up to the 30 s asked for).
    expect(String(r.answer.error)).toMatch(new RegExp(`^startup not confirmed within \\d+s for ${agent.podName}: `));
    const pod = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(["ErrImagePull", "ImagePullBackOff"]).toContain(agentStatus(pod)?.state?.waiting?.reason);
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("a pod whose Secret is missing shows CreateContainerConfigError, and is replaced with a fenced delete only after a most-recent read confirms the Secret's absence", async () => {
    const ns = fresh("secret");
    const agent = newAgent();
    const home = tempHome("real-secret");
    await core().createNamespace({ body: { metadata: { name: ns } } });
    // Another writer's pod (§14 built by hand) whose Secret was never written.
    const gen = generation();
    const shaped = buzzShapedPod(agent, { generation: gen });
    const container = shaped.spec?.containers[0];
    if (container) {
      container.image = node.images.agent;
      container.resources = { requests: { cpu: "10m", memory: "32Mi" }, limits: { cpu: "2", memory: "4Gi" } };
    }
    const created = await core().createNamespacedPod({ namespace: ns, body: shaped });
    await podWhere(
      ns,
      agent.podName,
      "CreateContainerConfigError",
      (p) => agentStatus(p)?.state?.waiting?.reason === "CreateContainerConfigError",
    );

    const proxy = await startApiProxy(asControlPlane());
    proxies.push(proxy);
    const r = await runProvider(request(agent, ns), { kubeconfig: proxy.kubeconfigPath, home });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    const secretRead = proxy.requests.findIndex(
      (q) => q.method === "GET" && q.path.split("?")[0] === secretPath(ns, `${agent.podName}-${gen}`),
    );
    const podDelete = proxy.requests.findIndex(isPodDelete(ns, agent.podName));
    expect(secretRead, "the quorum read of the referenced Secret").toBeGreaterThanOrEqual(0);
    expect(proxy.requests[secretRead]?.status).toBe(404);
    expect(podDelete).toBeGreaterThan(secretRead);
    expect(JSON.parse(proxy.requests[podDelete]?.body || "{}")).toMatchObject({
      preconditions: { uid: created.metadata?.uid },
    });
    const now = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(now.metadata?.uid).not.toBe(created.metadata?.uid);
    expect(agentStatus(now)?.state?.running).toBeDefined();
  });

  it("requests no node can satisfy leave the pod Pending and Unschedulable: observed until the deadline with the scheduler's reason, never deleted", async () => {
    const ns = fresh("unsched");
    const agent = newAgent();
    const home = tempHome("real-unsched");
    const r = await runProvider(request(agent, ns, { cpu_request: "64", cpu_limit: "64" }), {
      kubeconfig: node.kubeconfig,
      home,
      deadlineSeconds: 30,
    });
    expect(r.answer.ok).toBe(false);
    expect(String(r.answer.error)).toMatch(new RegExp(`^startup not confirmed within \\d+s for ${agent.podName}: `));
    expect(String(r.answer.error)).toContain("Insufficient cpu");
    // Answered at its deadline, not minutes later.
    expect(r.ms).toBeLessThan(45_000);
    const pod = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(pod.status?.phase).toBe("Pending");
    expect(pod.status?.conditions?.find((c) => c.type === "PodScheduled")).toMatchObject({
      status: "False",
      reason: "Unschedulable",
    });
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("berth's default requests fit a small node: three agents deployed with the defaults all start on the 2-CPU node (fails before the k8sfix branch: 1 CPU each leaves the third Unschedulable until the deadline)", async () => {
    const ns = fresh("defaults");
    const home = tempHome("real-defaults");
    for (let i = 0; i < 3; i++) {
      const agent = newAgent();
      // No cpu_request or memory_request: the provider's defaults.
      const r = await runProvider(deployRequest(agent, ns, { image: node.images.agent }), {
        kubeconfig: node.kubeconfig,
        home,
        deadlineSeconds: 30,
      });
      expect(r.answer, `agent ${i + 1} of 3`).toEqual({ ok: true, agent_id: agent.podName });
    }
    // Their requests are freed at once for the rows after this one.
    for (const p of await podsIn(core(), ns))
      await core().deleteNamespacedPod({ namespace: ns, name: p.metadata?.name as string, gracePeriodSeconds: 0 });
  });

  it("a changed resource request on a never-started pod is divergent intent: a fenced replace, and the new pod runs", async () => {
    const ns = fresh("diverge");
    const agent = newAgent();
    const home = tempHome("real-diverge");
    // The first deploy leaves a never-started pod: it is stopped once the scheduler has said Unschedulable.
    const first = startProvider(request(agent, ns, { cpu_request: "64", cpu_limit: "64" }), {
      kubeconfig: node.kubeconfig,
      home,
    });
    const before = await podWhere(
      ns,
      agent.podName,
      "Unschedulable",
      (p) => p.status?.conditions?.some((c) => c.reason === "Unschedulable") === true,
    );
    first.proc.child.kill("SIGKILL");
    await first.proc.exited();
    expect(before.status?.phase).toBe("Pending");

    const r = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    const deletes = auditOf(home, "k8s.pod.delete", "intent");
    expect(deletes).toHaveLength(1);
    expect(JSON.stringify(deletes[0])).toContain(before.metadata?.uid as string);
    const after = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(after.metadata?.uid).not.toBe(before.metadata?.uid);
    expect(after.spec?.containers[0]?.resources?.requests?.cpu).toBe("10m");
    expect(agentStatus(after)?.state?.running).toBeDefined();
  });

  it("deleting the agent's namespace stops its harness process, and the next deploy recreates namespace, Secret and pod", async () => {
    const ns = fresh("nsdel");
    const agent = newAgent();
    const home = tempHome("real-nsdel");
    expect((await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home })).answer).toEqual({
      ok: true,
      agent_id: agent.podName,
    });
    const pid = containerPid(
      agentStatus(await core().readNamespacedPod({ namespace: ns, name: agent.podName }))?.containerID ?? "",
    ) as number;
    expect(alive(pid)).toBe(true);
    await core().deleteNamespace({ name: ns });
    await until(
      "the namespace gone",
      async () => {
        try {
          await core().readNamespace({ name: ns });
          return undefined;
        } catch (error) {
          return (error as { code?: number }).code === 404 ? true : undefined;
        }
      },
      90_000,
    );
    expect(alive(pid)).toBe(false);
    const r = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    expect(await podsIn(core(), ns)).toHaveLength(1);
  });

  it("a node whose kubelet stopped goes NotReady; its running harness is left alone (a deploy neither deletes nor creates), and it is still the same process when the kubelet returns", async () => {
    const ns = fresh("notready");
    const agent = newAgent();
    const home = tempHome("real-notready");
    expect((await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home })).answer).toEqual({
      ok: true,
      agent_id: agent.podName,
    });
    const before = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    const pid = containerPid(agentStatus(before)?.containerID ?? "") as number;
    const ready = async () =>
      (await core().readNode({ name: node.nodeName })).status?.conditions?.find((c) => c.type === "Ready")?.status;
    kubelet(node, "stop");
    try {
      await until("node NotReady", async () => ((await ready()) !== "True" ? true : undefined), 60_000);
      const r = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
      expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
      expect(auditOf(home, "k8s.pod.create", "intent")).toHaveLength(1);
      expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
      expect(alive(pid)).toBe(true);
    } finally {
      kubelet(node, "start");
    }
    await until("node Ready again", async () => ((await ready()) === "True" ? true : undefined), 60_000);
    // The rows after this one need the node schedulable: the node controller lifts its taints after Ready.
    await until(
      "the node's taints lifted",
      async () =>
        ((await core().readNode({ name: node.nodeName })).spec?.taints ?? []).length === 0 ? true : undefined,
      60_000,
    );
    const after = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(alive(pid)).toBe(true);
  });
});
