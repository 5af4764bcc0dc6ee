/**
 * Buzz's own decoding tests, crates/buzz-backend-kubernetes/src/observe.rs at block/buzz@59a8f96 (issue 34: the 24
 * Buzz unit tests — observe.rs's 12 and classify.rs's 12, the seed's — that berth covered only in part). classify.rs's
 * 12 are classify.test.ts's first twelve, one for one. Of observe.rs's 12, five live here under Buzz's names (the
 * cases berth's tables lacked: a bare "pull access denied", `Failed` without container statuses, messages free of
 * credential words, a missing intent annotation); the other seven are rows of berth's own tables:
 * running_container_is_started, terminated_container_is_terminated, invalid_image_name_is_provably_broken → decode.test
 * rows 1, 2, 4; config_error_defers_to_a_secret_read → decode.test row 6 (and the last envFrom Secret, as observe.rs
 * reads it); unmarked_or_mismatched_objects_fail_verification, verified_pod_carries_the_fence_and_deletion_mark →
 * verify.test's foreign table and its fence case; secret_ownership_requires_marker_and_annotation → verify.test's
 * Secret case.
 */
import { describe, expect, it } from "vitest";
import { quorum, rawPod, WHO } from "../../../test/support/kubernetes/pods.js";
import { decodeStartup } from "./decode.js";
import { PULL_FAILURES, pullFailureMessage } from "./pull-failure.js";
import { verifyPod } from "./verify.js";

const waiting = (reason: string, message: string) => ({ waiting: { reason, message } });
const startupOf = (pod: ReturnType<typeof rawPod>) => {
  const d = decodeStartup(pod);
  return d.kind === "decided" ? d.startup : d;
};

describe("Buzz observe.rs (block/buzz@59a8f96)", () => {
  it("permanent_pull_failures_are_classified", () => {
    const cases = [
      ["401 Unauthorized", "unauthorized"],
      ["pull access denied", "unauthorized"],
      ["manifest unknown", "manifest-unknown"],
      ["no match for platform in manifest", "arch-mismatch"],
    ] as const;
    for (const [message, failure] of cases) {
      expect(startupOf(rawPod({ phase: "Running", agentState: waiting("ErrImagePull", message) })), message).toEqual({
        kind: "pull-failing",
        failure,
      });
    }
    // "a transient network failure must not be reported as permanent"
    expect(
      startupOf(rawPod({ phase: "Running", agentState: waiting("ImagePullBackOff", "dial tcp: i/o timeout") })),
    ).toEqual({ kind: "recoverable" });
  });

  it("terminal_phase_without_container_status_is_terminated", () => {
    for (const phase of ["Succeeded", "Failed"])
      expect(startupOf(rawPod({ phase })), phase).toEqual({ kind: "terminated" });
  });

  it("phase_running_with_waiting_container_is_not_started", () => {
    expect(startupOf(rawPod({ phase: "Running", agentState: waiting("ContainerCreating", "") }))).toEqual({
      kind: "recoverable",
    });
  });

  it("pull_failure_messages_are_actionable_and_redacted", () => {
    const image = `ghcr.io/block/buzz-sprig@sha256:${"a".repeat(64)}`;
    for (const failure of PULL_FAILURES) {
      const msg = pullFailureMessage(failure, image);
      expect(msg).toContain("ghcr.io");
      expect(msg).toContain(image);
      for (const secret of ["Bearer", "password", "nsec1", "token"])
        expect(msg, `leaked ${secret}`).not.toContain(secret);
    }
  });

  it("missing_intent_annotation_decodes_as_none", () => {
    // No create-intent annotation: null, which classify groups with divergence (classify.test.ts, the seed's
    // missing_recorded_intent_counts_as_divergence).
    const obs = verifyPod(quorum(rawPod({ intent: null })), WHO, { kind: "started" });
    if (obs.kind !== "verified") throw new Error("expected verified");
    expect(obs.pod.recordedIntent).toBeNull();
  });
});
