import { describe, expect, it } from "vitest";
import { decodeStartup, isTerminated } from "./decode.js";
import { rawPod } from "../../../test/support/kubernetes/pods.js";

const waiting = (reason: string, message?: string) => ({ waiting: { reason, ...(message ? { message } : {}) } });

describe("startup decoding from pod status (spec/kubernetes.md §6)", () => {
  it.each([
    ["1 running container is started", rawPod({ agentState: { running: {} }, phase: "Running" }), "started"],
    ["1 running wins over a terminal phase", rawPod({ agentState: { running: {} }, phase: "Failed" }), "started"],
    ["2 terminated container", rawPod({ agentState: { terminated: { exitCode: 1 } }, phase: "Running" }), "terminated"],
    [
      "3 Failed phase with a waiting container (P-13)",
      rawPod({ agentState: waiting("ContainerCreating"), phase: "Failed" }),
      "terminated",
    ],
    ["3 Succeeded phase without statuses", rawPod({ phase: "Succeeded" }), "terminated"],
    ["4 InvalidImageName", rawPod({ agentState: waiting("InvalidImageName") }), "provably-broken"],
    [
      "5 pull backoff that may heal",
      rawPod({ agentState: waiting("ImagePullBackOff", "dial tcp: i/o timeout") }),
      "recoverable",
    ],
    ["7 ContainerCreating", rawPod({ agentState: waiting("ContainerCreating"), phase: "Pending" }), "recoverable"],
    [
      "7 phase Running with a waiting container is not started",
      rawPod({ agentState: waiting("PodInitializing"), phase: "Running" }),
      "recoverable",
    ],
    ["8 no status at all (unscheduled)", rawPod({}), "recoverable"],
    ["8 phase Pending only", rawPod({ phase: "Pending" }), "recoverable"],
  ])("row %s", (_name, pod, expected) => {
    const d = decodeStartup(pod);
    expect(d.kind === "decided" ? d.startup.kind : d.kind).toBe(expected);
  });

  it("row 5 classifies a permanent pull failure", () => {
    const d = decodeStartup(rawPod({ agentState: waiting("ErrImagePull", "failed to pull: 401 Unauthorized") }));
    expect(d).toEqual({ kind: "decided", startup: { kind: "pull-failing", failure: "unauthorized" } });
  });

  it("reads only the container named agent", () => {
    const pod = rawPod({ agentState: waiting("ContainerCreating") });
    pod.status = {
      containerStatuses: [
        { name: "sidecar", state: { running: {} } },
        { name: "agent", state: waiting("ContainerCreating") },
      ],
    };
    expect(decodeStartup(pod)).toEqual({ kind: "decided", startup: { kind: "recoverable" } });
  });

  it("row 6 asks for the referenced Secret and decides on its confirmed absence only", () => {
    const pod = rawPod({ agentState: waiting("CreateContainerConfigError"), secretRef: "buzz-agent-x-00000001" });
    expect(decodeStartup(pod)).toEqual({ kind: "needs-secret", secretName: "buzz-agent-x-00000001" });
    expect(decodeStartup(pod, "absent")).toEqual({ kind: "decided", startup: { kind: "provably-broken" } });
    expect(decodeStartup(pod, "present")).toEqual({ kind: "decided", startup: { kind: "recoverable" } });
  });

  it("row 6 probes the last envFrom Secret, the agent's own, when a shared source precedes it (as Buzz's observe.rs reads it)", () => {
    const pod = rawPod({ agentState: waiting("CreateContainerConfigError"), secretRef: "buzz-agent-x-00000001" });
    const agent = pod.spec.containers[0];
    if (!agent) throw new Error("rawPod made no container");
    agent.envFrom = [
      { secretRef: { name: "team-shared-env" } },
      { configMapRef: { name: "settings" } },
      ...(agent.envFrom ?? []),
    ];
    expect(decodeStartup(pod)).toEqual({ kind: "needs-secret", secretName: "buzz-agent-x-00000001" });
  });

  it("row 6 without a Secret reference is recoverable", () => {
    expect(decodeStartup(rawPod({ agentState: waiting("CreateContainerConfigError"), secretRef: null }))).toEqual({
      kind: "decided",
      startup: { kind: "recoverable" },
    });
  });

  it("GC's terminated test never needs the Secret read", () => {
    expect(isTerminated(rawPod({ phase: "Failed" }))).toBe(true);
    expect(isTerminated(rawPod({ agentState: waiting("CreateContainerConfigError") }))).toBe(false);
  });
});
