import { describe, expect, it } from "vitest";
import { latestCondition, unreadableCondition } from "./condition.js";
import { classifyPullFailure, pullFailureMessage } from "./pull-failure.js";
import { rawPod } from "../../../test/support/kubernetes/pods.js";

describe("pull-failure classes (spec/kubernetes.md §10.1)", () => {
  it.each([
    ["failed to pull: 401 Unauthorized", "unauthorized"],
    ["pull access denied, repository does not exist or may require authorization", "unauthorized"],
    ["authentication required", "unauthorized"],
    ["manifest unknown: manifest unknown", "manifest-unknown"],
    ["ghcr.io/x@sha256:..: not found", "manifest-unknown"],
    ["no match for platform in manifest", "arch-mismatch"],
    ["dial tcp: i/o timeout", null],
    ["", null],
  ])("%j is %s", (message, expected) => {
    expect(classifyPullFailure(message)).toBe(expected);
  });

  it("messages name the image and registry and nothing from the kubelet", () => {
    const image = "ghcr.io/block/buzz-sprig@sha256:abc";
    expect(pullFailureMessage("unauthorized", image)).toBe(
      "the cluster is not authorized to pull ghcr.io/block/buzz-sprig@sha256:abc from ghcr.io. This pull retries indefinitely and will not succeed on its own: grant the cluster's nodes access to that registry.",
    );
    expect(pullFailureMessage("manifest-unknown", image)).toBe("ghcr.io has no image at ghcr.io/block/buzz-sprig@sha256:abc. Check the digest and repository.");
    expect(pullFailureMessage("arch-mismatch", image)).toBe(`${image} has no variant for the architecture of the nodes it was scheduled on.`);
  });
});

describe("latest condition and redaction (spec/kubernetes.md §10.3–§10.4)", () => {
  const SECRETS = "Bearer eyJabc password=hunter2 nsec1qqqq token=xyz";

  it.each([
    [rawPod({ agentState: { waiting: { reason: "ErrImagePull", message: SECRETS } } }), "the container is waiting, reason ErrImagePull"],
    [rawPod({ agentState: { terminated: { exitCode: 3, reason: "Error", message: SECRETS } } }), "the container exited with code 3 (Error)"],
    [rawPod({ agentState: { terminated: { exitCode: 0 } } }), "the container exited with code 0"],
    [rawPod({ phase: "Running" }), "the pod is Running"],
    [rawPod({}), "no condition reported by the cluster"],
  ])("renders %#", (pod, expected) => {
    const text = latestCondition(pod);
    expect(text).toBe(expected);
    for (const word of ["Bearer", "password", "nsec1", "token", "hunter2"]) expect(text).not.toContain(word);
  });

  it("shows the first false pod condition with empty parts dropped", () => {
    const pod = rawPod({ phase: "Pending" });
    pod.status = { phase: "Pending", conditions: [{ type: "Ready", status: "True" }, { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes are available: Insufficient memory" }] };
    expect(latestCondition(pod)).toBe("pod condition PodScheduled is false: Unschedulable: 0/3 nodes are available: Insufficient memory");
    pod.status = { conditions: [{ type: "PodScheduled", status: "False" }] };
    expect(latestCondition(pod)).toBe("pod condition PodScheduled is false");
    pod.status = { conditions: [{ type: "PodScheduled", status: "False", message: "m" }] };
    expect(latestCondition(pod)).toBe("pod condition PodScheduled is false: m");
  });

  it("says when the condition could not be read", () => {
    expect(unreadableCondition("Timeout")).toBe("the pod's condition could not be read: Timeout");
  });
});
