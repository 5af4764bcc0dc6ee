/**
 * The Kubernetes routes against the in-process fake apiserver the backend's own tests use (src/kubernetes/fake),
 * injected through `KubernetesAccess` on a real clock: the backend's real converge loop, verbs and audit chain run
 * unchanged behind the API. (The real kube-apiserver tier covers the backend itself: test/k8s-provider.)
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { agentA, configA, GOLDEN_IMAGE_REF, GOLDEN_NSEC, GOLDEN_PUBKEY } from "../support/kubernetes/fixtures.js";
import { realClock } from "../../src/kit/clock.js";
import { FakeCluster } from "../support/kubernetes/fake-cluster.js";
import { API_BASE } from "../../src/server/openapi.js";
import type { KubernetesAccess } from "../../src/server/state.js";
import { type ApiFixture, apiFixture, closeFixtures, type ErrorBody } from "./support.js";

afterEach(closeFixtures);

const NS = configA.namespace;

function fakeAccess(): { fake: FakeCluster; access: KubernetesAccess } {
  const fake = new FakeCluster(realClock, { gracefulDeletionMs: 50, watchTimeoutMs: 5_000 });
  fake.addNamespace(NS);
  // The simulated kubelet starts every pod as soon as it is created.
  fake.onPodCreated = ({ ns, name }) => queueMicrotask(() => fake.start(ns, name));
  // The server closes the cluster after each call; the fake outlives them, as a real apiserver would.
  const shared = new Proxy(fake, { get: (t, p) => (p === "close" ? () => undefined : Reflect.get(t, p)) });
  return {
    fake,
    access: {
      configured: () => ({ configured: true, context: "fake" }),
      connect: async () => ({ ok: true, value: shared }),
      clock: realClock,
    },
  };
}

/** Where the backend's records are: the home's k8s.db on SQLite, the store's own chain on PostgreSQL (issue 20). */
const k8sChain = (fx: ApiFixture): "k8s" | "controller" =>
  fx.state.controller.store.engine.kind === "postgres" ? "controller" : "k8s";

const request = () => ({
  agent: { ...agentA(), launch: { owner_pubkey: "a".repeat(64), command: "goose" } },
  provider_config: configA,
});

