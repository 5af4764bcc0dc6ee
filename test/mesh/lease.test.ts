/**
 * The node lease with a real daemon (issue 16, spec/mesh.md §15, docs/concepts.md "The node lease"): a node with
 * `lease_ms` that hears nothing from the controller that placed an instance stops it (judged from /proc), marks it
 * `lease_stopped` and chains it; a request held past the lease is refused and revives nothing; a daemon restarted
 * after its lease ran out enforces it before anything else; the lease is advertised in the signed facts.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NodeProcess,
  ok,
  processesWithEnv,
  requireBuild,
  TestController,
  waitFor,
} from "./harness.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(requireBuild);
afterEach(cleanup);

const LEASE_MS = 3_000;

async function leasedNode(ctl: TestController) {
  const signer = generateSigningKey();
  const node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
    config: { lease_ms: LEASE_MS },
  });
  const decisionId = ctl.decisionId();
  const pkg = makePackage(signer).dir;
  // Before the place's requests are stamped: the lease they renew cannot end before this + lease_ms.
  const placeFrom = Date.now();
  const placed = ok(await ctl.place(node, pkg, { decisionId }));
  return { node, decisionId, instanceId: placed.instance_id as string, placeFrom };
}

describe("the node lease (a real daemon)", () => {
  it("advertises lease_ms in its signed facts", async () => {
    const ctl = new TestController();
    const { node } = await leasedNode(ctl);
    const d = ok(await ctl.client.call(node.target(null), "describe", {}));
    const facts = JSON.parse((d.facts as { payload: string }).payload) as { lease_ms: unknown };
    expect(facts.lease_ms).toBe(LEASE_MS);
  });

  it("stops an instance whose controller went silent for lease_ms, marks it lease_stopped, chains it, and starts it again on request", async () => {
    const ctl = new TestController();
    const { node, decisionId, instanceId, placeFrom } = await leasedNode(ctl);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length === 0,
      "the instance's processes gone",
      30_000,
    );
    // Not before the lease ran out: counted from the last request, stamped after placeFrom. (A start taken after the
    // place returned could be seconds late on a loaded machine and make a correct stop look early.)
    expect(Date.now() - placeFrom).toBeGreaterThanOrEqual(LEASE_MS);
    const events = await waitFor(() => {
      const e = node.events({ source: "node", kind: "workload.lifecycle", phase: "lease" });
      return e.length > 0 ? e : undefined;
    }, "the lease stop chained");
    expect(events[0]?.payload).toMatchObject({
      instance_id: instanceId,
      to: "lease_stopped",
      controller: ctl.client.controllerId,
    });
    expect((ok(await ctl.status(node, instanceId)).row as { state: string }).state).toBe("lease_stopped");
    expect(ok(await ctl.verb(node, "start", { instance_id: instanceId })).started).toBe(true);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    expect(node.verifyChain().ok).toBe(true);
  });

  it("refuses a request issued longer ago than lease_ms (held in the network) as expired, and it renews nothing", async () => {
    const ctl = new TestController();
    const { node, decisionId, instanceId } = await leasedNode(ctl);
    // The same controller key, its clock read 4 s earlier: what a request held 4 s in the network carries.
    const held = new NodeClient({
      key: ctl.key,
      connector: new TlsConnector({ identity: ctl.key, connectTimeoutMs: 10_000 }),
      clock: () => Date.now() - 4_000,
      timeoutMs: 15_000,
    });
    const refused = await held.call(node.target(), "status", { instance_id: instanceId, include_departed: false });
    expect(refused).toMatchObject({ kind: "refused", code: "expired" });
    // Keep sending only late requests: the lease still runs out and the instance stops.
    const stopAt = Date.now() + 30_000;
    while (processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length > 0 && Date.now() < stopAt) {
      await held.call(node.target(), "status", { instance_id: instanceId, include_departed: false });
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  });

  it("keeps an instance running while its controller keeps talking, past many leases", async () => {
    const ctl = new TestController();
    const { node, decisionId, instanceId } = await leasedNode(ctl);
    const until = Date.now() + 3 * LEASE_MS;
    while (Date.now() < until) {
      ok(await ctl.status(node, instanceId));
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    expect(node.events({ source: "node", kind: "workload.lifecycle", phase: "lease" })).toEqual([]);
  });

  it("a daemon killed for good does not leave its instances running past the lease: the instance's own watchdog stops them", async () => {
    const ctl = new TestController();
    const { node, decisionId, instanceId } = await leasedNode(ctl);
    const killedAt = Date.now();
    await node.kill9();
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    // The deadline the watchdog enforces, as the daemon left it (in seconds): within the controller's bound, lease_ms
    // + 11 s from the last request (which was before the kill), less the watchdog's own 3 s (a 1 s poll, then 2 s
    // from TERM to KILL). Judged on the file, not on how soon this process sees /proc change on a loaded machine.
    const deadlineS = Number(
      readFileSync(join(node.dataDir, "instances", instanceId, "lease_deadline"), "utf8").trim(),
    );
    expect(deadlineS * 1000 + 3_000).toBeLessThanOrEqual(killedAt + LEASE_MS + 11_000);
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length === 0,
      "the instance gone without its daemon",
      30_000,
    );
  });

  it("a daemon restarted after its lease ran out stops the instances it re-adopted at once, even one whose watchdog is gone", async () => {
    const ctl = new TestController();
    const { node, decisionId, instanceId } = await leasedNode(ctl);
    await node.kill9();
    // Without its watchdog's deadline file the instance would run until a daemon enforces the lease: the boot check.
    rmSync(join(node.dataDir, "instances", instanceId, "lease_deadline"));
    // The instance outlives its daemon (its own process group) …
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, LEASE_MS + 500));
    await node.start();
    // … and the restarted daemon enforces the persisted lease at once.
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length === 0,
      "the re-adopted instance stopped",
      30_000,
    );
    // The group exits on SIGTERM before the daemon commits the stop: wait for the chained record too.
    const chained = await waitFor(
      () => node.events({ source: "node", kind: "workload.lifecycle", phase: "lease" }).length || undefined,
      "the lease stop chained",
      30_000,
    );
    expect(chained).toBe(1);
  });
});
