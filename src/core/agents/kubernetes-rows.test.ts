import { describe, expect, it } from "vitest";
import { verified } from "../../../test/support/kubernetes/pods.js";
import { classifyKubernetes, KUBERNETES_ROWS } from "./kubernetes-rows.js";
import { MESH_ROWS } from "./mesh-classify.js";

describe("the Kubernetes table in the agents' shared vocabulary", () => {
  it("names the absent row like the mesh one", () => {
    expect(classifyKubernetes(null, "f")).toEqual({ row: "no-instance", action: { kind: "create" } });
  });

  it("shares every row that exists on both targets by name", () => {
    const shared = KUBERNETES_ROWS.filter((r) => (MESH_ROWS as readonly string[]).includes(r));
    expect(shared).toEqual([
      "no-instance",
      "going-away",
      "started",
      "terminated",
      "never-started-same-intent",
      "never-started-diverged-intent",
    ]);
  });

  it.each([
    ["going-away", verified({ kind: "started" }, "f", { marked: true }), "await-disappearance"],
    ["started", verified({ kind: "started" }, "other"), "no-op"],
    ["terminated", verified({ kind: "terminated" }, "f"), "delete"],
    ["provably-broken", verified({ kind: "provably-broken" }, "f"), "delete"],
    ["pull-failing", verified({ kind: "pull-failing", failure: "unauthorized" }, "f"), "report"],
    ["never-started-same-intent", verified({ kind: "recoverable" }, "f"), "observe"],
    ["never-started-diverged-intent", verified({ kind: "recoverable" }, "g"), "delete"],
  ] as const)("names row %s and keeps the backend's own action", (row, pod, action) => {
    const c = classifyKubernetes(pod, "f");
    expect([c.row, c.action.kind]).toEqual([row, action]);
  });

  it("names a never-started pod recorded with an equivalent intent (Buzz's template v1 or v2) same-intent, as the loop keeps it", () => {
    const c = classifyKubernetes(verified({ kind: "recoverable" }, "buzz-v2"), "f", ["buzz-v1", "buzz-v2"]);
    expect([c.row, c.action.kind]).toEqual(["never-started-same-intent", "observe"]);
  });
});
