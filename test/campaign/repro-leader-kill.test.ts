/**
 * A campaign finding made deterministic (seeds 10 and 14 of `bash scripts/campaign`): kill -9 of an instance's group
 * leader while its worker child lives on. The node records the instance `exited` when the leader's exit event comes
 * (src/mesh/node/service.ts onProcessExit), so `berth agent stop` answers "already stopped" and leaves the group's
 * live worker running (src/mesh/node/processes.ts stopInstance: `row.state` is no longer running), unrecorded; a
 * later deploy then starts a second live copy. Failed on main at 9c0fcea; passes since the node's process-group
 * liveness (ba6938a: an instance is alive while any process of its group is), which it now pins.
 */
import { describe, expect, it } from "vitest";
import { waitFor } from "../mesh/harness.js";
import { liveAgentProcesses } from "./observe.js";
import { makeWorld } from "./world.js";

describe("an instance whose group leader was killed (campaign seeds 10, 14)", () => {
  it("is stopped whole by berth agent stop, and a deploy after it leaves exactly one live copy", async () => {
    const w = await makeWorld(1, { leaseNode: null });
    w.writeAgents(0, 1);
    try {
      const deployed = await w.berth("deploy", w.specFile(0, 0), "--json");
      expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
      const procs = await waitFor(
        () => {
          const live = liveAgentProcesses(w.prefix);
          return live.some((p) => p.pid === p.pgid) && live.some((p) => p.pid !== p.pgid) ? live : undefined;
        },
        "the agent's leader and worker",
        30_000,
      );
      const leader = procs.find((p) => p.pid === p.pgid);
      process.kill(leader?.pid ?? 0, "SIGKILL");
      await waitFor(
        () => !liveAgentProcesses(w.prefix).some((p) => p.pid === leader?.pid) || undefined,
        "the leader gone",
        30_000,
      );
      const stopped = await w.berth("agent", "stop", w.agentName(0, 0), "--json");
      expect(stopped.code, stopped.stdout + stopped.stderr).toBe(0);
      expect(liveAgentProcesses(w.prefix), `after ${stopped.stdout}`).toEqual([]);
      const again = await w.berth("deploy", w.specFile(0, 0), "--json");
      expect(again.code, again.stdout + again.stderr).toBe(0);
      const ids = await waitFor(
        () => {
          const s = new Set(liveAgentProcesses(w.prefix).map((p) => p.instance));
          return s.size > 0 ? s : undefined;
        },
        "the redeployed agent",
        30_000,
      );
      expect(ids.size, "one live copy").toBe(1);
    } finally {
      await w.close();
    }
  }, 180_000);
});
