/**
 * Several berth processes on one controller store (issue 21, cases 1, 2 and 6): real `berth` CLI processes on one
 * `$BERTH_HOME`, a real `berth node serve` daemon reached through the test TCP proxy, which holds exactly the
 * request named. The promise is judged from outside: live processes from /proc (by the environment the node gives
 * each instance), placements and chain records from the store opened read-only, `berth audit verify`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadKeyFile } from "../../src/keys/key-file.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, MAIN, NodeProcess, waitFor } from "../mesh/harness.js";
import { liveInstances } from "../support/live-agents.js";
import { killAll, type Spawned, spawnNode } from "../support/process.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { type CliHome, cliHome } from "./support/cli-home.js";
import { TEST_PERMIT } from "./support/package.js";

const proxies: TcpProxy[] = [];
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
  await cleanup();
});

/** What the store records (a read, either engine): placements of `name`, and the chain's "interrupted" records. */
function recorded(
  cli: CliHome,
  name: string,
): Promise<{ placements: string[]; interrupted: JsonObject[]; decisions: JsonObject[] }> {
  return cli.store((e) =>
    e.read(async (q) => {
      const placements = (
        await q.all<{ instance_id: string }>(
          "SELECT instance_id FROM mesh_placements WHERE name = ? ORDER BY instance_id",
          [name],
        )
      ).map((r) => r.instance_id);
      const payloads = async (kind: string) =>
        (await q.all<{ payload: string }>("SELECT payload FROM audit_event WHERE kind = ? ORDER BY seq", [kind])).map(
          (r) => JSON.parse(r.payload) as JsonObject,
        );
      const interrupted = (await payloads("workload.refuse")).filter((p) => p.phase === "interrupted");
      const decisions = (await payloads("workload.place")).filter((p) => p.phase === "decision" && p.name === name);
      return { placements, interrupted, decisions };
    }),
  );
}

interface World {
  readonly cli: CliHome;
  readonly proxy: TcpProxy;
  readonly name: string;
  readonly spec: string;
  deploy(): Spawned;
}

async function world(): Promise<World> {
  const cli = await cliHome("berth-race-home-", { script: "#!/bin/sh\necho agent-up\nexec sleep 300\n" });
  // The proxy holds a request before the node sees a byte of it (a slow link). The node cuts a connection that sends
  // nothing for first_bytes_ms (1.5 s by default, issue 12's slot defence), which would turn the held request into a
  // reset; these cases are about concurrent controllers, so the node gives the link the time the test holds it.
  const node = await NodeProcess.create({
    controllers: [cli.controllerKey],
    signers: [cli.signer.publicKey],
    permits: [TEST_PERMIT],
    limits: { first_bytes_ms: 60_000, first_frame_ms: 60_000 },
  });
  const proxy = await TcpProxy.start(node.address, {
    tls: { node: node.identity(), controller: loadKeyFile(join(cli.home, "keys", "controller.key")) },
  });
  proxies.push(proxy);
  const added = await cli.berth("nodes", "add", proxy.address, "--tier", "paired");
  expect(added.code, added.stderr).toBe(0);
  const name = `race${process.pid}x${Math.floor(Math.random() * 1e6)}`;
  const spec = join(cli.home, "A.json");
  writeFileSync(
    spec,
    JSON.stringify({
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name },
      spec: { target: "mesh", package: "./pkg" },
    }),
  );
  return { cli, proxy, name, spec, deploy: () => spawnNode([MAIN, "deploy", spec, "--json"], { env: cli.env }) };
}

