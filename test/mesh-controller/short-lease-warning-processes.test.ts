/**
 * Issue 37: a lone `berth serve` whose node runs with a lease shorter than the failover bound's floor (3 s against
 * 4667 ms at the default leader TTL) says so in its log, naming the node, its lease and the bound: with no standby
 * server, a controller outage longer than about three quarters of that lease stops the node's agents.
 *
 * Judged from outside: the server's log (stderr).
 */
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, waitFor } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { HaWorld } from "./support/ha-world.js";

let world: HaWorld | null = null;

afterEach(async () => {
  await world?.close();
  world = null;
  killAll();
  await cleanup();
});

describe("a node lease shorter than the failover bound with no standby (issue 37)", { timeout: 120_000 }, () => {
  it("berth serve warns once, naming the node, its lease and the bound", async () => {
    const w = await HaWorld.create("sqlite", { ttlMs: null, nodeConfig: { lease_ms: 3_000 } });
    world = w;
    const server = await w.serve();
    const added = await w.api(server, "POST", "/nodes", { addr: w.nodeProxy.address, tier: "paired" });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const line = await waitFor(
      () =>
        server.proc
          .errors()
          .split("\n")
          .find((l) => l.includes("lease_ms 3000, shorter than the")),
      "the warning",
      30_000,
    );
    expect(line).toContain(w.node.nodeId);
    expect(line).toContain("failover bound is 3000 ms");
    expect(line).toContain("no standby berth serve runs on this store");
    expect(JSON.parse(line)).toMatchObject({
      level: 40,
      node: w.node.nodeId,
      lease_ms: 3_000,
      failover_bound_ms: 3_000,
    });
  });
});
