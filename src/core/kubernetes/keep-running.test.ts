import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ALL_STARTUPS, quorum, rawPod, verified } from "../../../test/support/kubernetes/pods.js";
import { RESTART_POLICIES, type RestartPolicy } from "../node/restart-policy.js";
import { judgeAgentPod, type KeepObservation } from "./keep-running.js";
import type { Startup } from "./decode.js";

const fp = "a".repeat(64);

function seen(startup: Startup, status: { exitCode?: number; phase?: string } = {}, marked = false): KeepObservation {
  const agentState =
    startup.kind === "terminated" && status.exitCode !== undefined
      ? { terminated: { exitCode: status.exitCode } }
      : undefined;
  return {
    kind: "verified",
    pod: verified(startup, fp, { marked, uid: "uid-7", rv: "42" }),
    raw: quorum(rawPod({ ...(agentState ? { agentState } : {}), ...(status.phase ? { phase: status.phase } : {}) })),
  };
}

describe("the loop's verdict on one agent pod (issue 16, core/kubernetes/keep-running.ts)", () => {
  it("a started pod is a strict no-op under every policy", () => {
    for (const policy of RESTART_POLICIES)
      expect(judgeAgentPod(seen({ kind: "started" }), policy).kind, policy).toBe("none");
  });

  it("no pod is never a reason to create: a stopped agent stays stopped", () => {
    for (const policy of RESTART_POLICIES) expect(judgeAgentPod({ kind: "absent" }, policy).kind).toBe("none");
  });

  it("a failed pod under on-failure is replaced with the fence of the observation that judged it", () => {
    const v = judgeAgentPod(seen({ kind: "terminated" }, { exitCode: 3, phase: "Failed" }), "on-failure");
    expect(v).toMatchObject({ kind: "replace", fence: { uid: "uid-7", resourceVersion: "42" } });
  });

  it("a clean exit under on-failure is final, under always it is replaced, under never nothing is", () => {
    const clean = seen({ kind: "terminated" }, { exitCode: 0, phase: "Succeeded" });
    expect(judgeAgentPod(clean, "on-failure").kind).toBe("none");
    expect(judgeAgentPod(clean, "always").kind).toBe("replace");
    expect(judgeAgentPod(clean, "never").kind).toBe("none");
    expect(judgeAgentPod(seen({ kind: "terminated" }, { exitCode: 1, phase: "Failed" }), "never").kind).toBe("none");
  });

  it("a terminated pod with no exit code counts as failed unless its phase says Succeeded", () => {
    expect(judgeAgentPod(seen({ kind: "terminated" }, { phase: "Failed" }), "on-failure").kind).toBe("replace");
    expect(judgeAgentPod(seen({ kind: "terminated" }, {}), "on-failure").kind).toBe("replace");
    expect(judgeAgentPod(seen({ kind: "terminated" }, { phase: "Succeeded" }), "on-failure").kind).toBe("none");
  });

  it("a deletion-marked pod is left to whoever deleted it, in every startup state", () => {
    for (const startup of ALL_STARTUPS)
      for (const policy of RESTART_POLICIES)
        expect(judgeAgentPod(seen(startup, { exitCode: 1 }, true), policy).kind).toBe("none");
  });

  it("a pull failure alerts and never replaces", () => {
    for (const startup of ALL_STARTUPS.filter((s) => s.kind === "pull-failing")) {
      for (const policy of RESTART_POLICIES)
        expect(judgeAgentPod(seen(startup), policy)).toMatchObject({ kind: "alert", reason: "pull_failing" });
    }
  });

  it("a foreign pod on the agent's name alerts and is never touched", () => {
    expect(judgeAgentPod({ kind: "foreign" }, "always")).toMatchObject({ kind: "alert", reason: "foreign" });
  });

  it("only a verified terminated pod under a restarting policy is ever replaced (property)", () => {
    const startups = fc.constantFrom(...ALL_STARTUPS);
    const policies = fc.constantFrom<RestartPolicy>(...RESTART_POLICIES);
    fc.assert(
      fc.property(
        startups,
        policies,
        fc.boolean(),
        fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
        (startup, policy, marked, exitCode) => {
          const v = judgeAgentPod(seen(startup, exitCode === undefined ? {} : { exitCode }, marked), policy);
          if (v.kind === "replace") {
            expect(startup.kind).toBe("terminated");
            expect(marked).toBe(false);
            expect(policy).not.toBe("never");
          }
        },
      ),
    );
  });
});
