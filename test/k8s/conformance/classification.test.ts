/**
 * spec/kubernetes.md §19.5 R1–R8 (each classification row end to end), R12 (graceful deletion), R14 (Secret first),
 * R15 (one create attempt per call), R17 (pull-failure classes), R18 (CreateContainerConfigError) and R21 (admission
 * defaulting): the real provider executable against a real kube-apiserver + etcd, with the simulated kubelet playing
 * the container. Every row is shown twice: in API effects (uids, resourceVersions, the proxied request log) and in
 * the audit chain the provider wrote.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { killAll } from "../../support/process.js";
import { ARCH_MISMATCH_CONTAINERD, type ControlPlane, PULL_MESSAGES, startControlPlane } from "../control-plane.js";
import {
  type ApiProxy,
  auditOf,
  auditRecords,
  boundPod,
  expectedPullMessage,
  IMAGE,
  INTENT,
  isMutation,
  isPodCreate,
  isPodDelete,
  isPodGet,
  isPodList,
  isSecretCreate,
  K4,
  NamespaceStates,
  newScenario,
  observedAtLeast,
  PUBKEY_FULL,
  readPod,
  removeTempDirs,
  revision,
  type Scenario,
  secretLeaks,
  secretsIn,
  startedAgent as startedAgent_,
  runProvider,
  deployRequest,
  until,
  OWNER,
  gate,
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
  cp.kubelet.completeDeletions = true;
  cp.kubelet.gracefulDeletionMs = 200;
  for (const p of proxies.splice(0)) await p.close();
});
afterAll(async () => {
  await cp?.stop();
  removeTempDirs();
});

/** After an observation, a wrong delete or create would follow within milliseconds; one second shows there is none. */
const settle = () => new Promise((r) => setTimeout(r, 1000));
const scenario = (tag: string) => newScenario(cp, tag, proxies);

const startedAgent = (s: Scenario) => startedAgent_(cp, states, s);

describe("R1 and R14: with no pod on the name, a deploy creates the Secret first, then the Pod", () => {
  it("creates exactly one Secret and one Pod, the Secret strictly before the Pod, and answers the pod name", async () => {
    const s = await scenario("r1");
    states.set(s.ns, { kind: "running" });
    const r = await s.deploy();
    expect(r.code).toBe(0);
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });

    const pod = await readPod(cp.core, s.ns, s.agent.podName);
    expect(pod?.metadata?.annotations?.[PUBKEY_FULL]).toBe(s.agent.pubkey);
    expect(pod?.metadata?.annotations?.[INTENT]).toMatch(/^[0-9a-f]{64}$/);
    const secrets = await secretsIn(cp.core, s.ns);
    expect(secrets).toHaveLength(1);
    const secret = secrets[0];
    expect(secret?.metadata?.name).toMatch(new RegExp(`^${s.agent.podName}-[0-9a-f]{8}$`));
    expect(pod?.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name).toBe(secret?.metadata?.name);

    // R14 in API effects: the Secret's write revision precedes the Pod's creation revision, and on the wire the
    // Secret POST was answered before the Pod POST was sent.
    const reqs = s.requestsSince(0);
    const secretPost = reqs.findIndex(isSecretCreate(s.ns));
    const podPost = reqs.findIndex(isPodCreate(s.ns));
    expect(secretPost).toBeGreaterThanOrEqual(0);
    expect(podPost).toBeGreaterThan(secretPost);
    expect(reqs.filter(isSecretCreate(s.ns))).toHaveLength(1);
    expect(reqs.filter(isPodCreate(s.ns))).toHaveLength(1);
    const podCreatedRv = (JSON.parse(reqs[podPost]?.response ?? "{}") as { metadata?: { resourceVersion?: string } })
      .metadata?.resourceVersion;
    expect(revision(secret?.metadata?.resourceVersion)).toBeLessThan(revision(podCreatedRv));

    // R14 and R1 in the audit chain: secret.create intent and result precede the pod.create intent.
    const kinds = auditOf(s.home, "k8s.secret.create").concat(auditOf(s.home, "k8s.pod.create"));
    expect(kinds.length).toBeGreaterThanOrEqual(4);
    const order = auditRecords(s.home).map((x) => `${x.kind}:${String(x.payload.phase)}`);
    const secretIntent = order.indexOf("k8s.secret.create:intent");
    const secretResult = order.indexOf("k8s.secret.create:result");
    const podIntent = order.indexOf("k8s.pod.create:intent");
    expect(secretIntent).toBeGreaterThanOrEqual(0);
    expect(secretResult).toBeGreaterThan(secretIntent);
    expect(podIntent).toBeGreaterThan(secretResult);
    expect(auditOf(s.home, "k8s.pod.create", "result")[0]?.outcome).toBe("Created");
    const outcome = auditOf(s.home, "k8s.deploy.outcome").at(-1);
    expect(outcome?.ok).toBe(true);
    expect(outcome?.created_this_call).toBe(true);

    // §3.1: one line, exit 0, sockets and watches closed (the process exits on its own within 2 s of answering);
    // the secret key reaches no output and no audit record.
    expect(r.stdout.split("\n").filter(Boolean)).toHaveLength(1);
    expect(r.exitLagMs).toBeLessThan(2500);
    expect(secretLeaks(s.agent, s.home, [r.stdout, r.stderr])).toEqual([]);
  });
});

