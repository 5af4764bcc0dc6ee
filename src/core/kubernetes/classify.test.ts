import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { type Action, classify, type ReportAction, reportFor } from "./classify.js";
import type { Startup } from "./decode.js";
import { PULL_FAILURES } from "./pull-failure.js";
import { ALL_STARTUPS, verified } from "../../../test/support/kubernetes/pods.js";

const fp = (seed: string) => seed.padEnd(64, "0").slice(0, 64);

describe("classification ported from the seed (spec/kubernetes.md §19.1)", () => {
  it("with no verified pod, deploy creates", () => {
    expect(classify(null, fp("a"))).toEqual({ kind: "create" });
  });

  it("a started pod is a strict no-op", () => {
    const pod = verified({ kind: "started" }, fp("a"));
    expect(classify(pod, fp("a"))).toEqual({ kind: "no-op", agentId: pod.name });
  });

  it("a started pod is a no-op even when the intent diverges", () => {
    const pod = verified({ kind: "started" }, fp("old"));
    expect(classify(pod, fp("new"))).toEqual({ kind: "no-op", agentId: pod.name });
  });

  it("the deletion mark beats every startup state", () => {
    for (const startup of ALL_STARTUPS) {
      const pod = verified(startup, fp("a"), { marked: true });
      expect(classify(pod, fp("a")), startup.kind).toEqual({
        kind: "await-disappearance",
        name: pod.name,
        uid: "uid-1",
      });
    }
  });

  it("a terminated pod is replaced with the pod's fence", () => {
    const pod = verified({ kind: "terminated" }, fp("a"));
    expect(classify(pod, fp("a"))).toMatchObject({
      kind: "delete",
      name: pod.name,
      fence: pod.fence,
      cause: "terminated",
    });
  });

  it("a provably broken never-started pod is replaced with the pod's fence", () => {
    const pod = verified({ kind: "provably-broken" }, fp("a"));
    expect(classify(pod, fp("a"))).toMatchObject({ kind: "delete", fence: pod.fence, cause: "provably-broken" });
  });

  it("a recoverable pod with matching intent is only observed", () => {
    const pod = verified({ kind: "recoverable" }, fp("same"));
    expect(classify(pod, fp("same"))).toEqual({ kind: "observe", name: pod.name });
  });

  it("repeated identical deploys never delete", () => {
    const pod = verified({ kind: "recoverable" }, fp("same"));
    for (let i = 0; i < 100; i++) expect(classify(pod, fp("same")).kind).not.toBe("delete");
  });

  it("a recoverable pod with divergent intent is replaced", () => {
    const pod = verified({ kind: "recoverable" }, fp("old"));
    expect(classify(pod, fp("new"))).toMatchObject({ kind: "delete", fence: pod.fence, cause: "intent-diverged" });
  });

  it("a missing recorded intent counts as divergence", () => {
    const pod = verified({ kind: "recoverable" }, null);
    expect(classify(pod, fp("any"))).toMatchObject({ kind: "delete", fence: pod.fence, cause: "intent-diverged" });
  });

  it("pull failures report and never delete, whether or not the intent diverges", () => {
    for (const failure of PULL_FAILURES) {
      const pod = verified({ kind: "pull-failing", failure }, fp("a"));
      for (const desired of [fp("a"), fp("different")]) {
        expect(classify(pod, desired)).toEqual({ kind: "report", name: pod.name, failure });
      }
    }
  });

  it("every delete carries the authorising fence", () => {
    const cases: Array<[Startup, string]> = [
      [{ kind: "terminated" }, fp("a")],
      [{ kind: "provably-broken" }, fp("a")],
      [{ kind: "recoverable" }, fp("divergent")],
    ];
    for (const [startup, desired] of cases) {
      const pod = verified(startup, fp("a"), { uid: "uid-x", rv: "42" });
      const action = classify(pod, desired);
      if (action.kind !== "delete") throw new Error(`expected a delete for ${startup.kind}, got ${action.kind}`);
      expect(action.fence).toBe(pod.fence);
      expect(action.fence).toEqual({ uid: "uid-x", resourceVersion: "42" });
    }
  });
});

