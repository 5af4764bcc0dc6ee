import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ORPHAN_AGE_MS, planGc } from "./gc.js";
import type { SecretMeta } from "./objects.js";
import { quorum, rawPod, WHO } from "../../../test/support/kubernetes/pods.js";

const NOW = Date.parse("2026-08-02T04:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();

function secret(name: string, ageMs: number | null, overrides: { foreign?: boolean } = {}): SecretMeta {
  const meta = rawPod({ pubkey: overrides.foreign ? "f".repeat(64) : undefined }).metadata;
  return {
    metadata: {
      ...meta,
      name,
      uid: `s-${name}`,
      resourceVersion: "5",
      ...(ageMs === null ? { creationTimestamp: undefined } : { creationTimestamp: iso(NOW - ageMs) }),
    },
  };
}
const pod = (uid: string, state: "terminated" | "pending" | "started", secretRef: string, foreign = false) =>
  quorum({
    ...rawPod({
      uid,
      secretRef,
      pubkey: foreign ? "f".repeat(64) : undefined,
      ...(state === "terminated"
        ? { agentState: { terminated: { exitCode: 0 } } }
        : state === "started"
          ? { agentState: { running: {} } }
          : {}),
    }),
  });

describe("the preflight GC plan (spec/kubernetes.md §11)", () => {
  it("collects terminated pods of ours with their Secrets", () => {
    const plan = planGc([pod("u1", "terminated", "s1")], [secret("s1", 5000)], WHO, NOW);
    expect(plan.doomedPods.map((p) => [p.name, p.fence.uid, p.secrets.map((s) => s.name)])).toEqual([
      [WHO.podName, "u1", ["s1"]],
    ]);
    expect(plan.orphanSecrets).toEqual([]);
  });

  it("never plans a live, pending or foreign pod", () => {
    const plan = planGc(
      [pod("u1", "started", "s1"), pod("u2", "pending", "s2"), pod("u3", "terminated", "s3", true)],
      [],
      WHO,
      NOW,
    );
    expect(plan.doomedPods).toEqual([]);
  });

  it("a pending pod protects its Secret however old", () => {
    const plan = planGc([pod("u2", "pending", "s2")], [secret("s2", 10 * ORPHAN_AGE_MS)], WHO, NOW);
    expect(plan.orphanSecrets).toEqual([]);
  });

  it("keeps a 5 s and a 1199 s orphan and collects one of exactly 1200 s", () => {
    const plan = planGc([], [secret("young", 5000), secret("edge", 1_199_999), secret("old", 1_200_000)], WHO, NOW);
    expect(plan.orphanSecrets.map((s) => s.name)).toEqual(["old"]);
    expect(plan.orphanSecrets[0]).toEqual({ name: "old", uid: "s-old", resourceVersion: "5" });
  });

  it("without a server clock sweeps no orphans but still collects terminated pods", () => {
    const plan = planGc(
      [pod("u1", "terminated", "s1")],
      [secret("s1", 5000), secret("old", 10 * ORPHAN_AGE_MS)],
      WHO,
      null,
    );
    expect(plan.doomedPods).toHaveLength(1);
    expect(plan.orphanSecrets).toEqual([]);
  });

  it("skips a Secret without a creation timestamp and never touches a foreign one", () => {
    const plan = planGc([], [secret("nots", null), secret("foreign", 10 * ORPHAN_AGE_MS, { foreign: true })], WHO, NOW);
    expect(plan.orphanSecrets).toEqual([]);
  });

  it("plans a Secret once even when two doomed pods reference it", () => {
    const plan = planGc(
      [pod("u1", "terminated", "s1"), pod("u2", "terminated", "s1")],
      [secret("s1", 10 * ORPHAN_AGE_MS)],
      WHO,
      NOW,
    );
    expect(plan.doomedPods.flatMap((p) => p.secrets).map((s) => s.name)).toEqual(["s1"]);
    expect(plan.orphanSecrets).toEqual([]);
  });

  it("never plans an unverified object, a protected Secret or a young orphan (property)", () => {
    const arb = fc.record({
      pods: fc.array(
        fc.record({
          state: fc.constantFrom("terminated", "pending", "started" as const),
          ref: fc.integer({ min: 0, max: 4 }),
          foreign: fc.boolean(),
        }),
        { maxLength: 5 },
      ),
      secrets: fc.array(
        fc.record({
          idx: fc.integer({ min: 0, max: 4 }),
          age: fc.integer({ min: 0, max: 3 * ORPHAN_AGE_MS }),
          foreign: fc.boolean(),
        }),
        { maxLength: 5 },
      ),
      clock: fc.boolean(),
    });
    fc.assert(
      fc.property(arb, ({ pods, secrets, clock }) => {
        const ps = pods.map((p, i) => pod(`u${i}`, p.state, `s${p.ref}`, p.foreign));
        const uniq = new Map(secrets.map((s) => [s.idx, s]));
        const ss = [...uniq.values()].map((s) => secret(`s${s.idx}`, s.age, { foreign: s.foreign }));
        const plan = planGc(ps, ss, WHO, clock ? NOW : null);
        const protectedRefs = new Set(
          pods.filter((p) => !p.foreign && p.state !== "terminated").map((p) => `s${p.ref}`),
        );
        const all = [...plan.doomedPods.flatMap((p) => p.secrets), ...plan.orphanSecrets];
        for (const s of all) {
          const src = uniq.get(Number(s.name.slice(1)));
          expect(src?.foreign).toBe(false);
          expect(protectedRefs.has(s.name)).toBe(false);
        }
        for (const o of plan.orphanSecrets)
          expect(uniq.get(Number(o.name.slice(1)))?.age ?? 0).toBeGreaterThanOrEqual(ORPHAN_AGE_MS);
        for (const d of plan.doomedPods) expect(pods[Number(d.fence.uid.slice(1))]?.foreign).toBe(false);
        expect(new Set(all.map((s) => s.name)).size).toBe(all.length);
      }),
    );
  });
});