describe("R2 and R12: a deletion-marked pod is awaited, never replaced while marked", () => {
  it("waits while the old pod is marked and creates only after the apiserver answers 404", async () => {
    const s = await scenario("r2");
    const old = await startedAgent(s);
    cp.kubelet.completeDeletions = false;
    await cp.core.deleteNamespacedPod({ namespace: s.ns, name: s.agent.podName });
    const marked = await readPod(cp.core, s.ns, s.agent.podName);
    expect(marked?.metadata?.deletionTimestamp).toBeDefined();
    expect(marked?.status?.phase).toBe("Running");

    const from = s.proxy.requests.length;
    const run = s.startDeploy();
    await observedAtLeast(s, from, 1);
    await settle();
    expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).toBe(old.metadata?.uid);

    const releasedAt = Date.now();
    await cp.kubelet.finishDeletion(s.ns, s.agent.podName, old.metadata?.uid ?? "");
    const r = await run.answer();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const now = await readPod(cp.core, s.ns, s.agent.podName);
    expect(now?.metadata?.uid).not.toBe(old.metadata?.uid);
    const creates = s.requestsSince(from).filter(isPodCreate(s.ns));
    expect(creates).toHaveLength(1);
    expect(creates[0]?.at ?? 0).toBeGreaterThanOrEqual(releasedAt);
    // The deploy itself deleted nothing: the mark was somebody else's.
    expect(s.requestsSince(from).filter(isPodDelete(s.ns, s.agent.podName))).toEqual([]);
    expect(auditOf(s.home, "k8s.pod.delete")).toEqual([]);
    expect(auditOf(s.home, "k8s.pod.create", "result").map((x) => x.outcome)).toEqual(["Created", "Created"]);
    expect(auditOf(s.home, "k8s.deploy.outcome").at(-1)).toMatchObject({ ok: true, created_this_call: true });
  });
});

