/**
 * `berth deploy` of a mesh agent against real node daemons (issue 7 §Tests): two `berth node serve` processes, the
 * first behind a TCP proxy the test controls, the controller in the test process over TCP. Every assertion about
 * instances goes through a signed `status` straight to each daemon (never through the controller under test) and
 * counts instances across both nodes.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { recordMeshDeploy } from "../../src/agents/audit.js";
import { deployMeshAgent, fencedUnload, type MeshAgentDeps, observeMesh } from "../../src/agents/targets/mesh/index.js";
import { loadSpecFile, meshIntentOf } from "../../src/agents/spec-file.js";
import type { AgentDeployResult } from "../../src/core/agents/deploy-event.js";
import { classifyMesh } from "../../src/core/agents/mesh-classify.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { resolveSpecEnv } from "../../src/agents/secret-env.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { waitFor } from "../mesh/harness.js";
import { hostArch, hostOs } from "../mesh-controller/support/package.js";
import { cleanupProcesses, type ProcessFixture, processFixture } from "../mesh-controller/support/processes.js";
import { DEPLOY_EVENT_KEYS } from "./event-shape.js";

afterEach(cleanupProcesses);

async function paired(fx: ProcessFixture): Promise<void> {
  for (const addr of [fx.proxy.address, fx.second.address]) {
    const added = await fx.controller.addTarget(addr, "paired");
    expect(added.ok, JSON.stringify(added)).toBe(true);
  }
}

function writeSpec(
  fx: ProcessFixture,
  opts: { args?: string[]; start?: boolean; file?: string; restart?: "never" | "on-failure" | "always" } = {},
): string {
  const path = join(fx.controllerDir, opts.file ?? "scout.yaml");
  writeFileSync(
    path,
    [
      "apiVersion: berth/v1",
      "kind: Agent",
      "metadata: { name: scout }",
      "spec:",
      "  target: mesh",
      `  package: ${fx.pkgDir}`,
      `  config: { args: ${JSON.stringify(opts.args ?? [])} }`,
      `  mesh: { prefer: [${fx.first.nodeId}], start: ${opts.start ?? true} }`,
      ...(opts.restart ? [`  restart: ${opts.restart}`] : []),
      "",
    ].join("\n"),
  );
  return path;
}

function deps(fx: ProcessFixture): MeshAgentDeps {
  return {
    controller: fx.controller,
    client: new NodeClient({
      key: fx.key,
      connector: new TlsConnector({ identity: fx.key, connectTimeoutMs: 2_000 }),
      timeoutMs: 5_000,
    }),
    statusTimeoutMs: 3_000,
  };
}

async function deploy(
  fx: ProcessFixture,
  specPath: string,
  opts: { userReplace?: boolean } = {},
): Promise<AgentDeployResult & { event: JsonObject }> {
  const loaded = loadSpecFile(specPath);
  if (!loaded.ok) throw new Error(loaded.error);
  const env = resolveSpecEnv(loaded.value, process.env);
  if (!env.ok) throw new Error(env.error);
  const mi = meshIntentOf(loaded.value, env.value.env);
  if (!mi.ok) throw new Error(mi.error);
  const r = await deployMeshAgent(
    deps(fx),
    {
      agent: "scout",
      spec: loaded.value.spec.spec,
      env: env.value.env,
      packageDir: mi.value.packageDir,
      intent: mi.value.intent,
    },
    opts,
  );
  const event = await recordMeshDeploy(fx.controller, r);
  expect([event.source, event.kind]).toEqual(["placement", "agent.deploy"]);
  return { ...r, event: event.payload };
}

/** Every instance row on both daemons (signed status straight to each, not through the proxy). */
async function allInstances(fx: ProcessFixture): Promise<JsonObject[]> {
  return [...(await fx.instances(fx.first)), ...(await fx.instances(fx.second))];
}

