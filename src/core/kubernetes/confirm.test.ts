import { describe, expect, it } from "vitest";
import { rawPod } from "../../../test/support/kubernetes/pods.js";
import { confirmStart, runningInstance } from "./confirm.js";

describe("confirming a start before a deploy answers success (issue 34)", () => {
  it("a container first seen running is confirmed only a whole window later", () => {
    const first = confirmStart(null, "uid|c1|0|t", 1000, 3000);
    expect(first).toEqual({ kind: "confirming", seen: { instance: "uid|c1|0|t", since: 1000 }, until: 4000 });
    if (first.kind !== "confirming") throw new Error("unreachable");
    expect(confirmStart(first.seen, "uid|c1|0|t", 3999, 3000).kind).toBe("confirming");
    expect(confirmStart(first.seen, "uid|c1|0|t", 4000, 3000)).toEqual({ kind: "confirmed" });
  });

  it("another instance (restart, new container, new pod) starts the window again", () => {
    const seen = { instance: "uid|c1|0|t", since: 0 };
    for (const other of ["uid|c1|1|t", "uid|c2|0|t", "uid2|c1|0|t"]) {
      expect(confirmStart(seen, other, 10_000, 3000)).toEqual({
        kind: "confirming",
        seen: { instance: other, since: 10_000 },
        until: 13_000,
      });
    }
  });

  it("the instance is the pod uid, the agent container's id, its restart count and start time", () => {
    const pod = rawPod({ uid: "u1", agentState: { running: { startedAt: "2026-12-07T03:00:00Z" } } });
    const statuses = pod.status?.containerStatuses ?? [];
    const agent = statuses[0];
    if (!agent) throw new Error("fixture without status");
    const a = runningInstance(pod);
    agent.containerID = "containerd://abc";
    const b = runningInstance(pod);
    agent.restartCount = 1;
    const c = runningInstance(pod);
    expect(new Set([a, b, c]).size).toBe(3);
    expect(c).toBe("u1|containerd://abc|1|2026-12-07T03:00:00Z");
  });
});