describe("R3: a started pod is a strict no-op", () => {
  it("answers success on one API request with zero mutation, even when the intent diverges", async () => {
    const s = await scenario("r3");
    const before = await startedAgent(s);
    const secretsBefore = (await secretsIn(cp.core, s.ns)).map((x) => x.metadata?.name);
    const from = s.proxy.requests.length;
    const r = await s.deploy({ cpu_request: "500m", memory_limit: "8Gi" });
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const reqs = s.requestsSince(from);
    expect(reqs.filter(isMutation)).toEqual([]);
    expect(reqs.map((x) => `${x.method} ${x.path.split("?")[0]}`)).toEqual([
      `GET /api/v1/namespaces/${s.ns}/pods/${s.agent.podName}`,
    ]);
    const after = await readPod(cp.core, s.ns, s.agent.podName);
    expect(after?.metadata?.uid).toBe(before.metadata?.uid);
    expect(after?.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect((await secretsIn(cp.core, s.ns)).map((x) => x.metadata?.name)).toEqual(secretsBefore);
    expect(auditOf(s.home, "k8s.deploy.outcome").at(-1)).toMatchObject({ ok: true, created_this_call: false });
  });
});

describe("R4: a terminated pod is deleted with the fence of the observation that classified it", () => {
  it("deletes the terminated pod (authority terminated, exact fence, no grace override) and creates once", async () => {
    const s = await scenario("r4");
    const old = await startedAgent(s);
    // Not started at the fast path, so the call reaches the loop; terminated only after the preflight LIST, so the
    // loop (row 4), not GC, sees it first.
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "waiting", reason: "ContainerCreating" });
    let terminatedRv: string | undefined;
    let listed = false;
    s.proxy.hook = async (req) => {
      if (isPodList(s.ns)(req)) listed = true;
      else if (listed && terminatedRv === undefined) {
        terminatedRv = (await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "terminated", exitCode: 0 })).metadata
          ?.resourceVersion;
      }
      return "forward" as const;
    };
    const from = s.proxy.requests.length;
    const r = await s.deploy();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const deletes = s.requestsSince(from).filter(isPodDelete(s.ns, s.agent.podName));
    expect(deletes).toHaveLength(1);
    const body = JSON.parse(deletes[0]?.body ?? "{}") as Record<string, unknown>;
    expect(body.preconditions).toEqual({ uid: old.metadata?.uid, resourceVersion: terminatedRv });
    expect(body.gracePeriodSeconds).toBeUndefined();
    expect(body.propagationPolicy).toBeUndefined();
    expect(deletes[0]?.path).not.toMatch(/gracePeriodSeconds|propagationPolicy/);
    const audited = auditOf(s.home, "k8s.pod.delete", "result");
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({
      authority: "terminated",
      outcome: "Accepted",
      fence: { kind: "precondition", uid: old.metadata?.uid, resourceVersion: terminatedRv },
    });
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).not.toBe(old.metadata?.uid);
    expect(s.requestsSince(from).filter(isPodCreate(s.ns))).toHaveLength(1);
  });
});

describe("R5: a provably broken never-started pod is replaced", () => {
  it("deletes an InvalidImageName pod with its fence, awaits its graceful disappearance and creates once", async () => {
    const s = await scenario("r5");
    const old = await startedAgent(s);
    const broken = await cp.kubelet.setState(s.ns, s.agent.podName, {
      kind: "waiting",
      reason: "InvalidImageName",
      message: "Failed to apply default image tag",
    });
    const from = s.proxy.requests.length;
    const r = await s.deploy();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const deletes = s.requestsSince(from).filter(isPodDelete(s.ns, s.agent.podName));
    expect(deletes).toHaveLength(1);
    expect(JSON.parse(deletes[0]?.body ?? "{}").preconditions).toEqual({
      uid: old.metadata?.uid,
      resourceVersion: broken.metadata?.resourceVersion,
    });
    expect(auditOf(s.home, "k8s.pod.delete", "result")).toMatchObject([
      { authority: "provably-broken", outcome: "Accepted" },
    ]);
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).not.toBe(old.metadata?.uid);
    expect(r.stderr).not.toContain("Failed to apply default image tag");
  });
});