describe("mesh agents with real node daemons", { timeout: 90_000 }, () => {
  it("deploying the same spec twice leaves one instance, which carries the agent's identity and intent", async () => {
    const fx = await processFixture();
    await paired(fx);
    const spec = writeSpec(fx);

    const first = await deploy(fx, spec);
    expect([first.ok, first.outcome, first.event.row], first.message).toEqual([true, "started", "no-instance"]);
    const second = await deploy(fx, spec);
    expect([second.ok, second.outcome, second.event.row, second.event.action], second.message).toEqual([
      true,
      "unchanged",
      "started",
      "no-op",
    ]);
    expect(second.instance).toBe(first.instance);

    const rows = await allInstances(fx);
    expect(rows, "exactly one instance on the mesh").toHaveLength(1);
    const intent = meshIntentOf(
      (loadSpecFile(spec) as { ok: true; value: Parameters<typeof meshIntentOf>[0] }).value,
      {},
    );
    expect([rows[0]?.agent, rows[0]?.intent, rows[0]?.state]).toEqual([
      "scout",
      intent.ok ? intent.value.intent : null,
      "running",
    ]);
    expect(
      await fx.controller.store.events({ kind: "workload.place", phase: "placed" }),
      "one placement in the controller's chain",
    ).toHaveLength(1);
    const events = await fx.controller.store.events({ kind: "agent.deploy" });
    expect(events.map((e) => e.outcome)).toEqual(["started", "unchanged"]);
    for (const e of events)
      expect(Object.keys(e).sort(), "the same payload shape as on Kubernetes").toEqual([...DEPLOY_EVENT_KEYS].sort());
    expect((await fx.controller.store.chain.verifyStored()).ok).toBe(true);
  });

  it("after the instance's process is killed the next deploy replaces it through a fenced unload", async () => {
    const fx = await processFixture();
    await paired(fx);
    // `restart: never`: the deploy's own replace path (under the default `always` the node restarts it itself, issue 15).
    const spec = writeSpec(fx, { restart: "never" });
    const first = await deploy(fx, spec);
    expect(first.outcome, first.message).toBe("started");
    const [row] = await allInstances(fx);
    // The agent crashes: its whole group dies (killing only the leader leaves it running, issue 21 case 4).
    process.kill(-(row?.pid as number), "SIGKILL");
    await waitFor(
      async () => (await allInstances(fx)).find((r) => r.instance_id === first.instance && r.state === "exited"),
      "the node to record the exit",
    );

    const again = await deploy(fx, spec);
    expect([again.ok, again.outcome, again.event.row, again.event.action], again.message).toEqual([
      true,
      "started",
      "terminated",
      "replace (terminated)",
    ]);
    expect(again.event.fence).toEqual({
      node_id: fx.first.nodeId,
      instance_id: first.instance,
      generation: row?.generation,
    });
    expect(again.instance).not.toBe(first.instance);
    const rows = await allInstances(fx);
    expect(rows.map((r) => [r.instance_id, r.state])).toEqual([[again.instance, "running"]]);
    const unloads = fx.first
      .events({ source: "runtime", kind: "workload.unload" })
      .filter((e) => e.payload.instance_id === first.instance);
    expect(unloads, "the terminated instance was unloaded on its node").toHaveLength(1);
  });

  it("a fence whose instance was restarted since the observation is refused by the node and nothing is unloaded", async () => {
    const fx = await processFixture();
    await paired(fx);
    const first = await deploy(fx, writeSpec(fx, { restart: "never" })); // the node must not restart it itself (issue 15)
    const [row] = await allInstances(fx);
    // The agent crashes: its whole group dies (killing only the leader leaves it running, issue 21 case 4).
    process.kill(-(row?.pid as number), "SIGKILL");
    await waitFor(async () => (await allInstances(fx)).some((r) => r.state === "exited"), "the exit");
    const seen = await observeMesh(deps(fx), "scout");
    const { action } = classifyMesh(seen.observation, "whatever");
    if (action.kind !== "replace") throw new Error(`expected a replace, got ${action.kind}`);
    // Someone restarts the instance between our observation and our unload: its generation moves on.
    expect((await fx.controller.instance("start", first.instance as string)).kind).toBe("ok");
    const r = await fx.controller.instance("unload", action.fence.instanceId, fencedUnload(action.fence));
    expect(r.kind).toBe("refused");
    expect(r.kind === "refused" && r.reason).toContain("generation precondition failed");
    expect(
      (await allInstances(fx)).map((x) => x.state),
      "the restarted instance is untouched",
    ).toEqual(["running"]);
  });

  it("a lost place answer and a second deploy while the node is cut off never make a second instance", async () => {
    const fx = await processFixture();
    await paired(fx);
    const spec = writeSpec(fx);
    fx.proxy.dropNextPlaceAnswer({ thenCut: true });

    const lost = await deploy(fx, spec);
    expect([lost.ok, lost.outcome], lost.message).toEqual([false, "blocked"]);
    expect(await fx.controller.unsettled()).toHaveLength(1);

    const whileCut = await deploy(fx, spec);
    expect([whileCut.ok, whileCut.outcome, whileCut.event.row, whileCut.event.action], whileCut.message).toEqual([
      false,
      "blocked",
      "unsettled-decision",
      "settle-first",
    ]);
    expect(whileCut.message).toContain("nothing was placed");
    expect(await fx.instances(fx.second), "nothing placed on the other node").toHaveLength(0);

    await fx.proxy.heal();
    const healed = await deploy(fx, spec);
    expect([healed.ok, healed.outcome], healed.message).toEqual([true, "unchanged"]);
    // Settled first (by this deploy, or by the controller's own refresh): the held instance is adopted, never doubled.
    expect(healed.rounds.at(-1)?.row).toBe("started");
    expect(await fx.controller.store.events({ kind: "workload.place", phase: "adopted" })).toHaveLength(1);
    const rows = await allInstances(fx);
    expect(rows, "at most one instance once the node is back").toHaveLength(1);
    expect(rows[0]?.instance_id).toBe(healed.instance);
  });

  it("restarting the controller between two deploys makes no duplicate", async () => {
    const fx = await processFixture();
    await paired(fx);
    const spec = writeSpec(fx);
    const first = await deploy(fx, spec);
    expect(first.outcome, first.message).toBe("started");
    await fx.reopen();
    const second = await deploy(fx, spec);
    expect([second.outcome, second.instance], second.message).toEqual(["unchanged", first.instance]);
    expect(await allInstances(fx)).toHaveLength(1);
  });

  it("editing a never-started agent replaces it; editing a running one waits for a stop or an explicit replace", async () => {
    const fx = await processFixture();
    await paired(fx);
    const loaded = await deploy(fx, writeSpec(fx, { start: false }));
    expect([loaded.ok, loaded.outcome], loaded.message).toEqual([true, "waiting"]);
    const same = await deploy(fx, writeSpec(fx, { start: false }));
    expect([same.outcome, same.event.row, same.instance]).toEqual([
      "waiting",
      "never-started-same-intent",
      loaded.instance,
    ]);
    const edited = await deploy(fx, writeSpec(fx, { start: false, args: ["--v2"] }));
    expect([edited.event.row, edited.event.action], edited.message).toEqual([
      "never-started-diverged-intent",
      "replace (intent-diverged)",
    ]);
    expect(edited.instance).not.toBe(loaded.instance);
    expect((await allInstances(fx)).map((r) => r.instance_id)).toEqual([edited.instance]);

    // Now a running agent: the edit is reported, not applied.
    const running = await deploy(fx, writeSpec(fx, { args: ["--v2"] }), { userReplace: true });
    expect([running.ok, running.outcome], running.message).toEqual([true, "started"]);
    const pending = await deploy(fx, writeSpec(fx, { args: ["--v3"] }));
    expect([pending.outcome, pending.pendingEdit, pending.instance]).toEqual(["unchanged", true, running.instance]);
    expect(pending.message).toContain("takes effect after it stops");
    const replaced = await deploy(fx, writeSpec(fx, { args: ["--v3"] }), { userReplace: true });
    expect([replaced.ok, replaced.outcome, replaced.event.action], replaced.message).toEqual([
      true,
      "started",
      "replace (user)",
    ]);
    const rows = await allInstances(fx);
    expect(rows.map((r) => [r.instance_id, r.state])).toEqual([[replaced.instance, "running"]]);
  });

  it("two live instances after a fault are reported loudly, the older kept, and neither is touched", async () => {
    const fx = await processFixture();
    await paired(fx);
    const spec = writeSpec(fx);
    const first = await deploy(fx, spec);
    expect(first.outcome, first.message).toBe("started");
    const intent = String((await allInstances(fx))[0]?.intent);
    // A fault's leftover: the same agent placed on the second node by a request this controller never decided.
    const source = new PackageDirSource(fx.pkgDir);
    // Sent for the controller's store (issue 20): a fault of this store's own, not a second home's.
    const client = new NodeClient({
      key: fx.key,
      connector: new TlsConnector({ identity: fx.key, connectTimeoutMs: 2_000 }),
      timeoutMs: 15_000,
      authority: () => fx.controller.authority.current(),
    });
    const stray = await client.call(
      fx.second.target(),
      "place",
      {
        package_id: source.packageId,
        name: "scout",
        variant: `${hostArch()}-${hostOs()}`,
        config: { mode: "service", args: [], env: {} },
        agent: "scout",
        intent,
      },
      { decisionId: "f".repeat(64), package: source },
    );
    expect(stray.kind, JSON.stringify(stray)).toBe("ok");

    const r = await deploy(fx, spec);
    expect([r.ok, r.outcome, r.event.row, r.event.action], r.message).toEqual([
      false,
      "duplicates",
      "two-live-instances",
      "report-duplicates",
    ]);
    expect(r.instance, "the older, the one this controller decided, is kept").toBe(first.instance);
    expect(r.message).toContain("Nothing was stopped");
    const rows = await allInstances(fx);
    expect(
      rows.map((x) => x.state),
      "both still run",
    ).toEqual(["running", "running"]);
    expect(
      fx.first.events({ source: "runtime", kind: "workload.unload" }).length +
        fx.second.events({ source: "runtime", kind: "workload.unload" }).length,
    ).toBe(0);
  });

  it("a place refused for the name names its real holder, and only a workload that is not the agent is worth unloading", async () => {
    const fx = await processFixture();
    await paired(fx);
    const plain = await fx.controller.place({ package: fx.pkgDir, name: "scout" });
    const holder = plain.placed?.instance_id;
    expect(holder, JSON.stringify(plain.attempts)).toBeDefined();
    const r = await deploy(fx, writeSpec(fx));
    expect([r.ok, r.outcome], r.message).toEqual([false, "failed"]);
    expect(r.message).toContain(`held by ${holder}`);
    expect(r.message).toContain(`berth instance unload ${holder}`);
    expect(
      (await allInstances(fx)).map((x) => [x.instance_id, x.state]),
      "the holder still runs",
    ).toEqual([[holder, "running"]]);
  });
});
