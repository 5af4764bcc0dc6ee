import { describe, expect, it } from "vitest";
import { podManifest } from "../../core/kubernetes/manifests.js";
import type { PodObject } from "../../core/kubernetes/objects.js";
import type { RestartPolicy } from "../../core/node/restart-policy.js";
import { realClock } from "../../kit/clock.js";
import { err, ok } from "../../kit/result.js";
import { FakeCluster } from "../../../test/support/kubernetes/fake-cluster.js";
import { desiredFingerprint, inputsFor, NS } from "../../../test/support/kubernetes/harness.js";
import { WHO } from "../../../test/support/kubernetes/pods.js";
import type { LoadedSpec } from "../../agents/spec-file.js";
import { type ActionResult, type KeeperPorts, KubernetesKeeper } from "./keeper.js";

const inputs = inputsFor();

function world(o: { policy?: RestartPolicy; leader?: boolean; replace?: () => ActionResult } = {}) {
  const fake = new FakeCluster(realClock, { watchForbidden: true });
  fake.addNamespace(NS);
  let now = 1_000_000;
  let leader = o.leader ?? true;
  const replaced: string[] = [];
  const alerts: string[] = [];
  let connects = 0;
  const ports: KeeperPorts = {
    now: () => now,
    shouldAct: () => leader,
    agents: async () => ({
      agents: [
        {
          name: "scout",
          loaded: {} as LoadedSpec,
          policy: o.policy ?? "on-failure",
          context: null,
          namespace: NS,
          identity: WHO,
        },
      ],
      unusable: [],
    }),
    connect: async () => {
      connects++;
      return { ok: true, value: fake };
    },
    replace: async (_a, verdict) => {
      replaced.push(verdict.fence.uid);
      return o.replace?.() ?? ok();
    },
    alert: async (_a, reason) => {
      alerts.push(reason);
    },
    log: () => undefined,
  };
  const seed = (state: Record<string, unknown>, phase: string) => {
    const uid = fake.seedPod(NS, podManifest(WHO, inputs.config, "aaaaaaaa", desiredFingerprint(inputs)) as PodObject);
    fake.bind(NS, WHO.podName);
    fake.setAgentState(NS, WHO.podName, state, phase);
    return uid;
  };
  return {
    fake,
    keeper: new KubernetesKeeper(ports),
    replaced,
    alerts,
    seed,
    connects: () => connects,
    advance: (ms: number) => {
      now += ms;
    },
    lead: (v: boolean) => {
      leader = v;
    },
  };
}

describe("the Kubernetes keeper of berth serve (issue 16)", () => {
  it("replaces a failed pod under on-failure once, with the uid it judged", async () => {
    const w = world();
    const uid = w.seed({ terminated: { exitCode: 2 } }, "Failed");
    await w.keeper.pass();
    expect(w.replaced).toEqual([uid]);
    expect(
      w.fake.calls.filter((c) => c.op === "deletePod"),
      "the keeper itself never deletes: the deploy verb does",
    ).toHaveLength(0);
  });

  it("a running pod is judged with a quorum GET and never replaced, pass after pass", async () => {
    const w = world({ policy: "always" });
    w.seed({ running: {} }, "Running");
    for (let i = 0; i < 3; i++) await w.keeper.pass();
    expect(w.replaced).toEqual([]);
  });

  it("a failed replace backs off 10 s, then 20 s, and chains one alert per distinct reason", async () => {
    const w = world({ replace: () => err("the apiserver said no") });
    w.seed({ terminated: { exitCode: 1 } }, "Failed");
    await w.keeper.pass();
    expect(w.replaced).toHaveLength(1);
    w.advance(9_000);
    await w.keeper.pass();
    expect(w.replaced, "within 10 s of the first attempt").toHaveLength(1);
    w.advance(1_000);
    await w.keeper.pass();
    expect(w.replaced).toHaveLength(2);
    w.advance(19_000);
    await w.keeper.pass();
    expect(w.replaced, "the second wait is 20 s").toHaveLength(2);
    w.advance(1_000);
    await w.keeper.pass();
    expect(w.replaced).toHaveLength(3);
    expect(w.alerts).toEqual(["action_failed:the apiserver said no"]);
  });

  it("a pull failure alerts once and is never replaced", async () => {
    const w = world({ policy: "always" });
    w.seed(
      {
        waiting: {
          reason: "ErrImagePull",
          message: "pull access denied, repository does not exist or may require authorization: 401 Unauthorized",
        },
      },
      "Pending",
    );
    for (let i = 0; i < 3; i++) await w.keeper.pass();
    expect(w.replaced).toEqual([]);
    expect(w.alerts).toEqual(["pull_failing"]);
  });

  it("a process that does not lead the store connects to nothing and acts on nothing", async () => {
    const w = world({ leader: false });
    w.seed({ terminated: { exitCode: 1 } }, "Failed");
    await w.keeper.pass();
    expect([w.connects(), w.replaced.length, w.fake.calls.length]).toEqual([0, 0, 0]);
    w.lead(true);
    await w.keeper.pass();
    expect(w.replaced).toHaveLength(1);
  });

  it("a read error is never a reason to act", async () => {
    const w = world({ policy: "always" });
    w.seed({ terminated: { exitCode: 1 } }, "Failed");
    w.fake.faults.push((call) => (call.op === "getPod" ? "transport" : undefined));
    await w.keeper.pass();
    expect(w.replaced).toEqual([]);
  });
});
