import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildEnv } from "../core/kubernetes/env.js";
import { podManifest, secretManifest } from "../core/kubernetes/manifests.js";
import { PUBKEY_FULL_ANNOTATION } from "../core/kubernetes/naming.js";
import type { PodObject } from "../core/kubernetes/objects.js";
import { agentA } from "../../test/support/kubernetes/fixtures.js";
import { WHO } from "../../test/support/kubernetes/pods.js";
import { desiredFingerprint, type Harness, harness, inputsFor, NS } from "../../test/support/kubernetes/harness.js";
import { deploy } from "./converge.js";
import { DEFAULT_WAIT } from "./waiter.js";

const POD = WHO.podName;

/** A pod as berth (or Buzz) would have created it, optionally already bound and with a container state. */
function seedOurPod(
  h: Harness,
  opts: {
    intent?: string;
    generation?: string;
    state?: Record<string, unknown>;
    phase?: string;
    bound?: boolean;
    withSecret?: boolean;
  } = {},
): string {
  const generation = opts.generation ?? "aaaaaaaa";
  const manifest = podManifest(WHO, h.config, generation, opts.intent ?? desiredFingerprint(h.inputs)) as PodObject;
  const uid = h.fake.seedPod(NS, manifest);
  if (opts.withSecret !== false) {
    const env = buildEnv(agentA(), h.config, generation);
    if (env.ok) h.fake.seedSecret(NS, secretManifest(WHO, h.config, generation, env.value));
  }
  if (opts.bound) h.fake.bind(NS, POD);
  if (opts.state) h.fake.setAgentState(NS, POD, opts.state, opts.phase);
  else if (opts.phase) h.fake.setPodStatus(NS, POD, { phase: opts.phase });
  return uid;
}

const ops = (h: Harness) => h.fake.calls.map((c) => c.op);
const mutations = (h: Harness) => h.fake.mutations().map((c) => `${c.op}:${c.outcome}`);
const answerOf = (r: { answer: { ok: boolean } }) => r.answer;
const errorOf = (r: { answer: { ok: true; agentId: string } | { ok: false; error: string } }) =>
  r.answer.ok ? `ok ${r.answer.agentId}` : r.answer.error;

