/**
 * The node never forgets an instance (§14.3): `kill -9` of the daemon while instances run, then a restart: every
 * instance whose process is still the same one is re-adopted (same pid, never restarted), one that died meanwhile is
 * reported with its exit, none is lost or duplicated; a request captured before the restart cannot be replayed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { signRequest } from "../../src/core/protocol/sign.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { openDatabase } from "../../src/store/sqlite.js";
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
  waitFor,
} from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

beforeAll(requireBuild);
afterEach(cleanup);

function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] as string;
}

describe("a node daemon restarted with instances running", () => {
  it("re-adopts every live instance with the same pid after kill -9 and reports the one that died meanwhile", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const placed: JsonObject[] = [];
    for (const name of ["alpha", "beta", "gamma"]) placed.push(ok(await ctl.place(node, pkg.dir, { name })));
    const before = new Map(
      placed.map((p) => [p.instance_id as string, { pid: p.pid as number, start: startTime(p.pid as number) }]),
    );

    // a status request captured before the restart
    const captured = signRequest(ctl.key, {
      method: "status",
      target: node.nodeId,
      targetBoot: node.bootId,
      nonce: "00112233445566778899aabbccddeeff",
      issuedAtMs: Date.now(),
      validityMs: 60_000,
      decisionId: null,
      body: {},
    });
    expect((await ctl.client.exchange(node.target(), captured.signed, captured.request)).kind).toBe("ok");

    await node.kill9();
    // While the daemon is down, gamma's process group ends with SIGTERM (its wrapper records the status).
    const gamma = placed[2] as JsonObject;
    process.kill(-(gamma.pid as number), "SIGTERM");
    await waitFor(
      () => processesWithEnv(`BERTH_INSTANCE_ID=${gamma.instance_id as string}`).length === 0,
      "gamma's group to end",
    );
    // the other two are untouched by the daemon's death
    for (const p of placed.slice(0, 2))
      expect(processesWithEnv(`BERTH_INSTANCE_ID=${p.instance_id as string}`).length).toBeGreaterThan(0);

    const oldBoot = node.bootId;
    await node.start();
    expect(node.bootId).not.toBe(oldBoot);
    expect(node.recovery).toMatchObject({
      readopted: [placed[0]?.instance_id, placed[1]?.instance_id],
      exited: [gamma.instance_id],
      lost: [],
    });

    const rows = rowsOf(await ctl.status(node)) as Array<{
      instance_id: string;
      state: string;
      pid: number;
      signal: string | null;
      detail: string;
    }>;
    expect(rows.map((r) => r.instance_id).sort()).toEqual([...before.keys()].sort());
    for (const r of rows.filter((x) => x.instance_id !== gamma.instance_id)) {
      expect(r.state).toBe("running");
      expect(r.pid).toBe(before.get(r.instance_id)?.pid);
      expect(startTime(r.pid)).toBe(before.get(r.instance_id)?.start); // the same process, never restarted
      expect(processesWithEnv(`BERTH_INSTANCE_ID=${r.instance_id}`).length).toBe(2); // wrapper + entry, no duplicate
    }
    const g = rows.find((r) => r.instance_id === gamma.instance_id);
    expect(g).toMatchObject({ state: "exited", signal: "SIGTERM" });
    expect(g?.detail).toContain("while the node daemon was down");
    expect(
      node
        .events({ source: "node", kind: "workload.lifecycle", phase: "node_restart" })
        .map((e) => e.payload.instance_id),
    ).toEqual([gamma.instance_id]);
    expect(node.events({ source: "node", kind: "node.boot" }).at(-1)?.payload).toMatchObject({
      readopted: 2,
      exited: 1,
    });

    // replaying the captured request after the restart is refused: it names the previous boot
    const replay = await ctl.client.exchange(node.target(oldBoot), captured.signed, captured.request);
    expect(replay).toMatchObject({ kind: "refused", code: "stale_boot" });

    // a re-adopted instance is still managed: its exit is noticed and it can be stopped and unloaded
    const alpha = placed[0] as JsonObject;
    expect(ok(await ctl.verb(node, "stop", { instance_id: alpha.instance_id as string, grace_ms: 2000 })).stopped).toBe(
      true,
    );
    expect(processesWithEnv(`BERTH_INSTANCE_ID=${alpha.instance_id as string}`)).toEqual([]);
    const beta = placed[1] as JsonObject;
    process.kill(-(beta.pid as number), "SIGKILL");
    await expect
      .poll(async () => (ok(await ctl.status(node, beta.instance_id as string)).row as { state: string }).state, {
        timeout: 10_000,
      })
      .toBe("exited");
    for (const p of placed)
      expect(ok(await ctl.verb(node, "unload", { instance_id: p.instance_id as string })).unloaded).toBe(true);
    expect(rowsOf(await ctl.status(node))).toEqual([]);
  });

  it("reports an instance recorded under another host boot as lost, and re-adopts a 'starting' row by its instance id", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const a = ok(await ctl.place(node, pkg.dir, { name: "alpha" }));
    const b = ok(await ctl.place(node, pkg.dir, { name: "beta" }));
    await node.kill9();
    // Simulate what the daemon cannot observe directly: a host reboot for alpha's record, and a crash between
    // spawning beta and recording its identity.
    const db = openDatabase(join(node.dataDir, "node.db"));
    db.prepare("UPDATE node_instance SET host_boot_id = 'another-host-boot' WHERE instance_id = ?").run(
      a.instance_id as string,
    );
    db.prepare(
      "UPDATE node_instance SET state = 'starting', pid = NULL, start_marker = NULL WHERE instance_id = ?",
    ).run(b.instance_id as string);
    db.close();
    await node.start();
    expect(node.recovery).toMatchObject({ lost: [a.instance_id], readopted: [b.instance_id] });
    const alpha = ok(await ctl.status(node, a.instance_id as string)).row as { state: string; detail: string };
    expect(alpha.state).toBe("lost");
    expect(alpha.detail).toContain("host restarted");
    const beta = ok(await ctl.status(node, b.instance_id as string)).row as { state: string; pid: number };
    expect(beta).toMatchObject({ state: "running", pid: b.pid });
    // clean up alpha's process ourselves: the node no longer claims it
    process.kill(-(a.pid as number), "SIGKILL");
  });

  it("treats an in-flight decision interrupted by a crash as interrupted and never as an instance", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    // A raw client sends place and never answers the manifest fetch: the decision stays in flight.
    const { TlsConnector } = await import("../../src/mesh/transport/tls.js");
    const { encodeMessageFrame } = await import("../../src/core/protocol/messages.js");
    const s = await new TlsConnector({ identity: ctl.key }).connect(node.address);
    const decisionId = ctl.decisionId();
    const req = signRequest(ctl.key, {
      method: "place",
      target: node.nodeId,
      targetBoot: node.bootId,
      nonce: "ffeeddccbbaa99887766554433221100",
      issuedAtMs: Date.now(),
      validityMs: 60_000,
      decisionId,
      authority: { store_id: ctl.storeId, epoch: 0 },
      body: {
        package_id: pkg.packageId,
        name: "probe",
        variant: "any-linux",
        config: { mode: "service", args: [], env: {} },
      },
    });
    await s.send(encodeMessageFrame({ type: "request", signed: req.signed }));
    await s.recv(AbortSignal.timeout(30_000)); // the fetch: the node marked the decision in flight first
    const rows = rowsOf(await ctl.status(node)) as Array<{ decision_id: string; in_flight?: boolean }>;
    expect(rows).toEqual([expect.objectContaining({ decision_id: decisionId, in_flight: true })]);
    // a second place for the decision being handled is refused and leaves the first one in flight
    const second = await ctl.place(node, pkg.dir, { decisionId });
    expect(second).toMatchObject({ kind: "refused", code: "invalid_request" });
    expect((second as { reason: string }).reason).toContain(`decision ${decisionId} is already being handled`);
    expect(rowsOf(await ctl.status(node))).toEqual([
      expect.objectContaining({ decision_id: decisionId, in_flight: true }),
    ]);
    await node.kill9();
    s.close();
    await node.start();
    expect(node.recovery).toMatchObject({ interrupted: [decisionId] });
    expect(rowsOf(await ctl.status(node))).toEqual([]);
    expect(
      node.events({ source: "node", kind: "workload.refuse", phase: "interrupted" }).map((e) => e.payload.decision_id),
    ).toEqual([decisionId]);
  });
});