describe("R6 and R17: pull failures are reported at once and never delete", () => {
  for (const failure of ["unauthorized", "manifest-unknown", "arch-mismatch"] as const) {
    it(`a ${failure} pull failure answers K2 with the catalogued text, also under a divergent intent, and deletes nothing`, async () => {
      const s = await scenario(`r17-${failure.slice(0, 5)}`);
      const kubeletText = PULL_MESSAGES[failure](IMAGE);
      states.set(s.ns, {
        kind: "waiting",
        reason: failure === "arch-mismatch" ? "ImagePullBackOff" : "ErrImagePull",
        message: kubeletText,
      });
      const expected = `${s.agent.podName} did not start: ${expectedPullMessage(failure)}`;

      const first = await s.deploy();
      expect(first.answer).toEqual({ ok: false, error: expected });
      const pod = await readPod(cp.core, s.ns, s.agent.podName);
      expect(pod).toBeDefined();

      // Row 6 precedes the divergence row: a changed config still reports and never deletes (I-2).
      const from = s.proxy.requests.length;
      const second = await s.deploy({ cpu_request: "250m" });
      expect(second.answer).toEqual({ ok: false, error: expected });
      expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
      expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).toBe(pod?.metadata?.uid);
      expect(auditOf(s.home, "k8s.pod.delete")).toEqual([]);

      // Redaction (§10.4): the kubelet's registry text reaches no output and no audit record.
      for (const out of [
        first.stdout,
        first.stderr,
        second.stdout,
        second.stderr,
        JSON.stringify(auditOf(s.home, "k8s.deploy.outcome")),
      ]) {
        expect(out).not.toContain("insufficient_scope");
        expect(out).not.toContain("failed to pull and unpack");
        expect(out).not.toContain("rpc error");
      }
    });
  }

  // issue 34: classified from the error chain's structure, the platform link precedes containerd's "not found".
  it('containerd\'s architecture-mismatch text is reported as arch-mismatch: its platform link comes before "not found"', async () => {
    const s = await scenario("r17-ctrd");
    states.set(s.ns, { kind: "waiting", reason: "ErrImagePull", message: ARCH_MISMATCH_CONTAINERD(IMAGE) });
    const r = await s.deploy();
    expect(r.answer).toEqual({
      ok: false,
      error: `${s.agent.podName} did not start: ${expectedPullMessage("arch-mismatch")}`,
    });
    expect(s.proxy.requests.filter(isPodDelete(s.ns, s.agent.podName))).toEqual([]);
  });

  it("a transient pull failure (i/o timeout) is recoverable: observed, not reported, not deleted", async () => {
    const s = await scenario("r17-transient");
    const old = await startedAgent(s);
    await cp.kubelet.setState(s.ns, s.agent.podName, {
      kind: "waiting",
      reason: "ErrImagePull",
      message: PULL_MESSAGES.transient(IMAGE),
    });
    const from = s.proxy.requests.length;
    const run = s.startDeploy();
    await observedAtLeast(s, from, 1);
    await settle();
    expect(run.proc.child.exitCode).toBeNull();
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "running" });
    const r = await run.answer();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).toBe(old.metadata?.uid);
  });
});

describe("R7 and R21: a recoverable pod with the recorded intent is only observed", () => {
  it("repeated deploys of a pending, admission-defaulted pod never diverge and never delete; a late start succeeds", async () => {
    const s = await scenario("r7");
    const old = await startedAgent(s);
    // Admission and defaulting rewrote the live spec; only the recorded annotation may be compared (§9.2).
    expect(old.spec?.dnsPolicy).toBe("ClusterFirst");
    expect(old.spec?.containers[0]?.terminationMessagePath).toBe("/dev/termination-log");
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "waiting", reason: "ContainerCreating" });
    const from = s.proxy.requests.length;
    for (let i = 0; i < 2; i++) {
      const mark = s.proxy.requests.length;
      const run = s.startDeploy();
      await observedAtLeast(s, mark, 1);
      await settle();
      expect(run.proc.child.exitCode).toBeNull();
      run.proc.child.kill("SIGKILL");
      await run.proc.exited();
    }
    const mark = s.proxy.requests.length;
    const run = s.startDeploy();
    await observedAtLeast(s, mark, 1);
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "running" });
    const r = await run.answer();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.metadata?.uid).toBe(old.metadata?.uid);
    expect(auditOf(s.home, "k8s.pod.delete")).toEqual([]);
    expect(auditOf(s.home, "k8s.deploy.outcome").at(-1)).toMatchObject({ ok: true, created_this_call: false });
  });
});

