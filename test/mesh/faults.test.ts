/**
 * The connector seam the controller's lost-answer handling is tested through (seed scenarios B and C): a dropped
 * `place` answer leaves the node holding the instance (the call is indeterminate, never resent), the node lists it
 * for reconciliation, and a cut address is unreachable until healed.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, outcomeOf } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { FaultyConnector } from "../../src/mesh/transport/faults.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NodeProcess,
  ok,
  processesWithEnv,
  requireBuild,
  rowsOf,
  TestController,
} from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

beforeAll(requireBuild);
afterEach(cleanup);

describe("fault injection through the connector seam", () => {
  it("drops a place answer after the node carried it out: indeterminate, and status shows the instance to reconcile", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const faults = new FaultyConnector(new TlsConnector({ identity: ctl.key }));
    const client = new NodeClient({
      key: ctl.key,
      connector: faults,
      timeoutMs: 15_000,
      authority: () => ({ store_id: ctl.storeId, epoch: 0 }),
    });
    const source = new PackageDirSource(pkg.dir);
    const decisionId = ctl.decisionId();
    faults.dropNextAnswer(node.address, "place");
    const r = await client.call(
      node.target(),
      "place",
      {
        package_id: source.packageId,
        name: "probe",
        variant: "any-linux",
        config: { mode: "service", args: [], env: {} },
      },
      { decisionId, package: source },
    );
    expect(outcomeOf("place", r)).toBe("indeterminate");
    expect(faults.dropped).toEqual([{ addr: node.address, method: "place" }]);
    // the node carried it out: one row for this decision, a live process group
    const rows = rowsOf(await client.call(node.target(), "status", {})) as Array<{
      decision_id: string;
      instance_id: string;
      state: string;
    }>;
    expect(rows).toEqual([expect.objectContaining({ decision_id: decisionId, state: "running" })]);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    // reconcile: unload with the same decision id
    const instanceId = rows[0]?.instance_id as string;
    expect(ok(await client.call(node.target(), "unload", { instance_id: instanceId }, { decisionId })).unloaded).toBe(
      true,
    );
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  });

  it("makes a cut address unreachable until it is healed", async () => {
    const ctl = new TestController();
    const node = await NodeProcess.create({ controllers: [ctl.key.publicKey], signers: [], permits: ALLOW_ALL });
    const faults = new FaultyConnector(new TlsConnector({ identity: ctl.key }));
    const client = new NodeClient({ key: ctl.key, connector: faults, timeoutMs: 5000 });
    faults.cut(node.address);
    const r = await client.call(node.target(), "status", {});
    expect(r.kind).toBe("unreachable");
    expect(outcomeOf("unload", r)).toBe("unreachable");
    faults.heal(node.address);
    expect((await client.call(node.target(), "status", {})).kind).toBe("ok");
  });
});