describe("the converge loop against the fake apiserver (spec/kubernetes.md §8, §19.4)", () => {
  it("a fresh deploy writes the Secret before the Pod and returns the pod name once it starts", async () => {
    const h = harness();
    h.kubeletStartsAfter(1500);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual(["createSecret:created", "createPod:created"]);
    const pod = h.fake.pod(NS, POD);
    expect(pod?.metadata.annotations?.["buzz.block.xyz/create-intent"]).toBe(desiredFingerprint(h.inputs));
    const secretName = pod?.spec.containers[0]?.envFrom?.[0]?.secretRef?.name ?? "";
    expect(secretName).toBe(`${POD}-0f3a91cc`);
    expect(h.fake.secretData(NS, secretName)?.BUZZ_MANAGED_AGENT_START_NONCE).toBe("0f3a91cc");
    expect(r.createdThisCall).toBe(true);
  });

  it("a started pod costs one GET and no mutation", async () => {
    const h = harness();
    seedOurPod(h, { bound: true, state: { running: {} }, phase: "Running" });
    const before = h.fake.calls.length;
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(h.fake.calls.slice(before).map((c) => c.op)).toEqual(["getPod"]);
    expect(r.requests).toBe(1);
    expect(h.audit.of("k8s.deploy.outcome")).toHaveLength(1);
  });

  it("a started pod whose intent diverged is still a strict no-op", async () => {
    const h = harness();
    seedOurPod(h, { intent: "0".repeat(64), bound: true, state: { running: {} }, phase: "Running" });
    expect(answerOf(await h.deploy())).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual([]);
  });

  it("a stale fence re-classifies on a fresh read and never retries the delete with a newer fence", async () => {
    const h = harness();
    seedOurPod(h, { intent: "0".repeat(64), bound: true, state: { waiting: { reason: "ContainerCreating" } } });
    // The container starts between the read that classified "intent-diverged" and the delete (R10).
    h.fake.beforeServe = (call) => {
      if (call.op === "deletePod") h.fake.setAgentState(NS, POD, { running: {} }, "Running");
    };
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual(["deletePod:Conflict"]);
    expect(h.fake.pod(NS, POD)?.metadata.deletionTimestamp).toBeUndefined();
  });

  it("a pending pod with matching intent is never deleted and the deadline answers K1 without cleanup", async () => {
    const h = harness();
    seedOurPod(h, { bound: true, state: { waiting: { reason: "ContainerCreating" } }, phase: "Pending" });
    const r = await h.deploy({ deadlineSeconds: 60 });
    // The true wait (issue 34): the loop stops 5 s before D to leave room for the final read.
    expect(errorOf(r)).toBe(
      `startup not confirmed within 55s for ${POD}: the container is waiting, reason ContainerCreating`,
    );
    expect(mutations(h)).toEqual([]);
    expect(h.fake.pod(NS, POD)).toBeDefined();
    expect(h.clock.now()).toBeGreaterThanOrEqual(55_000);
  });

  it("a late start within the deadline succeeds", async () => {
    const h = harness();
    h.kubeletStartsAfter(300_000);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(h.clock.now()).toBeGreaterThanOrEqual(300_000);
  });

  it("a permanent pull failure answers K2 at once, deletes nothing and repeats no kubelet text", async () => {
    const h = harness();
    h.fake.onPodCreated = () =>
      h.clock.schedule(1000, () =>
        h.fake.setAgentState(NS, POD, {
          waiting: { reason: "ImagePullBackOff", message: "401 Unauthorized: Bearer sekrit-token" },
        }),
      );
    const r = await h.deploy();
    expect(errorOf(r)).toBe(
      `${POD} did not start: the cluster is not authorized to pull ${h.config.image} from ghcr.io. This pull retries indefinitely and will not succeed on its own: grant the cluster's nodes access to that registry.`,
    );
    expect(h.clock.now()).toBeLessThan(10_000);
    expect(mutations(h).filter((m) => m.startsWith("delete"))).toEqual([]);
    const everything = JSON.stringify([r, h.audit.records, h.log.lines]);
    expect(everything).not.toContain("sekrit");
    expect(everything).not.toContain("Bearer");
  });

  it("a pull failure under a diverged intent still only reports", async () => {
    const h = harness();
    seedOurPod(h, {
      intent: "0".repeat(64),
      state: { waiting: { reason: "ErrImagePull", message: "manifest unknown" } },
    });
    expect(errorOf(await h.deploy())).toMatch(/did not start: ghcr.io has no image at/);
    expect(mutations(h)).toEqual([]);
  });

  // issue 34: a real kubelet publishes state.running for a harness that exits within milliseconds, and terminated only
  // at its next relist. Answering on the first running read reported the crash as started, and every later deploy
  // replaced it and said started again.
  it("a harness that crashes at start answers K4 with its exit code, never started, and deletes nothing", async () => {
    const h = harness();
    h.kubeletCrashesAtStart(200, { exitCode: 1, detectedAfterMs: 1000 });
    const r = await h.deploy();
    expect(errorOf(r)).toBe(
      `${POD} was created by this deploy and did not stay running: the container exited with code 1 (Error). Not retrying in this call — an immediate exit recurs until its cause is fixed. Check the agent's configuration and press Start to try again.`,
    );
    expect(mutations(h)).toEqual(["createSecret:created", "createPod:created"]);
    // The next deploy replaces the crashed attempt once and, the harness crashing again, answers K4 again.
    const again = await h.deploy();
    expect(errorOf(again)).toMatch(/did not stay running: the container exited with code 1 \(Error\)/);
    expect(mutations(h).filter((m) => m.startsWith("createPod"))).toHaveLength(2);
  });

  it("a start is answered once the same container stays running a confirmation window after it was first seen", async () => {
    const h = harness();
    let firstRunningAt = -1;
    h.fake.onPodCreated = ({ ns, name }) =>
      h.clock.schedule(500, () => {
        h.fake.start(ns, name);
        firstRunningAt = h.clock.now();
      });
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(h.clock.now() - firstRunningAt).toBeGreaterThanOrEqual(DEFAULT_WAIT.confirmStartMs);
    expect(h.clock.now() - firstRunningAt).toBeLessThan(DEFAULT_WAIT.confirmStartMs + 100);
  });

  it("a container restarted within the window starts the confirmation again", async () => {
    const h = harness();
    let restartedAt = -1;
    h.fake.onPodCreated = ({ ns, name }) =>
      h.clock.schedule(500, () => {
        h.fake.start(ns, name);
        h.clock.schedule(1500, () => {
          h.fake.setAgentState(
            ns,
            name,
            { running: { startedAt: new Date(h.clock.wallNow()).toISOString() } },
            "Running",
            { restartCount: 1 },
          );
          restartedAt = h.clock.now();
        });
      });
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(h.clock.now() - restartedAt).toBeGreaterThanOrEqual(DEFAULT_WAIT.confirmStartMs);
  });

  it("a pull failure names the failing pod's image, not the configured one", async () => {
    const h = harness();
    // A never-started pod from an earlier configuration (another digest) that cannot be pulled; the user has since
    // configured a new image. Row 6 reports it (never replaces it): the answer must name what is really failing.
    const old = `ghcr.io/block/buzz-sprig@sha256:${"1".repeat(64)}`;
    const earlier = inputsFor(agentA(), { namespace: NS, image: old });
    const manifest = podManifest(WHO, earlier.config, "aaaaaaaa", desiredFingerprint(earlier)) as PodObject;
    h.fake.seedPod(NS, manifest);
    h.fake.bind(NS, POD);
    h.fake.setAgentState(
      NS,
      POD,
      {
        waiting: {
          reason: "ErrImagePull",
          message: `rpc error: code = NotFound desc = failed to pull and unpack image "${old}": failed to resolve reference "${old}": ${old}: not found`,
        },
      },
      "Pending",
    );
    const r = await h.deploy();
    expect(errorOf(r)).toBe(`${POD} did not start: ghcr.io has no image at ${old}. Check the digest and repository.`);
    expect(errorOf(r)).not.toContain(h.config.image);
    expect(mutations(h)).toEqual([]);
  });

  it("while a deletion-marked pod finishes its grace period, progress says it is terminating, never Running", async () => {
    const h = harness({ gracefulDeletionMs: 20_000 });
    const uid = seedOurPod(h, { bound: true, state: { running: {} }, phase: "Running" });
    const seeded = h.fake.pod(NS, POD);
    await h.clock.run(
      h.fake.deletePod(NS, POD, { uid, resourceVersion: seeded?.metadata.resourceVersion ?? "" } as never, {
        kind: "gc-terminated",
      }),
    );
    h.kubeletStartsAfter(1000);
    const lines: string[] = [];
    const start = h.clock.now();
    const r = await h.clock.run(
      deploy(
        h.inputs,
        { ...h.deps, onProgress: (p) => lines.push(`${p.action}: ${p.condition ?? ""}`) },
        { startedAt: start, loopDeadlineAt: start + 55_000, deadlineSeconds: 60 },
      ),
    );
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    const waiting = lines.filter((l) => l.startsWith("await-disappearance"));
    expect(waiting.length).toBeGreaterThan(0);
    for (const l of waiting)
      expect(l).toBe("await-disappearance: the pod is terminating (deletion requested; grace period 60s)");
    // Until the create, nothing said "Running": the old pod was dying all along.
    expect(lines.slice(0, lines.indexOf("create: ")).join("\n")).not.toContain("the pod is Running");
  });

  it("a deletion-marked pod is waited out, then the agent is created", async () => {
    const h = harness({ gracefulDeletionMs: 20_000 });
    const uid = seedOurPod(h, { bound: true, state: { running: {} }, phase: "Running" });
    // Someone (a stop) already marked it; it still reads Running for its grace period.
    const seeded = h.fake.pod(NS, POD);
    await h.clock.run(
      h.fake.deletePod(NS, POD, { uid, resourceVersion: seeded?.metadata.resourceVersion ?? "" } as never, {
        kind: "gc-terminated",
      }),
    );
    h.kubeletStartsAfter(1000);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    const creates = h.fake.calls.filter((c) => c.op === "createPod");
    expect(creates).toHaveLength(1);
    expect(creates[0]?.at).toBeGreaterThanOrEqual(20_000);
    expect(h.fake.pod(NS, POD)?.metadata.uid).not.toBe(uid);
  });

  it("CreateContainerConfigError with its Secret present is observed, not replaced", async () => {
    const h = harness();
    seedOurPod(h, { state: { waiting: { reason: "CreateContainerConfigError" } } });
    const r = await h.deploy({ deadlineSeconds: 30 });
    expect(errorOf(r)).toMatch(/^startup not confirmed within 25s/);
    expect(mutations(h)).toEqual([]);
  });

  it("CreateContainerConfigError with its Secret confirmed absent is a fenced replace", async () => {
    const h = harness();
    seedOurPod(h, { state: { waiting: { reason: "CreateContainerConfigError" } }, withSecret: false });
    h.kubeletStartsAfter(1000);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual(["deletePod:accepted", "createSecret:created", "createPod:created"]);
    expect(h.fake.calls.find((c) => c.op === "deletePod")?.authority).toBe("provably-broken");
  });

  it("a read error on the Secret check is never read as absence", async () => {
    const h = harness();
    seedOurPod(h, { state: { waiting: { reason: "CreateContainerConfigError" } } });
    h.fake.faults.push((c) => (c.op === "getSecret" ? "transport" : undefined));
    const r = await h.deploy();
    expect(errorOf(r)).toBe(`could not check whether secret ${POD}-aaaaaaaa exists: read ECONNRESET`);
    expect(mutations(h)).toEqual([]);
  });

  it("each attempt stamps its own generation", async () => {
    const h = harness();
    h.fake.onPodCreated = ({ ns, name }) =>
      h.clock.schedule(500, () =>
        h.fake.setAgentState(ns, name, { terminated: { exitCode: 1, reason: "Error" } }, "Failed"),
      );
    const nonces: Array<string | undefined> = [];
    for (const expected of ["0f3a91cc", "0f3a91cd"]) {
      await h.deploy();
      nonces.push(h.fake.secretData(NS, `${POD}-${expected}`)?.BUZZ_MANAGED_AGENT_START_NONCE);
    }
    expect(nonces).toEqual(["0f3a91cc", "0f3a91cd"]);
    expect(h.fake.calls.filter((c) => c.op === "createSecret").map((c) => c.name)).toEqual([
      `${POD}-0f3a91cc`,
      `${POD}-0f3a91cd`,
    ]);
  });

  it("a crash exit writes one Secret and one Pod and answers K4; the next deploy collects it first and retries once", async () => {
    const h = harness();
    h.fake.onPodCreated = ({ ns, name }) =>
      h.clock.schedule(500, () => {
        h.fake.bind(ns, name);
        h.fake.setAgentState(
          ns,
          name,
          { terminated: { exitCode: 2, reason: "Error", message: "panic: secret value" } },
          "Failed",
        );
      });
    const first = await h.deploy();
    expect(errorOf(first)).toBe(
      `${POD} was created by this deploy and did not stay running: the container exited with code 2 (Error). Not retrying in this call — an immediate exit recurs until its cause is fixed. Check the agent's configuration and press Start to try again.`,
    );
    expect(mutations(h)).toEqual(["createSecret:created", "createPod:created"]);
    h.kubeletStartsAfter(500);
    const mark = h.fake.calls.length;
    const second = await h.deploy();
    expect(answerOf(second)).toEqual({ ok: true, agentId: POD });
    const later = h.fake.calls.slice(mark).filter((c) => c.op.startsWith("create") || c.op.startsWith("delete"));
    expect(later.map((c) => `${c.op}:${c.authority ?? c.outcome}`)).toEqual([
      "deletePod:gc-terminated",
      "deleteSecret:accepted",
      "createSecret:created",
      "createPod:created",
    ]);
    expect(h.fake.secretNames(NS)).toEqual([`${POD}-0f3a91cd`]);
  });

  it("after GC deleted a pod the loop reads again before acting, never on the observation GC made stale", async () => {
    const h = harness();
    seedOurPod(h, { bound: true, state: { terminated: { exitCode: 1, reason: "Error" } } });
    h.kubeletStartsAfter(500);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    const ops = h.fake.calls.map((c) => c.op);
    const afterGcDelete = ops.slice(ops.indexOf("deletePod") + 1, ops.indexOf("createSecret"));
    expect(afterGcDelete, "a quorum GET between the GC delete and the create").toContain("getPod");
  });

  it("old residue is replaced once", async () => {
    const h = harness();
    h.fake.faults.push((c) => (c.op === "listPods" ? { code: 500, reason: "InternalError" } : undefined));
    seedOurPod(h, { bound: true, state: { terminated: { exitCode: 0, reason: "Completed" } } });
    h.kubeletStartsAfter(1000);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual(["deletePod:accepted", "createSecret:created", "createPod:created"]);
    expect(h.fake.calls.find((c) => c.op === "deletePod")?.authority).toBe("terminated");
  });

  it("a never-started pod whose intent diverged is replaced (the wedge escape)", async () => {
    const h = harness();
    seedOurPod(h, { intent: "0".repeat(64), phase: "Pending" });
    h.kubeletStartsAfter(1000);
    expect(answerOf(await h.deploy())).toEqual({ ok: true, agentId: POD });
    expect(h.fake.calls.find((c) => c.op === "deletePod")?.authority).toBe("intent-diverged");
  });

  it.each([
    ["without the management marker", { labels: {} }],
    ["with another agent's full pubkey", { annotations: { [PUBKEY_FULL_ANNOTATION]: "f".repeat(64) } }],
    [
      "with binding version 3",
      { labels: { "app.kubernetes.io/managed-by": "buzz-backend-kubernetes", "buzz.block.xyz/binding-version": "3" } },
    ],
  ])("a foreign pod %s answers K5 with nothing deleted and no Secret written", async (_name, meta) => {
    const h = harness();
    h.fake.seedPod(NS, {
      metadata: { name: POD, labels: {}, annotations: {}, ...meta },
      spec: { containers: [] },
    } as PodObject);
    const r = await h.deploy();
    expect(errorOf(r)).toBe(
      `a pod named ${POD} already exists in this namespace but is not managed by this provider for this agent (it lacks the management marker or carries a different agent identity). Remove it, or deploy this agent to a different namespace.`,
    );
    expect(mutations(h)).toEqual([]);
  });

  it("a transport error on the delete is never NotFound: H4 and the pod stays", async () => {
    const h = harness();
    seedOurPod(h, { bound: true, state: { terminated: { exitCode: 0 } } });
    h.fake.faults.push((c) => (c.op === "deletePod" ? "transport" : undefined));
    const r = await h.deploy();
    expect(errorOf(r)).toBe(`could not delete pod ${POD}: read ECONNRESET`);
    expect(h.fake.pod(NS, POD)).toBeDefined();
    expect(mutations(h).filter((m) => m.startsWith("create"))).toEqual([]);
  });

  it("three consecutive read errors answer H5", async () => {
    const h = harness();
    h.fake.faults.push((c) =>
      c.op === "getPod" ? { code: 500, reason: "InternalError", message: "etcdserver: request timed out" } : undefined,
    );
    const r = await h.deploy();
    expect(errorOf(r)).toBe(`could not read pod ${POD}: InternalError: etcdserver: request timed out`);
    expect(mutations(h)).toEqual([]);
  });

  it("namespace denial answers G2 with nothing written", async () => {
    const h = harness({ namespace: false });
    h.fake.faults.push((c) => (c.op === "createNamespace" ? { code: 403, reason: "Forbidden" } : undefined));
    const r = await h.deploy();
    expect(errorOf(r)).toBe(
      `not authorized to create namespace ${NS}. Ask a cluster administrator to run \`kubectl create namespace ${NS}\`, then try again.`,
    );
    expect(mutations(h)).toEqual(["createNamespace:Forbidden"]);
  });

  it("an absent namespace is created (audited) and a 403 on its GET is G1", async () => {
    const h = harness({ namespace: false });
    h.kubeletStartsAfter(100);
    expect(answerOf(await h.deploy())).toEqual({ ok: true, agentId: POD });
    expect(h.fake.hasNamespace(NS)).toBe(true);
    expect(h.audit.of("k8s.namespace.create").map((p) => p.phase)).toEqual(["intent", "result"]);
    const g = harness({ namespace: false });
    g.fake.faults.push((c) =>
      c.op === "getNamespace" ? { code: 403, reason: "Forbidden", message: "no" } : undefined,
    );
    expect(errorOf(await g.deploy())).toBe(`could not check whether namespace ${NS} exists: Forbidden: no`);
  });

  it("a failing GC pass never fails the deploy", async () => {
    const h = harness();
    h.fake.faults.push((c) => (c.op === "listSecrets" ? "transport" : undefined));
    h.kubeletStartsAfter(100);
    expect(answerOf(await h.deploy())).toEqual({ ok: true, agentId: POD });
    expect(h.log.lines.some((l) => l.includes("gc: preflight pass skipped"))).toBe(true);
  });

  it("an audit intent that cannot be written answers E2 and makes no mutation", async () => {
    const h = harness();
    h.audit.failIntents = true;
    const r = await h.deploy();
    expect(errorOf(r)).toBe("could not write the audit record: disk I/O error");
    expect(mutations(h)).toEqual([]);
  });

  it("GC ages orphan Secrets by the server's Date only", async () => {
    const h = harness();
    const wall = h.clock.wallNow();
    const env = buildEnv(agentA(), h.config, "11111111");
    if (!env.ok) throw new Error(env.error);
    h.fake.seedSecret(NS, secretManifest(WHO, h.config, "11111111", env.value), wall - 1_200_000);
    h.fake.seedSecret(NS, secretManifest(WHO, h.config, "22222222", env.value), wall - 1_199_000);
    h.kubeletStartsAfter(100);
    await h.deploy();
    expect(h.fake.secretNames(NS).sort()).toEqual([`${POD}-0f3a91cc`, `${POD}-22222222`]);
    const gcDeletes = h.audit.of("k8s.secret.delete", "intent");
    expect(gcDeletes.map((p) => [p.object, p.authority])).toEqual([[`${POD}-11111111`, "gc-orphan"]]);
  });

  it("a fresh deploy whose GC plans nothing acts on the fast path's 404, with no second read before the create", async () => {
    const h = harness();
    h.kubeletStartsAfter(100);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    // The watch opens before the creates (issue 19) and is no read: left out of the order checked here.
    const before = ops(h)
      .slice(0, ops(h).indexOf("createSecret"))
      .filter((op) => op !== "watchPod");
    expect(before.filter((op) => op === "getPod")).toHaveLength(1); // the fast path's (issue 19)
    expect(before.slice(2).sort()).toEqual(["listPods", "listSecrets"]);
  });

  it("a fresh deploy opens its watch before the Secret create, and the pod's own ADDED event costs no GET (the start costs one, its confirmation one more)", async () => {
    const h = harness();
    h.kubeletStartsAfter(100);
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    const all = ops(h);
    expect(all.indexOf("watchPod")).toBeGreaterThan(-1);
    expect(all.indexOf("watchPod")).toBeLessThan(all.indexOf("createSecret"));
    expect(all.slice(all.indexOf("createPod") + 1).filter((op) => op === "getPod")).toHaveLength(2);
  });

  it("a fresh deploy whose GC deletes an orphan Secret reads the pod again after that delete, before the create", async () => {
    const h = harness();
    const env = buildEnv(agentA(), h.config, "11111111");
    if (!env.ok) throw new Error(env.error);
    h.fake.seedSecret(NS, secretManifest(WHO, h.config, "11111111", env.value), h.clock.wallNow() - 1_200_000);
    h.kubeletStartsAfter(100);
    await h.deploy();
    const all = ops(h).filter((op) => op !== "watchPod"); // opened before the creates (issue 19); no read
    expect(all.slice(all.indexOf("deleteSecret") + 1, all.indexOf("createSecret"))).toEqual(["getPod"]);
  });

  it("without a server Date no orphan is swept, and a skewed proxy clock is what counts", async () => {
    const none = harness({ serverDate: "none" });
    const env = buildEnv(agentA(), none.config, "11111111");
    if (!env.ok) throw new Error(env.error);
    none.fake.seedSecret(
      NS,
      secretManifest(WHO, none.config, "11111111", env.value),
      none.clock.wallNow() - 10_000_000,
    );
    none.kubeletStartsAfter(100);
    await none.deploy();
    expect(none.fake.secretNames(NS)).toContain(`${POD}-11111111`);
    const skewed = harness({ serverDate: 1_200_000 });
    skewed.fake.seedSecret(NS, secretManifest(WHO, skewed.config, "11111111", env.value), skewed.clock.wallNow());
    skewed.kubeletStartsAfter(100);
    await skewed.deploy();
    expect(skewed.fake.secretNames(NS)).not.toContain(`${POD}-11111111`);
  });

  it("the race loser adopts the winner, drops only its own Secret and succeeds when the winner starts", async () => {
    const h = harness();
    // Another deploy's pod appears between our Secret create and our Pod create.
    h.fake.beforeServe = (call) => {
      if (call.op === "createPod") {
        h.fake.beforeServe = undefined;
        seedOurPod(h, { generation: "bbbbbbbb", phase: "Pending" });
        h.clock.schedule(5000, () => h.fake.start(NS, POD));
      }
    };
    const r = await h.deploy();
    expect(answerOf(r)).toEqual({ ok: true, agentId: POD });
    expect(mutations(h)).toEqual(["createSecret:created", "createPod:AlreadyExists", "deleteSecret:accepted"]);
    expect(h.fake.secretNames(NS)).toEqual([`${POD}-bbbbbbbb`]);
    expect(h.audit.of("k8s.secret.delete", "intent")[0]?.authority).toBe("race-loser");
  });

  it("the loser never replaces a divergent never-started winner", async () => {
    const h = harness();
    h.fake.beforeServe = (call) => {
      if (call.op === "createPod") {
        h.fake.beforeServe = undefined;
        seedOurPod(h, { generation: "bbbbbbbb", intent: "0".repeat(64), phase: "Pending" });
      }
    };
    const r = await h.deploy({ deadlineSeconds: 30 });
    expect(errorOf(r)).toBe(
      `startup not confirmed within 25s for ${POD} (another deploy of this agent created it): the pod is Pending`,
    );
    expect(mutations(h).filter((m) => m.startsWith("deletePod"))).toEqual([]);
  });

  it("the loser answers K7 for a dying winner, even one still reporting started", async () => {
    const h = harness();
    h.fake.beforeServe = (call) => {
      if (call.op === "createPod") {
        h.fake.beforeServe = undefined;
        const uid = seedOurPod(h, { generation: "bbbbbbbb", bound: true, state: { running: {} }, phase: "Running" });
        const rv = h.fake.pod(NS, POD)?.metadata.resourceVersion ?? "";
        void h.fake.deletePod(NS, POD, { uid, resourceVersion: rv } as never, { kind: "gc-terminated" });
      }
    };
    const r = await h.deploy();
    expect(errorOf(r)).toBe(
      `${POD} was created by another deploy of this agent and is already being deleted; try again`,
    );
  });

  it("a definite pod-create rejection removes our unreferenced Secret and answers H3", async () => {
    const h = harness();
    h.fake.faults.push((c) =>
      c.op === "createPod"
        ? { code: 422, reason: "Invalid", message: "spec.containers[0].resources: bad quantity" }
        : undefined,
    );
    const r = await h.deploy();
    expect(errorOf(r)).toBe(`could not create pod ${POD}: Invalid: spec.containers[0].resources: bad quantity`);
    expect(h.fake.secretNames(NS)).toEqual([]);
    expect(h.audit.of("k8s.secret.delete", "intent")[0]?.authority).toBe("failed-pod-create");
  });

  it("an ambiguous pod-create failure leaves the Secret for the orphan sweep", async () => {
    const h = harness();
    h.fake.faults.push((c) => (c.op === "createPod" ? "transport" : undefined));
    expect(errorOf(await h.deploy())).toBe(`could not create pod ${POD}: read ECONNRESET`);
    expect(h.fake.secretNames(NS)).toEqual([`${POD}-0f3a91cc`]);
  });

  it("a pod that vanishes after our create answers K4 without a second attempt", async () => {
    const h = harness();
    h.fake.onPodCreated = ({ ns, name, uid }) =>
      h.clock.schedule(500, () => h.fake.finishGracefulDeletion(ns, name, uid));
    const r = await h.deploy();
    expect(errorOf(r)).toMatch(/was created by this deploy and did not stay running: the pod no longer exists\./);
    expect(h.fake.calls.filter((c) => c.op === "createPod")).toHaveLength(1);
  });

  it("a terminating pod that outlives the deadline answers K3", async () => {
    const h = harness({ gracefulDeletionMs: 10_000_000 });
    seedOurPod(h, { bound: true, state: { terminated: { exitCode: 0 } }, phase: "Running" });
    const r = await h.deploy({ deadlineSeconds: 30 });
    expect(errorOf(r)).toBe(`timed out after 25s waiting for ${POD} to finish terminating`);
  });

  it("the watch detects a start well before the 2 s poll, and a forbidden watch still succeeds by polling", async () => {
    const watched = harness();
    watched.kubeletStartsAfter(300);
    await watched.deploy();
    const started = watched.clock.now();
    const polled = harness({ watchForbidden: true });
    polled.kubeletStartsAfter(300);
    expect(answerOf(await polled.deploy())).toEqual({ ok: true, agentId: POD });
    // Each answer comes one confirmation window after the start was first seen (issue 34).
    expect(started - DEFAULT_WAIT.confirmStartMs).toBeLessThan(1000);
    expect(polled.clock.now() - DEFAULT_WAIT.confirmStartMs).toBeGreaterThanOrEqual(2000);
  });

  it("every pod delete is audited as an intent/result pair carrying the authorising observation's fence", async () => {
    const h = harness();
    seedOurPod(h, { bound: true, state: { terminated: { exitCode: 0 } } });
    h.fake.faults.push((c) => (c.op === "listPods" ? "transport" : undefined));
    const observed = h.fake.pod(NS, POD);
    h.kubeletStartsAfter(100);
    await h.deploy();
    const [intent, result] = h.audit.of("k8s.pod.delete");
    expect(intent?.fence).toEqual({
      kind: "precondition",
      uid: observed?.metadata.uid,
      resourceVersion: observed?.metadata.resourceVersion,
    });
    expect(result?.action_id).toBe(intent?.action_id);
    expect(result?.outcome).toBe("Accepted");
    expect(JSON.stringify(h.audit.records)).not.toContain("nsec1");
  });

  it("repeated identical deploys against a pending pod never delete, whatever the wake schedule (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 40_000 }),
            fc.constantFrom("ContainerCreating", "PodInitializing", "ErrImagePull"),
          ),
          { maxLength: 6 },
        ),
        fc.integer({ min: 1, max: 3 }),
        async (writes, repeats) => {
          const h = harness();
          seedOurPod(h, { bound: true, state: { waiting: { reason: "ContainerCreating" } } });
          for (const [at, reason] of writes) {
            h.clock.schedule(at, () =>
              h.fake.setAgentState(NS, POD, { waiting: { reason, message: "dial tcp: i/o timeout" } }),
            );
          }
          for (let i = 0; i < repeats; i++) await h.deploy({ deadlineSeconds: 30 });
          expect(mutations(h)).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  });

  it("other inputs produce their own generation but the same pod name", async () => {
    const h = harness();
    h.kubeletStartsAfter(100);
    const other = inputsFor({ ...agentA(), relay_url: "wss://other.example" });
    expect(answerOf(await h.deploy({ inputs: other }))).toEqual({ ok: true, agentId: POD });
    expect(ops(h)).toContain("createPod");
  });
});