describe("R8 and R12: a recoverable pod with a divergent intent is replaced, gracefully", () => {
  it("deletes with the fence, creates nothing while the pod is marked, and creates once after the 404", async () => {
    const s = await scenario("r8");
    const old = await startedAgent(s);
    const pending = await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "waiting", reason: "ContainerCreating" });
    cp.kubelet.gracefulDeletionMs = 3000;
    const from = s.proxy.requests.length;
    const r = await s.deploy({ cpu_request: "500m" });
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });

    const reqs = s.requestsSince(from);
    const del = reqs.findIndex(isPodDelete(s.ns, s.agent.podName));
    expect(del).toBeGreaterThan(0);
    expect(JSON.parse(reqs[del]?.body ?? "{}").preconditions).toEqual({
      uid: old.metadata?.uid,
      resourceVersion: pending.metadata?.resourceVersion,
    });
    const afterDelete = reqs.slice(del + 1);
    const firstGone = afterDelete.findIndex((x) => isPodGet(s.ns, s.agent.podName)(x) && x.status === 404);
    const create = afterDelete.findIndex(isPodCreate(s.ns));
    expect(firstGone).toBeGreaterThanOrEqual(0);
    expect(create).toBeGreaterThan(firstGone);
    // It really was marked for a while, and was read as such, before the 404.
    expect(afterDelete.slice(0, firstGone).some((x) => isPodGet(s.ns, s.agent.podName)(x) && x.status === 200)).toBe(
      true,
    );
    expect((afterDelete[create]?.at ?? 0) - (reqs[del]?.at ?? 0)).toBeGreaterThanOrEqual(2500);
    expect(auditOf(s.home, "k8s.pod.delete", "result")).toMatchObject([
      { authority: "intent-diverged", outcome: "Accepted" },
    ]);
    const now = await readPod(cp.core, s.ns, s.agent.podName);
    expect(now?.metadata?.uid).not.toBe(old.metadata?.uid);
    expect(now?.metadata?.annotations?.[INTENT]).not.toBe(old.metadata?.annotations?.[INTENT]);
    expect(now?.spec?.containers[0]?.resources?.requests?.cpu).toBe("500m");
  });
});

