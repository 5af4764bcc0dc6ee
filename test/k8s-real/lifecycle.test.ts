/**
 * The deploy state machine's rows whose truth lives in the kubelet (issue 34), against a real kubelet, containerd and
 * runc (tools/k8s/stack.sh): started is `state.running` of a real process, a killed harness is `Failed` 137, a pod in
 * its grace period still reads `Running`, a harness that exits at once is never `started`. Judged from /proc, the
 * Kubernetes API and the audit chain the provider wrote.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type ApiProxy,
  auditOf,
  freshNamespace,
  isPodCreate,
  isPodGet,
  newAgent,
  podsIn,
  removeTempDirs,
  runBerth,
  runProvider,
  startApiProxy,
  tempHome,
  until,
} from "../k8s/conformance/support.js";
import { killAll } from "../support/process.js";
import { alive, containerPid, uidOf } from "./stack.js";
import { agentStatus, asControlPlane, core, dropNamespace, node, podWhere, request, skipReason } from "./support.js";

const namespaces: string[] = [];
const fresh = (tag: string) => {
  const ns = freshNamespace(`real-${tag}`);
  namespaces.push(ns);
  return ns;
};
const proxies: ApiProxy[] = [];
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
});
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
  removeTempDirs();
});

const lastOutcome = (home: string) => auditOf(home, "k8s.deploy.outcome").at(-1);
const livePods = async (ns: string) =>
  (await podsIn(core(), ns)).filter(
    (p) => p.metadata?.deletionTimestamp === undefined && agentStatus(p)?.state?.running,
  );

describe.skipIf(skipReason !== null)("the deploy state machine on a real kubelet", () => {
  it("a fresh deploy answers ok once the harness really runs (its process in /proc, as uid 10001), and deploying again is a one-request no-op", async () => {
    const ns = fresh("run");
    const agent = newAgent();
    const home = tempHome("real-run");
    const first = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
    expect(first.answer).toEqual({ ok: true, agent_id: agent.podName });

    const pod = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    const status = agentStatus(pod);
    expect(status?.state?.running).toBeDefined();
    expect(pod.spec?.nodeName).toBe(node.nodeName);
    // The kubelet reports the digest it ran; berth's pod names it in the image field.
    expect(status?.imageID).toBe(node.images.agent);
    const pid = containerPid(status?.containerID ?? "");
    expect(pid, "the container's first process in /proc").toBeDefined();
    expect(alive(pid as number)).toBe(true);
    expect(uidOf(pid as number)).toBe(10001);

    const again = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
    expect(again.answer).toEqual({ ok: true, agent_id: agent.podName });
    expect(lastOutcome(home)).toMatchObject({
      ok: true,
      created_this_call: false,
      last_action: "no-op",
      api_requests: 1,
    });
    expect((await core().readNamespacedPod({ namespace: ns, name: agent.podName })).metadata?.uid).toBe(
      pod.metadata?.uid,
    );
    expect(alive(pid as number)).toBe(true);
  });

  it("kill -9 of the harness leaves the pod Failed with 137 (restartPolicy Never), berth reports terminated, and the next deploy replaces it with a fenced delete, never two live pods", async () => {
    const ns = fresh("kill");
    const agent = newAgent();
    const home = tempHome("real-kill");
    expect((await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home })).answer).toEqual({
      ok: true,
      agent_id: agent.podName,
    });
    const before = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    const pid = containerPid(agentStatus(before)?.containerID ?? "") as number;
    expect(alive(pid)).toBe(true);

    process.kill(pid, "SIGKILL");
    const failed = await podWhere(ns, agent.podName, "Failed after kill -9", (p) => p.status?.phase === "Failed");
    expect(agentStatus(failed)?.state?.terminated?.exitCode).toBe(137);
    expect(agentStatus(failed)?.restartCount).toBe(0);
    expect(alive(pid)).toBe(false);

    const status = await runBerth(["k8s", "status", "--pubkey", agent.pubkey, "--namespace", ns, "--json"], {
      kubeconfig: node.kubeconfig,
      home,
    });
    expect(JSON.parse(status.stdout)).toMatchObject({ observed: "verified", startup: "terminated" });

    const replaced = await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home });
    expect(replaced.answer).toEqual({ ok: true, agent_id: agent.podName });
    const deletes = auditOf(home, "k8s.pod.delete", "intent");
    expect(deletes).toHaveLength(1);
    // The delete carried the fence of the pod it judged: that uid, that resourceVersion.
    expect(JSON.stringify(deletes[0])).toContain(before.metadata?.uid as string);
    const after = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(after.metadata?.uid).not.toBe(before.metadata?.uid);
    expect(await livePods(ns)).toHaveLength(1);
    expect(alive(containerPid(agentStatus(after)?.containerID ?? "") ?? -1)).toBe(true);
  });

  it("a pod in its grace period (a harness that ignores SIGTERM) still reads Running, and the deploy awaits its disappearance instead of taking the no-op", async () => {
    const ns = fresh("grace");
    const agent = newAgent();
    const home = tempHome("real-grace");
    const cfg = { image: node.images.stubborn };
    expect((await runProvider(request(agent, ns, cfg), { kubeconfig: node.kubeconfig, home })).answer).toEqual({
      ok: true,
      agent_id: agent.podName,
    });
    const before = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    const pid = containerPid(agentStatus(before)?.containerID ?? "") as number;

    // Someone deletes the pod with a grace period the harness will sit out.
    await core().deleteNamespacedPod({ namespace: ns, name: agent.podName, gracePeriodSeconds: 20 });
    const deleting = await podWhere(
      ns,
      agent.podName,
      "deletion marked",
      (p) => p.metadata?.deletionTimestamp !== undefined,
    );
    expect(deleting.status?.phase).toBe("Running");
    expect(agentStatus(deleting)?.state?.running).toBeDefined();
    expect(alive(pid)).toBe(true);

    const proxy = await startApiProxy(asControlPlane());
    proxies.push(proxy);
    const r = await runProvider(request(agent, ns, cfg), {
      kubeconfig: proxy.kubeconfigPath,
      home,
      deadlineSeconds: 60,
    });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    expect(lastOutcome(home)).toMatchObject({ ok: true, created_this_call: true });
    // Await-disappearance, seen in API effects: the marked pod was read (200) until it was gone (404), no DELETE was
    // sent (it was already being deleted), and the one POST came after the 404.
    const q = proxy.requests;
    const post = q.findIndex(isPodCreate(ns));
    const gone = q.findIndex((x) => isPodGet(ns, agent.podName)(x) && x.status === 404);
    expect(q.some((x) => isPodGet(ns, agent.podName)(x) && x.status === 200)).toBe(true);
    expect(gone).toBeGreaterThanOrEqual(0);
    expect(post).toBeGreaterThan(gone);
    expect(q.filter((x) => x.method === "DELETE")).toEqual([]);
    // The old harness was gone (SIGKILLed at the end of its grace) before the new pod was created.
    expect(alive(pid)).toBe(false);
    const after = await core().readNamespacedPod({ namespace: ns, name: agent.podName });
    expect(after.metadata?.uid).not.toBe(before.metadata?.uid);
    expect(auditOf(home, "k8s.pod.delete", "intent")).toHaveLength(0);
  });

  it("a harness that exits at once is reported as not staying up, never as started (fails before the k8sfix branch: the real kubelet publishes state.running first)", async () => {
    const ns = fresh("crash");
    const agent = newAgent();
    const home = tempHome("real-crash");
    const r = await runProvider(request(agent, ns, { image: node.images.crash }), {
      kubeconfig: node.kubeconfig,
      home,
    });
    expect(r.answer.ok).toBe(false);
    expect(String(r.answer.error)).toContain(`${agent.podName} was created by this deploy and did not stay running`);
    const pod = await podWhere(ns, agent.podName, "Failed", (p) => p.status?.phase === "Failed");
    expect(agentStatus(pod)?.state?.terminated?.exitCode).toBe(3);
  });

  it("berth k8s logs shows what the harness container really wrote", async () => {
    const ns = fresh("logs");
    const agent = newAgent();
    const home = tempHome("real-logs");
    expect((await runProvider(request(agent, ns), { kubeconfig: node.kubeconfig, home })).answer).toEqual({
      ok: true,
      agent_id: agent.podName,
    });
    const logs = await until(
      "the harness's line in berth k8s logs",
      async () => {
        const r = await runBerth(["k8s", "logs", "--pubkey", agent.pubkey, "--namespace", ns], {
          kubeconfig: node.kubeconfig,
          home,
        });
        return r.stdout.includes("berth-node harness up as 10001") ? r : undefined;
      },
      30_000,
    );
    expect(logs.code).toBe(0);
  });
});