describe("Kubernetes agents through the API", { timeout: 60_000 }, () => {
  it("deploy is idempotent; list, status by pod name or pubkey, logs, stop and replace act through the backend, all chained", async () => {
    const { fake, access } = fakeAccess();
    const fx = await apiFixture({ kubernetes: access });
    const first = await fx.call("POST", `${API_BASE}/k8s/agents`, { body: request() });
    expect([first.status, (first.body as { ok: boolean }).ok], first.text).toEqual([200, true]);
    const again = await fx.call("POST", `${API_BASE}/k8s/agents`, { body: request() });
    expect([again.status, again.body]).toEqual([200, first.body]);
    expect(
      fake.calls.filter((c) => c.op === "createPod"),
      "a second deploy creates nothing",
    ).toHaveLength(1);

    const listed = (await fx.call("GET", `${API_BASE}/k8s/agents?namespace=${NS}`)).body as {
      configured: boolean;
      agents: Array<{ name: string; startup: string }>;
    };
    expect(listed.configured).toBe(true);
    expect(listed.agents.map((a) => a.startup)).toEqual(["started"]);
    const pod = listed.agents[0]?.name as string;
    for (const ref of [pod, GOLDEN_PUBKEY]) {
      const status = await fx.call("GET", `${API_BASE}/k8s/agents/${ref}?namespace=${NS}`);
      expect([status.status, status.body], ref).toMatchObject([
        200,
        { name: pod, observed: "verified", startup: "started" },
      ]);
    }
    const logs = await fx.call("GET", `${API_BASE}/k8s/agents/${pod}/logs?namespace=${NS}`);
    expect(logs.body).toEqual({ pod, namespace: NS, log: `log of ${pod}\n` });
    const unknown = await fx.call("GET", `${API_BASE}/k8s/agents/nobody?namespace=${NS}`);
    expect([unknown.status, (unknown.body as ErrorBody).error.code]).toEqual([404, "not_found"]);

    // replace only clears a never-started pod: a started one is refused and left alone
    const refused = await fx.call("POST", `${API_BASE}/k8s/agents/${pod}/replace`, { body: request() });
    expect([refused.status, (refused.body as { ok: boolean; error: string }).error], refused.text).toEqual([
      422,
      expect.stringContaining("has started"),
    ]);
    expect(fake.calls.filter((c) => c.op === "deletePod")).toHaveLength(0);

    const stopped = await fx.call("POST", `${API_BASE}/k8s/agents/${pod}/stop`, {
      body: { namespace: NS, wait: true },
    });
    expect([stopped.status, (stopped.body as { ok: boolean }).ok], stopped.text).toEqual([200, true]);
    expect(fake.calls.filter((c) => c.op === "deletePod")).toHaveLength(1);
    expect(fake.pod(NS, pod), "gone after the graceful deletion").toBeUndefined();
    // with the pod gone, replace re-creates it
    const replaced = await fx.call("POST", `${API_BASE}/k8s/agents/${GOLDEN_PUBKEY}/replace`, { body: request() });
    expect([replaced.status, (replaced.body as { ok: boolean }).ok], replaced.text).toEqual([200, true]);
    expect(fake.calls.filter((c) => c.op === "createPod")).toHaveLength(2);

    const chains = (await fx.call("GET", `${API_BASE}/audit/chains`)).body as { chains: Array<{ name: string }> };
    // On a PostgreSQL store (BERTH_TEST_DATABASE=postgres) the records are the store's chain's and no k8s.db exists.
    const where = k8sChain(fx);
    expect(chains.chains.map((c) => c.name)).toEqual(where === "k8s" ? ["controller", "k8s"] : ["controller"]);
    expect(existsSync(join(fx.dir, "k8s.db"))).toBe(where === "k8s");
    expect((await fx.call("GET", `${API_BASE}/audit/verify?chain=${where}`)).body).toMatchObject({ ok: true });
    const k8sKinds = (
      (await fx.call("GET", `${API_BASE}/audit/events?chain=${where}&limit=1000`)).body as {
        events: Array<{ kind: string; source: string }>;
      }
    ).events
      .filter((e) => e.source === "k8s")
      .map((e) => e.kind);
    expect(k8sKinds).toContain("k8s.pod.create");
    expect(k8sKinds).toContain("k8s.stop");
    const outcomes = (await fx.apiEvents())
      .filter((e) => e.payload.phase === "outcome")
      .map((e) => [e.payload.route, e.payload.status, e.payload.error]);
    expect(outcomes).toEqual([
      ["/api/v1/k8s/agents", 200, null],
      ["/api/v1/k8s/agents", 200, null],
      ["/api/v1/k8s/agents/{name}/replace", 422, "k8s_deploy_failed"],
      ["/api/v1/k8s/agents/{name}/stop", 200, null],
      ["/api/v1/k8s/agents/{name}/replace", 200, null],
    ]);
    expect(k8sKinds).toContain("k8s.replace");
  });

  it("an agent spec with target kubernetes deploys through POST /agents with the same agent.deploy event, and again is unchanged", async () => {
    const { fake, access } = fakeAccess();
    const fx = await apiFixture({ kubernetes: access });
    writeFileSync(join(fx.dir, "scout.nsec"), `${GOLDEN_NSEC}\n`, { mode: 0o600 });
    const spec = {
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name: "scout" },
      spec: {
        target: "kubernetes",
        image: GOLDEN_IMAGE_REF,
        kubernetes: {
          relay_url: "wss://relay.example",
          nsec_file: "scout.nsec",
          command: "goose",
          owner_pubkey: "a".repeat(64),
          provider_config: { namespace: NS },
        },
      },
    };
    const first = await fx.call("POST", `${API_BASE}/agents`, { body: spec });
    expect([first.status, (first.body as { outcome: string }).outcome], first.text).toEqual([200, "started"]);
    const again = await fx.call("POST", `${API_BASE}/agents`, { body: spec });
    expect((again.body as { outcome: string; row: string }).outcome).toBe("unchanged");
    expect(fake.calls.filter((c) => c.op === "createPod")).toHaveLength(1);
    expect(first.text, "the nsec never comes back").not.toContain(GOLDEN_NSEC);
    const agents = (await fx.call("GET", `${API_BASE}/agents`)).body as {
      agents: Array<{ name: string; target: string; state: string }>;
    };
    expect(agents.agents.map((a) => [a.name, a.target, a.state])).toEqual([["scout", "kubernetes", "running"]]);
    const deploys = (
      (await fx.call("GET", `${API_BASE}/audit/events?chain=${k8sChain(fx)}&limit=1000`)).body as {
        events: Array<{ kind: string; source: string }>;
      }
    ).events.filter((e) => e.kind === "agent.deploy");
    expect(deploys.map((e) => e.source)).toEqual(["k8s", "k8s"]);
    // The api.call outcome names the agent.deploy event on the chain it is on.
    const refs = (await fx.apiEvents())
      .filter((e) => e.payload.phase === "outcome")
      .map((e) => (e.payload.refs as { agent_deploy?: { chain: string; hash: string } }).agent_deploy);
    expect(refs.map((r) => r?.chain)).toEqual([k8sChain(fx), k8sChain(fx)]);
    expect(refs.map((r) => r?.hash)).toEqual(deploys.map((e) => (e as unknown as { hash: string }).hash));
  });
});
