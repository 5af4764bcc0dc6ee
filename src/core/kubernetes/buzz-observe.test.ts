/**
 * Buzz's own decoding tests, crates/buzz-backend-kubernetes/src/observe.rs at block/buzz@59a8f96 (issue 34: the Buzz
 * unit tests berth covered only in part). Each test is named after Buzz's and holds the cases Buzz's holds that
 * berth's tables did not (a bare "pull access denied"; `Failed` without container statuses; every class's message
 * free of credential words).
 */
import { describe, expect, it } from "vitest";
import { rawPod } from "../../../test/support/kubernetes/pods.js";
import { decodeStartup } from "./decode.js";
import { PULL_FAILURES, pullFailureMessage } from "./pull-failure.js";

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
      expect(startupOf(rawPod({ phase: "Running", agentState: waiting("ErrImagePull", message) })), message).toEqual({ kind: "pull-failing", failure });
    }
    // "a transient network failure must not be reported as permanent"
    expect(startupOf(rawPod({ phase: "Running", agentState: waiting("ImagePullBackOff", "dial tcp: i/o timeout") }))).toEqual({ kind: "recoverable" });
  });

  it("terminal_phase_without_container_status_is_terminated", () => {
    for (const phase of ["Succeeded", "Failed"]) expect(startupOf(rawPod({ phase })), phase).toEqual({ kind: "terminated" });
  });

  it("phase_running_with_waiting_container_is_not_started", () => {
    expect(startupOf(rawPod({ phase: "Running", agentState: waiting("ContainerCreating", "") }))).toEqual({ kind: "recoverable" });
  });

  it("pull_failure_messages_are_actionable_and_redacted", () => {
    const image = `ghcr.io/block/buzz-sprig@sha256:${"a".repeat(64)}`;
    for (const failure of PULL_FAILURES) {
      const msg = pullFailureMessage(failure, image);
      expect(msg).toContain("ghcr.io");
      expect(msg).toContain(image);
      for (const secret of ["Bearer", "password", "nsec1", "token"]) expect(msg, `leaked ${secret}`).not.toContain(secret);
    }
  });
});
