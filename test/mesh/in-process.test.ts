/**
 * A node service in the test process, reached through the MemoryConnector (spec/mesh.md §18.1): the same frames and the
 * same NodeClient as over TCP, which is how the controller's in-process seed scenarios reach their nodes.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { initNodeDataDir } from "../../src/mesh/node/init.js";
import { FaultyConnector } from "../../src/mesh/transport/faults.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { ALLOW_ALL, cleanup, makePackage, ok, processesWithEnv, tempDir } from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

const daemons: NodeDaemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.close();
  await cleanup();
});

describe("an in-process node service behind the memory connector", () => {
  it("describes, places, loses an answer through the fault wrapper, and unloads, with the same client as TCP", async () => {
    const controller = generateSigningKey();
    const signer = generateSigningKey();
    const dataDir = join(tempDir(), "node");
    initNodeDataDir(dataDir, {
      controllers: [controller.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      board: "pi5",
    });
    const daemon = await NodeDaemon.start({ dataDir, listen: null, version: "test", allowRootAgents: true });
    daemons.push(daemon);
    const memory = new MemoryConnector();
    const addr = memory.register("pi-a", (stream) => void daemon.service.serve(stream));
    const faults = new FaultyConnector(memory);
    const client = new NodeClient({
      key: controller,
      connector: faults,
      timeoutMs: 10_000,
      authority: () => ({ store_id: "5".repeat(32), epoch: 0 }),
    });

    const d = await client.describe(addr, null);
    if (d.kind !== "described") throw new Error(JSON.stringify(d));
    expect(d.facts.board).toBe("pi5");
    const target = { addr, nodeId: d.nodeId, key: d.key, bootId: d.bootId };

    const pkg = makePackage(signer);
    const source = new PackageDirSource(pkg.dir);
    const body = {
      package_id: source.packageId,
      name: "probe",
      variant: "any-linux",
      config: { mode: "service", args: [], env: {} },
    };
    const decisionId = "d".repeat(64);
    faults.dropNextAnswer(addr, "place");
    const lost = await client.call(target, "place", body, { decisionId, package: source });
    expect(lost).toMatchObject({ kind: "no_answer", sent: true });
    const rows = ok(await client.call(target, "status", {})).rows as Array<{
      instance_id: string;
      decision_id: string;
      state: string;
    }>;
    expect(rows).toEqual([expect.objectContaining({ decision_id: decisionId, state: "running" })]);
    expect(
      ok(await client.call(target, "unload", { instance_id: rows[0]?.instance_id as string }, { decisionId })).unloaded,
    ).toBe(true);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  });
});
