/**
 * CrashLoopBackOff on a real kubelet (issue 34). berth's own pods are `restartPolicy: Never`, so the kubelet never
 * backs one off; a pod with berth's (or Buzz's) labels and `restartPolicy: Always` — another writer's, or one an
 * operator made by hand — does. What berth must do with it is the seed's, decided from the agent container's state
 * alone: a container waiting in `CrashLoopBackOff` is not started (phase `Running` notwithstanding), so `berth k8s
 * status` says so with the kubelet's own words, and a deploy whose intent differs replaces it with a fenced delete
 * (§7.1 rows 7–8) — never a second live pod, never a delete without the observed uid as its precondition.
 *
 * The row is timed by the kubelet's back-off, not by sleeps: it acts only once the kubelet has announced a back-off of
 * at least 40 s, so the container cannot be restarted (and briefly read as started) while berth reads it.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type ApiProxy,
  auditOf,
  buzzShapedPod,
  buzzShapedSecret,
  freshNamespace,
  generation,
  isPodDelete,
  newAgent,
  podsIn,
  removeTempDirs,
  runBerth,
  runProvider,
  startApiProxy,
  tempHome,
} from "../k8s/conformance/support.js";
import { killAll } from "../support/process.js";
import { alive, containerPid } from "./stack.js";
import { agentStatus, asControlPlane, core, dropNamespace, node, podWhere, request, skipReason } from "./support.js";

const namespaces: string[] = [];
const proxies: ApiProxy[] = [];
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
});
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
  removeTempDirs();
});

/** The kubelet's announced back-off in seconds (`back-off 40s restarting failed container=…`), or 0 while not backing off. */
function backOffSeconds(message: string | undefined): number {
  const m = /back-off (\d+)s/.exec(message ?? "");
  return m ? Number(m[1]) : 0;
}

describe.skipIf(skipReason !== null)("CrashLoopBackOff on a real kubelet", () => {
  it("a restartPolicy Always pod whose harness exits 3 is backed off by the kubelet: berth reads it as not started, and a deploy with another intent replaces it with a fenced delete, one live pod after", async () => {
    const ns = freshNamespace("real-crashloop");
    namespaces.push(ns);
    const agent = newAgent();
    const home = tempHome("real-crashloop");
    await core().createNamespace({ body: { metadata: { name: ns } } });
    const gen = generation();
    await core().createNamespacedSecret({ namespace: ns, body: buzzShapedSecret(agent, gen) });
    const shaped = buzzShapedPod(agent, { generation: gen });
    if (!shaped.spec) throw new Error("buzzShapedPod made no spec");
    shaped.spec.restartPolicy = "Always";
    const container = shaped.spec.containers[0];
    if (!container) throw new Error("buzzShapedPod made no container");
    container.image = node.images.crash;
    container.resources = { requests: { cpu: "10m", memory: "32Mi" }, limits: { cpu: "2", memory: "4Gi" } };
    const created = await core().createNamespacedPod({ namespace: ns, body: shaped });

    // The kubelet's sequence: running for milliseconds, terminated (exit 3), then waiting with a doubling back-off.
    const looping = await podWhere(
      ns,
      agent.podName,
      "waiting in CrashLoopBackOff with a back-off of 40 s or more",
      (p) =>
        agentStatus(p)?.state?.waiting?.reason === "CrashLoopBackOff" &&
        backOffSeconds(agentStatus(p)?.state?.waiting?.message) >= 40,
      120_000,
    );
    const status = agentStatus(looping);
    expect(looping.status?.phase).toBe("Running");
    expect(status?.restartCount).toBeGreaterThanOrEqual(2);
    expect(status?.lastState?.terminated?.exitCode).toBe(3);

    // berth's read verb: verified as the agent's, not started, the kubelet's reason in its condition.
    const read = await runBerth(["k8s", "status", "--pubkey", agent.pubkey, "--namespace", ns, "--json"], {
      kubeconfig: node.kubeconfig,
      home,
    });
    expect(read.code, read.stderr).toBe(0);
    const report = JSON.parse(read.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ observed: "verified", deletion_marked: false });
    expect(report.startup).not.toBe("started");
    expect(String(report.condition)).toContain("CrashLoopBackOff");

    // A deploy of the working image: the divergent, not-started pod is replaced, fenced by the uid berth observed.
    const proxy = await startApiProxy(asControlPlane());
    proxies.push(proxy);
    const r = await runProvider(request(agent, ns, { image: node.images.agent }), {
      kubeconfig: proxy.kubeconfigPath,
      home,
    });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    const deletes = proxy.requests.filter(isPodDelete(ns, agent.podName));
    expect(deletes).toHaveLength(1);
    expect(JSON.parse(deletes[0]?.body || "{}")).toMatchObject({ preconditions: { uid: created.metadata?.uid } });
    const [intent] = auditOf(home, "k8s.pod.delete", "intent");
    expect(JSON.stringify(intent)).toContain("intent-diverged");

    // One live pod: berth's, running the working harness as a real process.
    const pods = (await podsIn(core(), ns)).filter((p) => p.metadata?.deletionTimestamp === undefined);
    expect(pods).toHaveLength(1);
    const now = pods[0];
    expect(now?.metadata?.uid).not.toBe(created.metadata?.uid);
    expect(now?.spec?.restartPolicy).toBe("Never");
    const pid = containerPid(agentStatus(now)?.containerID ?? "");
    expect(pid, "the new harness's process in /proc").toBeDefined();
    expect(alive(pid as number)).toBe(true);
  });
});