describe("the persistent workspace claim (spec/kubernetes.md §14.3)", () => {
  const withClaim = () =>
    inputsFor(agentA(), {
      namespace: NS,
      image: "ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76",
      workspace_storage: "20Gi",
    });

  it("is created once on the create edge, reused by later generations and never deleted", async () => {
    const h = harness();
    const inputs = withClaim();
    h.fake.onPodCreated = ({ ns, name }) =>
      h.clock.schedule(100, () => h.fake.setAgentState(ns, name, { terminated: { exitCode: 0 } }, "Succeeded"));
    await h.deploy({ inputs });
    h.kubeletStartsAfter(100);
    expect(answerOf(await h.deploy({ inputs }))).toEqual({ ok: true, agentId: POD });
    expect(h.fake.calls.filter((c) => c.op === "createClaim").map((c) => c.outcome)).toEqual(["created"]);
    expect(h.fake.calls.filter((c) => c.op === "getClaim")).toHaveLength(2);
    expect(h.fake.pod(NS, POD)?.metadata.labels?.["buzz.block.xyz/binding-version"]).toBe("2");
  });

  it("a claim owned by another identity answers its J-row and writes no Secret", async () => {
    const h = harness();
    await h.clock.run(
      h.fake.createClaim(NS, {
        metadata: {
          name: `${POD}-workspace`,
          labels: {
            "buzz.block.xyz/agent-pubkey": WHO.pubkeyLabel,
            "app.kubernetes.io/managed-by": "buzz-backend-kubernetes",
            "buzz.block.xyz/binding-version": "2",
          },
          annotations: { [PUBKEY_FULL_ANNOTATION]: "f".repeat(64) },
        },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "20Gi" } } },
      }),
    );
    const r = await h.deploy({ inputs: withClaim() });
    expect(errorOf(r)).toBe(`persistent workspace claim ${POD}-workspace belongs to a different agent identity`);
    expect(h.fake.secretNames(NS)).toEqual([]);
  });
});

describe("brands are minted in one place (spec/kubernetes.md §7.3)", () => {
  it("no module outside its minting file asserts a value into VerifiedPod, Fence or QuorumPod", async () => {
    const { readdirSync, readFileSync, statSync } = await import("node:fs");
    const { join } = await import("node:path");
    const allowed = new Set([
      "src/core/kubernetes/verify.ts",
      "src/core/kubernetes/quorum.ts",
      "src/core/kubernetes/classify.ts",
    ]);
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir)) {
        const p = join(dir, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (
          p.endsWith(".ts") &&
          !p.endsWith(".test.ts") &&
          !allowed.has(p) &&
          /as (VerifiedPod|Fence|QuorumPod|DeleteAction)\b/.test(readFileSync(p, "utf8"))
        )
          offenders.push(p);
      }
    };
    walk("src");
    expect(offenders).toEqual([]);
  });
});
