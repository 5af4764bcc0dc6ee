/**
 * spec/kubernetes.md §19.5 R16 (preflight GC by the server's `Date` header), R20 (namespace creation and the RBAC 403
 * hint) and R22 (watch first, 2 s polling as the fallback), against the real apiserver. The proxy shifts or strips
 * the `Date` header the GC reads; a preload runs the provider with a local clock two hours fast; the restricted user
 * is given exactly the RBAC each case needs.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { killAll } from "../../support/process.js";
import { type ControlPlane, startControlPlane } from "../control-plane.js";
import {
  type ApiProxy,
  auditOf,
  buzzShapedPod,
  buzzShapedSecret,
  createdName,
  deployRequest,
  ensureNamespace,
  fastClockPreload,
  freshNamespace,
  G2,
  generation,
  isMutation,
  isPodCreate,
  isPodGet,
  isSecretCreate,
  NamespaceStates,
  newAgent,
  newScenario,
  preconditionsOf,
  readPod,
  removeTempDirs,
  runProvider,
  secretPath,
  secretsIn,
  startApiProxy,
  startProvider,
  type TestAgent,
  tempHome,
  until,
} from "./support.js";

let cp: ControlPlane;
let states: NamespaceStates;
const proxies: ApiProxy[] = [];

beforeAll(async () => {
  cp = await startControlPlane();
  states = new NamespaceStates(cp);
}, 120_000);
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
});
afterAll(async () => {
  await cp?.stop();
  removeTempDirs();
});

const ORPHAN_AGE_MS = 1_200_000;

async function proxy(user: "admin" | "restricted" = "admin"): Promise<ApiProxy> {
  const p = await startApiProxy(cp, user);
  proxies.push(p);
  return p;
}

async function orphanFor(
  ns: string,
  agent: TestAgent,
): Promise<{ name: string; uid: string; resourceVersion: string }> {
  const s = await cp.core.createNamespacedSecret({ namespace: ns, body: buzzShapedSecret(agent, generation()) });
  return {
    name: s.metadata?.name ?? "",
    uid: s.metadata?.uid ?? "",
    resourceVersion: s.metadata?.resourceVersion ?? "",
  };
}

const secretNames = async (ns: string) => (await secretsIn(cp.core, ns)).map((x) => x.metadata?.name);

describe("R16: preflight GC ages orphan Secrets by the apiserver's Date header only", () => {
  it("an orphan is collected once the server clock says 1200 s, kept at 1190 s, and kept under a local clock two hours fast", async () => {
    const ns = freshNamespace("r16a");
    await ensureNamespace(cp.core, ns);
    states.set(ns, { kind: "running" });

    // Server clock 1190 s ahead: younger than the gate → kept.
    const young = newAgent();
    const youngOrphan = await orphanFor(ns, young);
    const pYoung = await proxy();
    pYoung.dateShiftMs = ORPHAN_AGE_MS - 10_000;
    const homeYoung = tempHome("r16-young");
    expect(
      (await runProvider(deployRequest(young, ns), { kubeconfig: pYoung.kubeconfigPath, home: homeYoung })).answer,
    ).toEqual({ ok: true, agent_id: young.podName });
    expect(await secretNames(ns)).toContain(youngOrphan.name);
    expect(auditOf(homeYoung, "k8s.secret.delete")).toEqual([]);

    // Server clock 1200 s ahead: the boundary is eligible → deleted with the LIST's uid/resourceVersion.
    const old = newAgent();
    const oldOrphan = await orphanFor(ns, old);
    const pOld = await proxy();
    pOld.dateShiftMs = ORPHAN_AGE_MS;
    const homeOld = tempHome("r16-old");
    expect(
      (await runProvider(deployRequest(old, ns), { kubeconfig: pOld.kubeconfigPath, home: homeOld })).answer,
    ).toEqual({ ok: true, agent_id: old.podName });
    expect(await secretNames(ns)).not.toContain(oldOrphan.name);
    const del = pOld.requests.find(
      (r) => r.method === "DELETE" && r.path.split("?")[0] === secretPath(ns, oldOrphan.name),
    );
    expect(preconditionsOf(del)).toEqual({ uid: oldOrphan.uid, resourceVersion: oldOrphan.resourceVersion });
    expect(auditOf(homeOld, "k8s.secret.delete", "result")).toMatchObject([
      { object: oldOrphan.name, authority: "gc-orphan", outcome: "Accepted" },
    ]);
    // The new attempt's own Secret is never an orphan.
    expect(await secretNames(ns)).toContain(
      (await readPod(cp.core, ns, old.podName))?.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name,
    );

    // A local clock two hours fast and the true server clock: nothing is old → kept.
    const fast = newAgent();
    const fastOrphan = await orphanFor(ns, fast);
    const pFast = await proxy();
    const homeFast = tempHome("r16-fast");
    const r = await runProvider(deployRequest(fast, ns), {
      kubeconfig: pFast.kubeconfigPath,
      home: homeFast,
      nodeArgs: fastClockPreload(2 * 3_600_000),
    });
    expect(r.answer).toEqual({ ok: true, agent_id: fast.podName });
    expect(await secretNames(ns)).toContain(fastOrphan.name);
    expect(auditOf(homeFast, "k8s.secret.delete")).toEqual([]);
  }, 60_000); // three fresh provider deploys, each answered one start confirmation (3 s) after its start (issue 34)

  it("without a Date header there is no orphan sweep, but a terminated pod and its Secret are still collected", async () => {
    const ns = freshNamespace("r16b");
    await ensureNamespace(cp.core, ns);
    const agent = newAgent();
    const orphan = await orphanFor(ns, agent);
    // A terminated generation written by another writer, with its Secret.
    const gen = generation();
    await cp.core.createNamespacedSecret({ namespace: ns, body: buzzShapedSecret(agent, gen) });
    const dead = await cp.core.createNamespacedPod({ namespace: ns, body: buzzShapedPod(agent, { generation: gen }) });
    await until("bound", async () => ((await readPod(cp.core, ns, agent.podName))?.spec?.nodeName ? true : undefined));
    await cp.kubelet.setState(ns, agent.podName, { kind: "terminated", exitCode: 0 });
    states.set(ns, { kind: "running" });

    const p = await proxy();
    p.dateShiftMs = null;
    const home = tempHome("r16-nodate");
    const r = await runProvider(deployRequest(agent, ns), {
      kubeconfig: p.kubeconfigPath,
      home,
      nodeArgs: fastClockPreload(2 * 3_600_000),
    });
    expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
    const names = await secretNames(ns);
    expect(names).toContain(orphan.name);
    expect(names).not.toContain(`${agent.podName}-${gen}`);
    expect((await readPod(cp.core, ns, agent.podName))?.metadata?.uid).not.toBe(dead.metadata?.uid);
    const deletes = auditOf(home, "k8s.secret.delete", "result");
    expect(deletes.map((x) => x.object)).toEqual([`${agent.podName}-${gen}`]);
    expect(deletes[0]?.authority).toBe("gc-doomed");
    expect(auditOf(home, "k8s.pod.delete", "result")).toMatchObject([{ authority: "gc-terminated" }]);
  });

  it("B's GC between A's Secret create and A's Pod create spares A's Secret, even with B's local clock two hours fast", async () => {
    const s = await newScenario(cp, "r16c", proxies);
    states.set(s.ns, { kind: "running" });
    let releaseA = () => {};
    const held = new Promise<void>((r) => {
      releaseA = r;
    });
    let aAtPodCreate = () => {};
    const aReached = new Promise<void>((r) => {
      aAtPodCreate = r;
    });
    s.proxy.hook = async (req) => {
      if (isPodCreate(s.ns)(req)) {
        aAtPodCreate();
        await held;
      }
      return "forward" as const;
    };
    const a = s.startDeploy();
    await aReached;
    const aSecret = createdName(s.proxy.requests.find(isSecretCreate(s.ns)));
    expect(aSecret).toBeDefined();

    const pB = await proxy();
    const homeB = tempHome("r16c-b");
    const b = await runProvider(deployRequest(s.agent, s.ns), {
      kubeconfig: pB.kubeconfigPath,
      home: homeB,
      nodeArgs: fastClockPreload(2 * 3_600_000),
    });
    expect(b.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect(await secretNames(s.ns)).toContain(aSecret);
    expect(pB.requests.filter((r) => r.method === "DELETE" && r.path.includes("/secrets/"))).toEqual([]);
    expect(auditOf(homeB, "k8s.secret.delete")).toEqual([]);

    releaseA();
    const ra = await a.answer();
    expect(ra.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    // A lost the name to B: it removed its own Secret and nothing else.
    expect(auditOf(s.home, "k8s.secret.delete", "result")).toMatchObject([
      { object: aSecret, authority: "race-loser" },
    ]);
    const podSecret = (await readPod(cp.core, s.ns, s.agent.podName))?.spec?.containers[0]?.envFrom?.[0]?.secretRef
      ?.name;
    expect(await secretNames(s.ns)).toEqual([podSecret]);
  });
});

describe("R20: namespace creation and the RBAC hint", () => {
  it("an absent namespace is created (audited) and the agent deployed into it", async () => {
    const s = await newScenario(cp, "r20a", proxies);
    states.set(s.ns, { kind: "running" });
    await expect(cp.core.readNamespace({ name: s.ns })).rejects.toMatchObject({ code: 404 });
    const r = await s.deploy();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect((await cp.core.readNamespace({ name: s.ns })).metadata?.name).toBe(s.ns);
    expect(auditOf(s.home, "k8s.namespace.create", "result")).toMatchObject([{ object: s.ns, outcome: "Created" }]);
    const nsPost = s.proxy.requests.findIndex(
      (x) => x.method === "POST" && x.path.split("?")[0] === "/api/v1/namespaces",
    );
    expect(nsPost).toBeGreaterThanOrEqual(0);
    expect(s.proxy.requests.findIndex(isSecretCreate(s.ns))).toBeGreaterThan(nsPost);
  });

  it("a user who may read but not create namespaces gets G2 with the kubectl hint, and nothing is written", async () => {
    const tag = `r20b-${Date.now().toString(36)}`;
    await cp.rbac.createClusterRole({
      body: { metadata: { name: tag }, rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }] },
    });
    await cp.rbac.createClusterRoleBinding({
      body: {
        metadata: { name: tag },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: tag },
        subjects: [{ kind: "User", name: "berth-restricted", apiGroup: "rbac.authorization.k8s.io" }],
      },
    });
    try {
      const ns = freshNamespace("r20b");
      const p = await proxy("restricted");
      const home = tempHome("r20b");
      const agent = newAgent();
      const r = await runProvider(deployRequest(agent, ns), { kubeconfig: p.kubeconfigPath, home });
      expect(r.answer).toEqual({ ok: false, error: G2(ns) });
      expect(p.requests.filter(isMutation).map((x) => `${x.method} ${x.path.split("?")[0]} ${x.status}`)).toEqual([
        "POST /api/v1/namespaces 403",
      ]);
      expect(auditOf(home, "k8s.secret.create")).toEqual([]);
      expect(auditOf(home, "k8s.namespace.create", "result")).toMatchObject([{ object: ns, outcome: "error" }]);
      await expect(cp.core.readNamespace({ name: ns })).rejects.toMatchObject({ code: 404 });
    } finally {
      await cp.rbac.deleteClusterRoleBinding({ name: tag });
      await cp.rbac.deleteClusterRole({ name: tag });
    }
  });

  it("a user who may not even read the namespace gets G1 (no kubectl hint) and nothing is written", async () => {
    const ns = freshNamespace("r20c");
    const p = await proxy("restricted");
    const home = tempHome("r20c");
    const agent = newAgent();
    const r = await runProvider(deployRequest(agent, ns), { kubeconfig: p.kubeconfigPath, home });
    expect(r.answer.ok).toBe(false);
    expect(String(r.answer.error)).toMatch(new RegExp(`^could not check whether namespace ${ns} exists: Forbidden`));
    expect(String(r.answer.error)).not.toContain("kubectl");
    expect(p.requests.filter(isMutation)).toEqual([]);
  });
});

describe("R22: watch first, 2 s polling as the fallback", () => {
  it("a start is detected through the watch, without polling", async () => {
    const s = await newScenario(cp, "r22a", proxies);
    states.set(s.ns, undefined); // created pods stay pending until the test starts them
    const run = s.startDeploy();
    const watchSeen = await until("the provider's pod watch", () =>
      s.proxy.requests.find(
        (x) => x.method === "GET" && x.path.includes("watch=") && x.path.includes(`metadata.name%3D${s.agent.podName}`),
      ),
    );
    expect(watchSeen.path).toMatch(/timeoutSeconds=\d+/);
    await until("pod bound", async () =>
      (await readPod(cp.core, s.ns, s.agent.podName))?.spec?.nodeName ? true : undefined,
    );
    // Inside the 10 s resync window: a polling loop would read every 2 s.
    await new Promise((r) => setTimeout(r, 4500));
    const startedAt = Date.now();
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "running" });
    const r = await run.answer();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    // Detection is the read the watch's wake brings; the answer follows one start confirmation later (issue 34, §8.9).
    const detected = s.proxy.requests.find(
      (x) => isPodGet(s.ns, s.agent.podName)(x) && !x.path.includes("watch=") && x.at >= startedAt,
    );
    expect((detected?.at ?? Number.POSITIVE_INFINITY) - startedAt).toBeLessThan(1500);
    const podCreate = s.proxy.requests.findIndex(isPodCreate(s.ns));
    const readsWhileWaiting = s.proxy.requests
      .slice(podCreate)
      .filter((x) => isPodGet(s.ns, s.agent.podName)(x) && !x.path.includes("watch=") && x.at < startedAt);
    // At most the read that follows the create's own watch event: no 2 s polling rhythm.
    expect(readsWhileWaiting.length).toBeLessThanOrEqual(2);
    // No connection per request or per watch: at most two requests are ever in flight at once (the GC's two LISTs,
    // issue 19), each on a kept-alive connection, plus one for the watch (opened as the creates are sent).
    expect(s.proxy.connections()).toBeLessThanOrEqual(4);
    expect(s.proxy.requests.length).toBeGreaterThanOrEqual(2 * s.proxy.connections());
  });

  it("with watch forbidden by RBAC, 2 s polling still sees the start and the deploy succeeds", async () => {
    const ns = freshNamespace("r22b");
    await ensureNamespace(cp.core, ns);
    states.set(ns, undefined);
    const tag = `r22b-${Date.now().toString(36)}`;
    await cp.rbac.createClusterRole({
      body: { metadata: { name: tag }, rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }] },
    });
    await cp.rbac.createClusterRoleBinding({
      body: {
        metadata: { name: tag },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: tag },
        subjects: [{ kind: "User", name: "berth-restricted", apiGroup: "rbac.authorization.k8s.io" }],
      },
    });
    await cp.rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: "berth-no-watch" },
        rules: [
          { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "create", "delete"] },
          { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "create", "delete"] },
        ],
      },
    });
    await cp.rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: "berth-no-watch" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "berth-no-watch" },
        subjects: [{ kind: "User", name: "berth-restricted", apiGroup: "rbac.authorization.k8s.io" }],
      },
    });
    try {
      const p = await proxy("restricted");
      const home = tempHome("r22b");
      const agent = newAgent();
      const run = startProvider(deployRequest(agent, ns), { kubeconfig: p.kubeconfigPath, home });
      await until("pod bound", async () =>
        (await readPod(cp.core, ns, agent.podName))?.spec?.nodeName ? true : undefined,
      );
      await until("a refused watch", () => p.requests.find((x) => x.path.includes("watch=") && x.status === 403));
      await new Promise((r) => setTimeout(r, 4500));
      const startedAt = Date.now();
      await cp.kubelet.setState(ns, agent.podName, { kind: "running" });
      const r = await run.answer();
      expect(r.answer).toEqual({ ok: true, agent_id: agent.podName });
      // The next 2 s poll sees it; the answer follows one start confirmation later (issue 34, §8.9).
      const detected = p.requests.find(
        (x) => isPodGet(ns, agent.podName)(x) && !x.path.includes("watch=") && x.at >= startedAt,
      );
      expect((detected?.at ?? Number.POSITIVE_INFINITY) - startedAt).toBeLessThan(3500);
      const podCreate = p.requests.findIndex(isPodCreate(ns));
      const polls = p.requests
        .slice(podCreate)
        .filter((x) => isPodGet(ns, agent.podName)(x) && !x.path.includes("watch=") && x.at < startedAt);
      // About one read per 2 s while waiting, and watching was not retried on every wake.
      expect(polls.length).toBeGreaterThanOrEqual(2);
      expect(p.requests.filter((x) => x.path.includes("watch=")).length).toBeLessThanOrEqual(2);
    } finally {
      await cp.rbac.deleteClusterRoleBinding({ name: tag });
      await cp.rbac.deleteClusterRole({ name: tag });
    }
  });
});