describe("the classification table (spec/kubernetes.md §7.1)", () => {
  const rows: Array<[string, Startup | null, boolean, string | null, string, Action["kind"]]> = [
    ["1 absent or foreign", null, false, null, "d", "create"],
    ["2 marked while started", { kind: "started" }, true, "d", "d", "await-disappearance"],
    ["2 marked while pending", { kind: "recoverable" }, true, "d", "d", "await-disappearance"],
    ["3 started, same intent", { kind: "started" }, false, "d", "d", "no-op"],
    ["3 started, diverged intent", { kind: "started" }, false, "x", "d", "no-op"],
    ["4 terminated", { kind: "terminated" }, false, "d", "d", "delete"],
    ["5 provably broken", { kind: "provably-broken" }, false, "d", "d", "delete"],
    ["6 pull failing, diverged", { kind: "pull-failing", failure: "arch-mismatch" }, false, "x", "d", "report"],
    ["7 recoverable, same intent", { kind: "recoverable" }, false, "d", "d", "observe"],
    ["8 recoverable, diverged", { kind: "recoverable" }, false, "x", "d", "delete"],
    ["8 recoverable, malformed annotation", { kind: "recoverable" }, false, "not-a-fingerprint", "d", "delete"],
  ];
  it.each(rows)("row %s", (_name, startup, marked, recorded, desired, expected) => {
    const recordedIntent = recorded === null ? null : recorded === "not-a-fingerprint" ? recorded : fp(recorded);
    const pod = startup ? verified(startup, recordedIntent, { marked }) : null;
    expect(classify(pod, fp(desired)).kind).toBe(expected);
  });
});

describe("classification invariants (spec/kubernetes.md §7.2, §19.3)", () => {
  const startupArb: fc.Arbitrary<Startup> = fc.oneof(
    fc.constant<Startup>({ kind: "started" }),
    fc.constant<Startup>({ kind: "terminated" }),
    fc.constant<Startup>({ kind: "recoverable" }),
    fc.constant<Startup>({ kind: "provably-broken" }),
    fc.constantFrom(...PULL_FAILURES).map((failure): Startup => ({ kind: "pull-failing", failure })),
  );
  const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
  const podArb = fc.record({
    startup: startupArb,
    marked: fc.boolean(),
    intent: fc.option(hex, { nil: null }),
    uid: fc.uuid(),
    rv: fc.nat().map(String),
  });

  it("holds every ordered rule for any verified pod and fingerprint", () => {
    fc.assert(
      fc.property(podArb, hex, (p, desired) => {
        const pod = verified(p.startup, p.intent, { marked: p.marked, uid: p.uid, rv: p.rv });
        const action = classify(pod, desired);
        // The result depends only on the inputs.
        expect(classify(pod, desired)).toEqual(action);
        if (p.marked) {
          expect(action.kind).toBe("await-disappearance");
          return;
        }
        if (p.startup.kind === "started") expect(action).toEqual({ kind: "no-op", agentId: pod.name });
        if (p.startup.kind === "pull-failing") expect(action.kind).toBe("report");
        if (action.kind === "delete") expect(action.fence).toEqual({ uid: p.uid, resourceVersion: p.rv });
      }),
    );
  });

  it("never turns a pull failure into a delete, whatever the intent", () => {
    fc.assert(
      fc.property(fc.constantFrom(...PULL_FAILURES), fc.option(hex, { nil: null }), hex, (failure, intent, desired) => {
        expect(classify(verified({ kind: "pull-failing", failure }, intent), desired).kind).toBe("report");
      }),
    );
  });

  it("the pull-failure branch is typed so that it can only report", () => {
    expectTypeOf(reportFor).returns.toEqualTypeOf<ReportAction>();
    expectTypeOf<ReportAction>().not.toHaveProperty("fence");
  });
});