describe("R15: one create attempt per call", () => {
  it("a crash exit answers K4 after one Secret and one Pod; the next deploy collects the attempt and retries once", async () => {
    const s = await scenario("r15");
    states.set(s.ns, { kind: "terminated", exitCode: 1 });
    // A harness that exits at once, in a real kubelet's order: running first, terminated at the next relist. Once a
    // read has answered running, later reads of the pod wait until the kubelet has written the exit: the test then
    // never depends on who wins the race between the relist and the deploy's next read (the fixed deploy reads again
    // before answering success; a deploy that answers on the first running read never does).
    const exitWritten = gate();
    cp.kubelet.onCrashWritten = (ns) => {
      if (ns === s.ns) exitWritten.open();
    };
    const podGet = isPodGet(s.ns, s.agent.podName);
    s.proxy.hook = async (req) => {
      if (podGet(req) && s.proxy.requests.some((r) => r !== req && podGet(r) && /"running":\{/.test(r.response ?? "")))
        await exitWritten.wait;
      return "forward" as const;
    };
    const first = await s.deploy();
    s.proxy.hook = undefined;
    cp.kubelet.onCrashWritten = undefined;
    expect(first.answer).toEqual({ ok: false, error: K4(s.agent.podName, "the container exited with code 1 (Error)") });
    expect(s.proxy.requests.filter(isSecretCreate(s.ns))).toHaveLength(1);
    expect(s.proxy.requests.filter(isPodCreate(s.ns))).toHaveLength(1);
    expect(s.proxy.requests.filter(isPodDelete(s.ns, s.agent.podName))).toHaveLength(0);
    expect(auditOf(s.home, "k8s.secret.create", "intent")).toHaveLength(1);
    expect(auditOf(s.home, "k8s.pod.create", "intent")).toHaveLength(1);
    expect(auditOf(s.home, "k8s.deploy.outcome").at(-1)).toMatchObject({ ok: false, created_this_call: true });
    // The kubelet's order (issue 34): the container read running, then terminated while the phase still read
    // Running; the terminal phase follows.
    const crashed = await until("the crashed pod's terminal phase", async () => {
      const p = await readPod(cp.core, s.ns, s.agent.podName);
      return p?.status?.phase === "Failed" ? p : undefined;
    });
    const crashedSecret = crashed?.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name;

    states.set(s.ns, { kind: "running" });
    const from = s.proxy.requests.length;
    const second = await s.deploy();
    expect(second.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const reqs = s.requestsSince(from);
    expect(reqs.filter(isSecretCreate(s.ns))).toHaveLength(1);
    expect(reqs.filter(isPodCreate(s.ns))).toHaveLength(1);
    const now = await readPod(cp.core, s.ns, s.agent.podName);
    expect(now?.metadata?.uid).not.toBe(crashed?.metadata?.uid);
    // The crashed attempt's Pod and Secret are gone; only the new attempt's Secret is left.
    const left = (await secretsIn(cp.core, s.ns)).map((x) => x.metadata?.name);
    expect(left).toEqual([now?.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name]);
    expect(left).not.toContain(crashedSecret);
  });

  it("a created pod that turns out provably broken answers K4 and is not deleted by the call that created it", async () => {
    const s = await scenario("r15b");
    states.set(s.ns, { kind: "waiting", reason: "InvalidImageName" });
    const r = await s.deploy();
    expect(r.answer).toEqual({
      ok: false,
      error: K4(s.agent.podName, "the container is waiting, reason InvalidImageName"),
    });
    expect(s.proxy.requests.filter(isPodDelete(s.ns, s.agent.podName))).toEqual([]);
    expect(s.proxy.requests.filter(isPodCreate(s.ns))).toHaveLength(1);
    expect(await readPod(cp.core, s.ns, s.agent.podName)).toBeDefined();
  });
});

describe("R18: CreateContainerConfigError is decided by a quorum read of the Secret", () => {
  it("observes while the Secret exists, and replaces the pod (fenced) once the Secret is gone", async () => {
    const s = await scenario("r18");
    const old = await startedAgent(s);
    const secretName = old.spec?.containers[0]?.envFrom?.[0]?.secretRef?.name ?? "";
    await cp.kubelet.setState(s.ns, s.agent.podName, {
      kind: "waiting",
      reason: "CreateContainerConfigError",
      message: `secret "${secretName}" not found`,
    });

    // Secret present: recoverable, matching intent → observe.
    const from = s.proxy.requests.length;
    const run = s.startDeploy();
    await observedAtLeast(s, from, 1);
    await settle();
    expect(run.proc.child.exitCode).toBeNull();
    expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
    expect(
      s
        .requestsSince(from)
        .some((x) => x.method === "GET" && x.path.split("?")[0] === `/api/v1/namespaces/${s.ns}/secrets/${secretName}`),
    ).toBe(true);
    run.proc.child.kill("SIGKILL");
    await run.proc.exited();

    // Secret deleted: a quorum 404 proves the pod broken → fenced delete and one new attempt.
    await cp.core.deleteNamespacedSecret({ namespace: s.ns, name: secretName });
    const broken = await readPod(cp.core, s.ns, s.agent.podName);
    const mark = s.proxy.requests.length;
    const r = await s.deploy();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const deletes = s.requestsSince(mark).filter(isPodDelete(s.ns, s.agent.podName));
    expect(deletes).toHaveLength(1);
    expect(JSON.parse(deletes[0]?.body ?? "{}").preconditions).toEqual({
      uid: broken?.metadata?.uid,
      resourceVersion: broken?.metadata?.resourceVersion,
    });
    expect(auditOf(s.home, "k8s.pod.delete", "result")).toMatchObject([{ authority: "provably-broken" }]);
    const now = await boundPod(cp.core, s.ns, s.agent.podName);
    expect(now.metadata?.uid).not.toBe(old.metadata?.uid);
  });
});

// ---- issue 34: what a real kubelet showed and the simulator did not ---------------------------------------------

describe("R17 (issue 34): pull failures are classified from structure, and the answer names the failing pod's image", () => {
  it("a refused pull of a digest containing 401, and containerd's unexpected commit digest, are observed, never reported", async () => {
    const s = await scenario("r17-401");
    const image = `ghcr.io/block/buzz-sprig@sha256:${"0".repeat(60)}401f`;
    states.set(s.ns, { kind: "waiting", reason: "ErrImagePull", message: PULL_MESSAGES.transient(image) });
    const run = s.startDeploy({ image });
    await until("the created pod", () => readPod(cp.core, s.ns, s.agent.podName));
    await observedAtLeast(s, 0, 2);
    await settle();
    expect(run.proc.child.exitCode).toBeNull();
    await cp.kubelet.setState(s.ns, s.agent.podName, {
      kind: "waiting",
      reason: "ErrImagePull",
      message: PULL_MESSAGES["commit-digest"](image),
    });
    await settle();
    expect(run.proc.child.exitCode).toBeNull();
    await cp.kubelet.setState(s.ns, s.agent.podName, { kind: "running" });
    const r = await run.answer();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect(s.proxy.requests.filter(isPodDelete(s.ns, s.agent.podName))).toEqual([]);
  });

  it("a never-started pod from an earlier image is reported by its own image, also after the configured image changed", async () => {
    const s = await scenario("r17-img");
    const earlier = `ghcr.io/block/buzz-sprig@sha256:${"1".repeat(64)}`;
    states.set(s.ns, { kind: "waiting", reason: "ErrImagePull", message: PULL_MESSAGES["manifest-unknown"](earlier) });
    const expected = `${s.agent.podName} did not start: ${expectedPullMessage("manifest-unknown", earlier)}`;
    expect((await s.deploy({ image: earlier })).answer).toEqual({ ok: false, error: expected });
    // Row 6 precedes divergence: the pod is reported, not replaced — so it must be named by what it really pulls.
    const from = s.proxy.requests.length;
    expect((await s.deploy()).answer).toEqual({ ok: false, error: expected });
    expect(s.requestsSince(from).filter(isMutation)).toEqual([]);
  });

  it("with the docs' launch command buzz-agent, the answer names the pod, never [redacted]-…", async () => {
    const s = await scenario("r17-cmd");
    states.set(s.ns, { kind: "waiting", reason: "ErrImagePull", message: PULL_MESSAGES["manifest-unknown"](IMAGE) });
    const request = deployRequest(s.agent, s.ns);
    (request.agent as Record<string, unknown>).launch = { owner_pubkey: OWNER, command: "buzz-agent" };
    const r = await runProvider(request, { kubeconfig: s.proxy.kubeconfigPath, home: s.home });
    expect(r.answer).toEqual({
      ok: false,
      error: `${s.agent.podName} did not start: ${expectedPullMessage("manifest-unknown")}`,
    });
  });
});

describe("R7 (issue 34): scheduling on a node with finite room", () => {
  afterEach(() => cp.kubelet.setFreeRoom(null));

  it("the default requests fit a small node (0.9 CPU, 1.5 GiB left)", async () => {
    const s = await scenario("r7-small");
    states.set(s.ns, { kind: "running" });
    cp.kubelet.setFreeRoom({ cpuMilli: 900, memoryBytes: 1.5 * 1024 ** 3 });
    const r = await s.deploy();
    expect(r.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    expect((await readPod(cp.core, s.ns, s.agent.podName))?.spec?.nodeName).toBe(cp.nodeName);
  });

  it("requests no node can satisfy are observed until the deadline, never deleted, and answered then with the scheduler's reason and the true wait; a smaller request replaces the pod", async () => {
    const s = await scenario("r7-unsched");
    states.set(s.ns, { kind: "running" });
    const started = Date.now();
    const r = await s.deploy({ cpu_request: "200", cpu_limit: "200" });
    const tookS = (Date.now() - started) / 1000;
    const error = String(r.answer.error);
    const waited = Number(/^startup not confirmed within (\d+)s for /.exec(error)?.[1]);
    expect(error).toBe(
      `startup not confirmed within ${waited}s for ${s.agent.podName}: pod condition PodScheduled is false: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.`,
    );
    // The loop stops 5 s before D = 30 s: the answer says the seconds it really waited, never more.
    expect(waited).toBeGreaterThanOrEqual(25);
    expect(waited).toBeLessThanOrEqual(tookS);
    expect(s.proxy.requests.filter(isPodDelete(s.ns, s.agent.podName))).toEqual([]);
    const pending = await readPod(cp.core, s.ns, s.agent.podName);
    expect(pending?.spec?.nodeName ?? null).toBeNull();
    expect(pending?.status?.phase).toBe("Pending");

    // A changed request is a divergent intent on a never-started pod: fenced replace, then it schedules and starts.
    const from = s.proxy.requests.length;
    const again = await s.deploy({ cpu_request: "500m", cpu_limit: "2" });
    expect(again.answer).toEqual({ ok: true, agent_id: s.agent.podName });
    const deletes = s.requestsSince(from).filter(isPodDelete(s.ns, s.agent.podName));
    expect(deletes).toHaveLength(1);
    expect(JSON.parse(deletes[0]?.body ?? "{}").preconditions).toEqual({
      uid: pending?.metadata?.uid,
      resourceVersion: pending?.metadata?.resourceVersion,
    });
    expect(auditOf(s.home, "k8s.pod.delete", "result")).toMatchObject([{ authority: "intent-diverged" }]);
  }, 120_000);
});