describe("concurrent berth processes on one controller store (issue 21)", () => {
  it("case 1: two concurrent deploys of one agent while the first's place is held make one live process, recorded; the second names the first's pid", async () => {
    const w = await world();
    const held = w.proxy.holdNextRequest("place");
    const first = w.deploy();
    await held.arrived;
    const second = await w.cli.berth("deploy", w.spec, "--json");
    expect(first.child.exitCode, "the first deploy is still waiting for its held place").toBeNull();
    // Case 6 too: nothing was recorded as interrupted while the first process was alive.
    expect((await recorded(w.cli, w.name)).interrupted).toEqual([]);
    const message = String((JSON.parse(second.stdout) as JsonObject).message ?? "");
    expect(message).toContain(`in flight by pid ${first.child.pid}`);
    expect(message).not.toContain("berth instance unload");
    held.release();
    const exit = await first.exited();
    expect(exit.code, first.output() + first.errors()).toBe(0);
    await waitFor(() => liveInstances(w.name).length > 0 || undefined, "the agent's process", 30_000);
    const live = liveInstances(w.name);
    expect(live).toHaveLength(1);
    expect((await recorded(w.cli, w.name)).placements).toEqual(live);
    const [decision] = (await recorded(w.cli, w.name)).decisions;
    expect((decision?.owner as JsonObject | undefined)?.pid, "the decision records the process that made it").toBe(
      first.child.pid,
    );
    const verified = await w.cli.berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 180_000);

  it("case 2: a settle in another process never adopts an instance its own decision is unloading, and a reset unload leaves no wedge", async () => {
    const w = await world();
    w.proxy.dropNextPlaceAnswer();
    const unload = w.proxy.holdNextRequest("unload");
    const first = w.deploy();
    await unload.arrived;
    const settle = await w.cli.berth("unsettled", "--settle", "--json");
    expect(settle.code, settle.stderr).toBe(0);
    expect(
      (JSON.parse(settle.stdout) as { settled: JsonObject }).settled.adopted,
      "the reconciling decision must not be adopted",
    ).toBe(0);
    expect((await recorded(w.cli, w.name)).placements).toEqual([]);
    expect((await recorded(w.cli, w.name)).interrupted).toEqual([]);
    unload.reset();
    await first.exited();
    // The unload never arrived: the instance still runs, and the decision is unsettled, not wedged.
    const again = await w.cli.berth("unsettled", "--settle", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe("");
    expect((JSON.parse(again.stdout) as { settled: JsonObject }).settled.adopted).toBe(1);
    const live = liveInstances(w.name);
    expect(live).toHaveLength(1);
    expect((await recorded(w.cli, w.name)).placements).toEqual(live);
    const later = await w.cli.berth("deploy", w.spec, "--json");
    expect(later.code, later.stdout + later.stderr).toBe(0);
    expect(liveInstances(w.name)).toEqual(live);
    const doctor = await w.cli.berth("doctor");
    expect(doctor.stdout).toContain("no wedged decisions");
    const verified = await w.cli.berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 180_000);

  it("case 6: no 'controller restarted … interrupted' record while the deciding process lives; one, naming why, once it is killed", async () => {
    const w = await world();
    const held = w.proxy.holdNextRequest("place");
    const first = w.deploy();
    await held.arrived;
    for (const verb of [["instances"], ["unsettled"], ["agents"], ["unsettled", "--settle"]]) {
      const r = await w.cli.berth(...verb, "--json");
      expect(r.code, `${verb.join(" ")}: ${r.stderr}`).toBe(0);
    }
    expect((await recorded(w.cli, w.name)).interrupted).toEqual([]);
    first.child.kill("SIGKILL");
    await first.exited();
    held.reset();
    const after = await w.cli.berth("unsettled", "--json");
    expect(after.code, after.stderr).toBe(0);
    const interrupted = (await recorded(w.cli, w.name)).interrupted;
    expect(interrupted, `after the kill: ${after.stdout} ${after.stderr}`).toHaveLength(1);
    expect(interrupted[0]).toMatchObject({
      reason: "controller restarted while a request may have been in flight",
      owner: expect.stringContaining(`pid ${first.child.pid}`),
    });
    expect(String(interrupted[0]?.owner)).toMatch(/not running/);
  }, 180_000);
});
