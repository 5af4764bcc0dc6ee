/**
 * A real node daemon runs a signed package as a real process group: place → running → logs → stop → unload, and
 * the seed's scenario A: a start that governance denies after load is rolled back, refused, leaves no process,
 * and the next candidate places (I1, I3, I6, I7).
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { savePermits } from "../../src/mesh/policy/files.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NO_START,
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

describe("a node daemon running signed packages", () => {
  it("places a package as a running process group, shows its output, stops and unloads it leaving no process", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const decisionId = ctl.decisionId();
    const placed = ok(await ctl.place(node, pkg.dir, { decisionId }));
    expect(placed.state).toBe("running");
    const instanceId = placed.instance_id as string;
    expect(instanceId).toMatch(/^probe-[0-9a-f]{12}$/);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);

    const logs = await waitFor(async () => {
      const r = ok(await ctl.verb(node, "logs", { instance_id: instanceId, tail_bytes: 1024 }));
      return (r.stdout as string).includes("placed-ok") ? r : undefined;
    }, "placed-ok in the instance's stdout");
    expect(logs.state).toBe("running");

    const row = ok(await ctl.status(node, instanceId)).row as { state: string; pid: number; generation: number };
    expect(row.state).toBe("running");
    expect(row.generation).toBe(1);

    const stopped = ok(await ctl.verb(node, "stop", { instance_id: instanceId, grace_ms: 2000 }));
    expect(stopped.stopped).toBe(true);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);

    // start again: a new generation of the same instance
    const restarted = ok(await ctl.verb(node, "start", { instance_id: instanceId }));
    expect(restarted.started).toBe(true);
    const again = ok(await ctl.status(node, instanceId)).row as { generation: number; state: string };
    expect(again).toMatchObject({ state: "running", generation: 2 });

    expect(ok(await ctl.verb(node, "unload", { instance_id: instanceId })).unloaded).toBe(true);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
    const rows = rowsOf(await ctl.status(node, null, true));
    expect(rows).toEqual([expect.objectContaining({ instance_id: instanceId, departed: "unloaded" })]);
    expect(node.events({ source: "runtime", kind: "workload.unload" }).length).toBe(1);
    expect(node.events({ source: "node", kind: "workload.place", phase: "placed" }).length).toBe(1);
  });

  it("runs the entry in its own directory with only its own environment, keeps the exit code and the last 64 KiB of output", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    // The daemon inherits this variable; the instance must not.
    process.env.HOSTNAME_LEAK = "daemon-env";
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    delete process.env.HOSTNAME_LEAK;
    const script = [
      "#!/bin/sh",
      'echo "cwd=$(pwd)"',
      'echo "id=$BERTH_INSTANCE_ID greeting=$GREETING args=$*"',
      'echo "leak=[$HOSTNAME_LEAK]"',
      "head -c 2000000 /dev/zero | tr '\\0' 'x'",
      "echo",
      "echo done-writing >&2",
      "exit 7",
    ].join("\n");
    const pkg = makePackage(signer, {
      script,
      config: {
        env: { GREETING: { type: "string" } },
        args: { "--mode": { type: "string" }, "--verbose": { type: "boolean" } },
      },
    });
    const source = new PackageDirSource(pkg.dir);
    const placed = ok(
      await ctl.client.call(
        node.target(),
        "place",
        {
          package_id: source.packageId,
          name: "probe",
          variant: "any-linux",
          config: { mode: "once", args: ["--mode", "fast", "--verbose"], env: { GREETING: "hello" } },
        },
        { decisionId: ctl.decisionId(), package: source },
      ),
    );
    const id = placed.instance_id as string;
    const row = await waitFor(async () => {
      const r = ok(await ctl.status(node, id)).row as { state: string; exit_code: number | null };
      return r.state === "exited" ? r : undefined;
    }, "the instance to exit");
    expect(row.exit_code).toBe(7);
    const head = readFileSync(join(node.dataDir, "instances", id, "stdout.log"), "utf8").slice(0, 300);
    expect(head).toContain(`cwd=${join(node.dataDir, "instances", id, "work")}`);
    expect(head).toContain(`id=${id} greeting=hello args=--mode fast --verbose`);
    expect(head).toContain("leak=[]");
    const logs = ok(await ctl.verb(node, "logs", { instance_id: id, tail_bytes: 65_536 }));
    expect((logs.stdout as string).length).toBe(65_536);
    expect(logs.truncated_stdout).toBe(true);
    expect(logs.stderr).toBe("done-writing\n");
    expect(logs).toMatchObject({ state: "exited", exit_code: 7 });
    // the file itself was trimmed to its last 64 KiB
    expect(statSync(join(node.dataDir, "instances", id, "stdout.log")).size).toBeLessThanOrEqual(65_536);
    expect(node.events({ source: "runtime", kind: "workload.exit" }).map((e) => e.payload.exit_code)).toEqual([7]);
  });

  it("refuses new placements when the node's permits file is broken, while stop and unload still work", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const placed = ok(await ctl.place(node, pkg.dir, { name: "first" }));
    node.writePolicy("permits.json", "[{ broken");
    const refused = await ctl.place(node, pkg.dir, { name: "second" });
    expect(refused).toMatchObject({ kind: "refused", code: "governance" });
    expect((refused as { reason: string }).reason).toContain("BERTH-DEFAULT-DENY");
    expect(
      ok(await ctl.verb(node, "stop", { instance_id: placed.instance_id as string, grace_ms: 1000 })).stopped,
    ).toBe(true);
    expect(ok(await ctl.verb(node, "unload", { instance_id: placed.instance_id as string })).unloaded).toBe(true);
    expect(
      node
        .events({ source: "trust", kind: "policy.load" })
        .some((e) => e.payload.file === "permits.json" && e.payload.ok === false),
    ).toBe(true);
    // the permits API refuses an invalid rule set and restores a valid one; placement works again
    expect(() => savePermits(node.dataDir, [{ id: "bad id!", actions: ["workload.*"], kinds: ["probe"] }])).toThrow(
      /permits\.0\.id/,
    );
    savePermits(node.dataDir, ALLOW_ALL);
    expect((await ctl.place(node, pkg.dir, { name: "third" })).kind).toBe("ok");
  });

  it("refuses a second place for a decision it already holds and keeps exactly one instance", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const decisionId = ctl.decisionId();
    const first = ok(await ctl.place(node, pkg.dir, { decisionId }));
    const second = await ctl.place(node, pkg.dir, { decisionId });
    expect(second).toMatchObject({ kind: "refused", code: "invalid_request" });
    expect((second as { reason: string }).reason).toContain(`already placed as ${first.instance_id as string}`);
    expect(rowsOf(await ctl.status(node)).length).toBe(1);
  });

  it("rolls back a start that governance denies after load, refuses it, and the next candidate places (seed scenario A)", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const bad = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: NO_START,
    });
    const good = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const decisionId = ctl.decisionId();

    const refused = await ctl.place(bad, pkg.dir, { decisionId });
    expect(refused.kind).toBe("refused");
    if (refused.kind !== "refused") return;
    expect(refused.code).toBe("governance");
    expect(refused.reason).toContain("start failed");
    expect(refused.reason).toContain("unloaded");
    expect(refused.reason).toMatch(/loaded instance probe-[0-9a-f]{12} unloaded/);
    // no instance listed, no in-flight mark left, no process of that decision anywhere
    expect(rowsOf(await ctl.status(bad))).toEqual([]);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
    const departed = rowsOf(await ctl.status(bad, null, true));
    expect(departed).toEqual([expect.objectContaining({ decision_id: decisionId, departed: "rolled back" })]);
    // the node's chain: the denied start, the rollback unload by the runtime, the handler's refusal
    expect(bad.events({ source: "gate", kind: "workload.start" }).map((e) => e.payload.decision)).toEqual(["deny"]);
    const unloads = bad.events({ source: "runtime", kind: "workload.unload" });
    expect(unloads.map((e) => [e.payload.rollback, e.payload.outcome])).toEqual([[true, "ok"]]);
    expect(bad.events({ source: "node", kind: "workload.refuse", phase: "handle" }).map((e) => e.payload.code)).toEqual(
      ["governance"],
    );

    // the same decision on the next candidate places exactly one instance
    const placed = ok(await ctl.place(good, pkg.dir, { decisionId }));
    expect(placed.state).toBe("running");
    expect(rowsOf(await ctl.status(good)).length).toBe(1);
    expect(ok(await ctl.verb(good, "unload", { instance_id: placed.instance_id as string })).unloaded).toBe(true);
    expect(rowsOf(await ctl.status(good))).toEqual([]);
  });

  it("keeps a rolled-back instance listed as failed when the rollback unload is denied too", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    // Only load is permitted and the built-in teardown permit is off, so the rollback's unload is denied.
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: [{ id: "load-only", actions: ["workload.load"], kinds: ["probe"], max_network: "egress" }],
    });
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(node.dataDir, "node.json"), JSON.stringify({ name: "n", gate: { builtin_teardown: false } }));
    await node.kill9();
    await node.start();
    const pkg = makePackage(signer);
    const r = await ctl.place(node, pkg.dir);
    expect(r).toMatchObject({ kind: "refused", code: "governance" });
    expect((r as { reason: string }).reason).toMatch(
      /start failed: .*; unload of probe-[0-9a-f]{12} failed too \(.*\), it stays listed/,
    );
    const rows = rowsOf(await ctl.status(node));
    expect(rows).toEqual([expect.objectContaining({ state: "failed" })]);
  });
});
