import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { classify } from "./classify.js";
import { loopStep, loserStep } from "./loop-rules.js";
import { ALL_STARTUPS, verified } from "../../../test/support/kubernetes/pods.js";

const fp = (seed: string) => seed.padEnd(64, "0").slice(0, 64);

describe("the loop's one-create-attempt rule (spec/kubernetes.md §8.7)", () => {
  it("before this call created anything, a create row creates", () => {
    expect(loopStep(classify(null, fp("a")), false)).toEqual({ kind: "create" });
  });

  it("after this call created a pod, its disappearance gives up instead of creating again", () => {
    expect(loopStep(classify(null, fp("a")), true)).toEqual({ kind: "give-up", condition: "gone" });
  });

  it("before this call created anything, a delete row deletes with the classified fence", () => {
    const pod = verified({ kind: "terminated" }, fp("a"));
    const action = classify(pod, fp("a"));
    expect(loopStep(action, false)).toEqual({ kind: "delete", action });
  });

  it("after this call created a pod, a delete row of that pod gives up with its condition instead of deleting", () => {
    for (const startup of [{ kind: "terminated" }, { kind: "provably-broken" }] as const) {
      expect(loopStep(classify(verified(startup, fp("a")), fp("a")), true), startup.kind).toEqual({
        kind: "give-up",
        condition: "observed",
      });
    }
    expect(loopStep(classify(verified({ kind: "recoverable" }, fp("old")), fp("new")), true)).toEqual({
      kind: "give-up",
      condition: "observed",
    });
  });

  it("a started pod is the only success edge, whatever this call did", () => {
    const pod = verified({ kind: "started" }, fp("a"));
    for (const created of [false, true])
      expect(loopStep(classify(pod, fp("a")), created)).toEqual({ kind: "succeed", agentId: pod.name });
  });

  it("observe, report and await-disappearance rows pass through unchanged by the attempt count", () => {
    for (const created of [false, true]) {
      expect(loopStep(classify(verified({ kind: "recoverable" }, fp("a")), fp("a")), created)).toEqual({
        kind: "wait",
      });
      expect(
        loopStep(classify(verified({ kind: "pull-failing", failure: "unauthorized" }, fp("a")), fp("a")), created),
      ).toEqual({
        kind: "report",
        failure: "unauthorized",
      });
      expect(loopStep(classify(verified({ kind: "started" }, fp("a"), { marked: true }), fp("a")), created)).toEqual({
        kind: "await-disappearance",
        uid: "uid-1",
      });
    }
  });

  it("a call that already created never reaches a second create or any delete (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALL_STARTUPS),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        (startup, marked, same, absent) => {
          const pod = absent ? null : verified(startup, fp("a"), { marked });
          const step = loopStep(classify(pod, same ? fp("a") : fp("b")), true);
          return step.kind !== "create" && step.kind !== "delete";
        },
      ),
    );
  });
});

describe("the race loser's table (spec/kubernetes.md §8.8)", () => {
  it("the deletion mark before started: a dying winner is not success in any startup state", () => {
    for (const startup of ALL_STARTUPS)
      expect(loserStep(verified(startup, fp("a"), { marked: true })), startup.kind).toEqual({ kind: "winner-dying" });
  });

  it("a started winner is success with the winner's pod name", () => {
    const pod = verified({ kind: "started" }, fp("a"));
    expect(loserStep(pod)).toEqual({ kind: "succeed", agentId: pod.name });
  });

  it("a terminated or provably broken winner did not start", () => {
    expect(loserStep(verified({ kind: "terminated" }, fp("a")))).toEqual({ kind: "winner-did-not-start" });
    expect(loserStep(verified({ kind: "provably-broken" }, fp("a")))).toEqual({ kind: "winner-did-not-start" });
  });

  it("a pull-failing winner is reported, never deleted", () => {
    expect(loserStep(verified({ kind: "pull-failing", failure: "manifest-unknown" }, fp("a")))).toEqual({
      kind: "report",
      failure: "manifest-unknown",
    });
  });

  it("a recoverable winner is observed even when its intent diverges from the loser's", () => {
    expect(loserStep(verified({ kind: "recoverable" }, fp("winner")))).toEqual({ kind: "wait" });
  });

  it("an absent winner is observed, never created again", () => {
    expect(loserStep(null)).toEqual({ kind: "wait" });
  });
});
