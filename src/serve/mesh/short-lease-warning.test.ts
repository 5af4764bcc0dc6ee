import { describe, expect, it } from "vitest";
import { leaderTiming } from "../../core/mesh/leader-lease.js";
import type { MeshController } from "../../mesh/controller/index.js";
import { shortLeaseWarner } from "./short-lease-warning.js";

/** A controller stand-in: the default leader TTL (failover bound 3 s, lease floor 4667 ms) and `peers` standbys. */
function controller(peers: () => number): Pick<MeshController, "leaderTiming" | "store"> {
  return {
    leaderTiming: () => leaderTiming(),
    store: { longLivedPeers: async () => peers() } as unknown as MeshController["store"],
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("berth serve's warning of a lease shorter than the failover bound (issue 37)", () => {
  it("warns once per node and lease when no standby runs, naming the node, its lease, the floor and the bound", async () => {
    const lines: string[] = [];
    const round = shortLeaseWarner(
      controller(() => 0),
      (m) => lines.push(m),
    );
    round([
      { node_id: "n1", lease_ms: 3_000 },
      { node_id: "n2", lease_ms: 15_000 },
    ]);
    await settle();
    round([{ node_id: "n1", lease_ms: 3_000 }]);
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^node n1 runs with lease_ms 3000, shorter than the 4667 ms .* failover bound is 3000 ms .* no standby berth serve runs on this store/,
    );
    round([{ node_id: "n1", lease_ms: 4_000 }]);
    await settle();
    expect(lines).toHaveLength(2);
  });

  it("says nothing while a standby runs, and nothing of a lease at or above the floor", async () => {
    const lines: string[] = [];
    let peers = 1;
    const round = shortLeaseWarner(
      controller(() => peers),
      (m) => lines.push(m),
    );
    round([{ node_id: "n1", lease_ms: 3_000 }]);
    await settle();
    expect(lines).toEqual([]);
    peers = 0;
    round([{ node_id: "n2", lease_ms: 4_667 }]);
    await settle();
    expect(lines).toEqual([]);
  });
});
