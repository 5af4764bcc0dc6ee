import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { latestCondition, unreadableCondition } from "./condition.js";
import { classifyPullFailure, type PullFailure, pullFailureMessage } from "./pull-failure.js";
import { rawPod } from "../../../test/support/kubernetes/pods.js";
import { backOffText, PULL_TEXTS } from "../../../test/support/kubernetes/pull-texts.js";

const backOff = backOffText;

describe("pull-failure classes (spec/kubernetes.md §10.1)", () => {
  const ref = "ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";
  const digest = ref.split("@")[1] as string;
  const url = `https://ghcr.io/v2/block/buzz-sprig/manifests/${digest}`;
  it.each([
    [PULL_TEXTS.manifestUnknown(ref), "manifest-unknown"],
    [PULL_TEXTS.unauthorizedStatus(ref, url), "unauthorized"],
    [
      PULL_TEXTS.forbiddenToken(
        ref,
        "https://ghcr.io/token?scope=repository%3Ablock%2Fbuzz-sprig%3Apull&service=ghcr.io",
      ),
      "unauthorized",
    ],
    [PULL_TEXTS.pullAccessDenied(ref), "unauthorized"],
    [PULL_TEXTS.archContainerd(ref), "arch-mismatch"],
    [PULL_TEXTS.archDockerd(ref), "arch-mismatch"],
    [PULL_TEXTS.refused(ref, `http://127.0.0.1:1/v2/block/buzz-sprig/manifests/${digest}?ns=ghcr.io`), null],
    [PULL_TEXTS.commitDigest(ref, digest, `sha256:${"4013".repeat(16)}`), null],
    [PULL_TEXTS.crioUnknown(digest, "ghcr.io/block/buzz-sprig"), "manifest-unknown"],
    [PULL_TEXTS.crioUnauthorized(digest, "ghcr.io/block/buzz-sprig"), "unauthorized"],
    [backOff(ref, PULL_TEXTS.manifestUnknown(ref)), "manifest-unknown"],
    [backOff(ref, PULL_TEXTS.unauthorizedStatus(ref, url)), "unauthorized"],
    [`Back-off pulling image ${JSON.stringify(ref)}`, null],
    ['rpc error: code = Unknown desc = failed to pull image "x": dial tcp 10.1.2.3:443: i/o timeout', null],
    ["", null],
  ])("%j is %s", (message, expected) => {
    expect(classifyPullFailure(message)).toBe(expected);
  });

  it("a gRPC code reserved for the case decides when no link names it", () => {
    expect(
      classifyPullFailure(
        'rpc error: code = NotFound desc = failed to pull and unpack image "x@sha256:00": something new',
      ),
    ).toBe("manifest-unknown");
    expect(classifyPullFailure('rpc error: code = PermissionDenied desc = failed to pull image "x"')).toBe(
      "unauthorized",
    );
    expect(classifyPullFailure('rpc error: code = Unavailable desc = failed to pull image "x"')).toBeNull();
  });

  // issue 34: substrings of free text misled (a connection-refused pull of a digest containing 401 read as "not
  // authorized"; a repository named `denied` or `not-found` would too). No image name, host or digest can change the
  // class: each real text is rebuilt around arbitrary references from the grammar a registry accepts.
  it("no digest, repository or registry host changes the class of a real message (property)", () => {
    const word = fc.oneof(
      fc.constantFrom(
        "denied",
        "not-found",
        "unauthorized",
        "401",
        "403",
        "manifest-unknown",
        "insufficient_scope",
        "authorization-failed",
        "no-match",
        "404",
      ),
      fc.stringMatching(/^[a-z0-9]{1,10}$/),
    );
    const component = fc
      .tuple(word, fc.constantFrom("", "-", ".", "_", "__"), fc.stringMatching(/^[a-z0-9]{0,6}$/))
      .map(([a, sep, b]) => (b === "" ? a : `${a}${sep}${b}`));
    const repo = fc.array(component, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"));
    const host = fc.oneof(
      fc.constantFrom(
        "ghcr.io",
        "127.0.0.1:5000",
        "localhost:5000",
        "registry-401.example",
        "denied.example",
        "not-found.example:403",
        "berth.invalid",
      ),
      fc.stringMatching(/^[a-z0-9]{1,8}\.[a-z]{2,4}$/),
    );
    const hex = fc.oneof(
      fc.stringMatching(/^[0-9a-f]{64}$/),
      fc.constantFrom(`${"0".repeat(60)}401f`, `403${"a".repeat(61)}`, `${"4013".repeat(16)}`),
    );
    fc.assert(
      fc.property(host, repo, hex, hex, (h, r, d1, d2) => {
        const d = `sha256:${d1}`;
        const other = `sha256:${d2}`;
        const image = `${h}/${r}@${d}`;
        const url = `http://${h}/v2/${r}/manifests/${d}`;
        const token = `https://${h}/token?scope=repository%3A${encodeURIComponent(r)}%3Apull&service=${h}`;
        const cases: Array<[string, PullFailure | null]> = [
          [PULL_TEXTS.manifestUnknown(image), "manifest-unknown"],
          [PULL_TEXTS.unauthorizedStatus(image, url), "unauthorized"],
          [PULL_TEXTS.forbiddenToken(image, token), "unauthorized"],
          [PULL_TEXTS.pullAccessDenied(image), "unauthorized"],
          [PULL_TEXTS.archContainerd(image), "arch-mismatch"],
          [PULL_TEXTS.archDockerd(image), "arch-mismatch"],
          [PULL_TEXTS.refused(image, `${url}?ns=${h}`), null],
          [PULL_TEXTS.commitDigest(image, d, other), null],
          [PULL_TEXTS.crioUnknown(d, `${h}/${r}`), "manifest-unknown"],
          [PULL_TEXTS.crioUnauthorized(d, `${h}/${r}`), "unauthorized"],
        ];
        for (const [message, expected] of cases) {
          expect(classifyPullFailure(message), message).toBe(expected);
          expect(classifyPullFailure(backOff(image, message)), message).toBe(expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("messages name the image and registry and nothing from the kubelet", () => {
    const image = "ghcr.io/block/buzz-sprig@sha256:abc";
    expect(pullFailureMessage("unauthorized", image)).toBe(
      "the cluster is not authorized to pull ghcr.io/block/buzz-sprig@sha256:abc from ghcr.io. This pull retries indefinitely and will not succeed on its own: grant the cluster's nodes access to that registry.",
    );
    expect(pullFailureMessage("manifest-unknown", image)).toBe(
      "ghcr.io has no image at ghcr.io/block/buzz-sprig@sha256:abc. Check the digest and repository.",
    );
    expect(pullFailureMessage("arch-mismatch", image)).toBe(
      `${image} has no variant for the architecture of the nodes it was scheduled on.`,
    );
  });
});

describe("latest condition and redaction (spec/kubernetes.md §10.3–§10.4)", () => {
  const SECRETS = "Bearer eyJabc password=hunter2 nsec1qqqq token=xyz";

  it.each([
    [
      rawPod({ agentState: { waiting: { reason: "ErrImagePull", message: SECRETS } } }),
      "the container is waiting, reason ErrImagePull",
    ],
    [
      rawPod({ agentState: { terminated: { exitCode: 3, reason: "Error", message: SECRETS } } }),
      "the container exited with code 3 (Error)",
    ],
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
    pod.status = {
      phase: "Pending",
      conditions: [
        { type: "Ready", status: "True" },
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/3 nodes are available: Insufficient memory",
        },
      ],
    };
    expect(latestCondition(pod)).toBe(
      "pod condition PodScheduled is false: Unschedulable: 0/3 nodes are available: Insufficient memory",
    );
    pod.status = { conditions: [{ type: "PodScheduled", status: "False" }] };
    expect(latestCondition(pod)).toBe("pod condition PodScheduled is false");
    pod.status = { conditions: [{ type: "PodScheduled", status: "False", message: "m" }] };
    expect(latestCondition(pod)).toBe("pod condition PodScheduled is false: m");
  });

  it("says when the condition could not be read", () => {
    expect(unreadableCondition("Timeout")).toBe("the pod's condition could not be read: Timeout");
  });
});
