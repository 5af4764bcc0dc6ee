/**
 * Supervision on the node (issue 15), with real node daemons as OS processes and real agent processes judged from
 * /proc and the node's own chain: a killed agent comes back in place with its workspace, never two copies at once; a
 * spent budget holds the instance `failed`; a stop during a backoff is final; an agent that died while its daemon was
 * down is restarted when the daemon returns; a failing health check restarts it; a finished `once` job stays done.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import type { RestartPolicy } from "../../src/core/node/restart-policy.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, type SourceManifest, signPackage } from "../../src/mesh/packages/dir.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NodeProcess,
  ok,
  requireBuild,
  TestController,
  tempDir,
  waitFor,
} from "./harness.js";

vi.setConfig({ testTimeout: 120_000 });

beforeAll(requireBuild);
afterEach(cleanup);

/** Records each run in the workspace ($HOME), then behaves as `tail` says. */
const runScript = (tail: string) => `#!/bin/sh\necho "run $$" >> "$HOME/runs"\n${tail}\n`;

async function setup(script: string, opts: { health?: SourceManifest["health"] } = {}) {
  const ctl = new TestController();
  const signer = generateSigningKey();
  const node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
  });
  const pkg = opts.health ? healthPackage(signer, script, opts.health) : makePackage(signer, { script });
  return { ctl, node, pkg };
}

function healthPackage(
  signer: ReturnType<typeof generateSigningKey>,
  script: string,
  health: SourceManifest["health"],
) {
  const dir = tempDir("berth-pkg-");
  writeFileSync(join(dir, "run.sh"), script);
  // Healthy unless the workspace holds a file named `sick`.
  writeFileSync(join(dir, "health.sh"), '#!/bin/sh\n[ ! -e "$HOME/sick" ]\n');
  chmodSync(join(dir, "run.sh"), 0o755);
  chmodSync(join(dir, "health.sh"), 0o755);
  initPackage(dir, {
    name: "probe",
    kind: "probe",
    files: ["run.sh", "health.sh"],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
    network: "egress",
    health,
  });
  const { packageId } = buildPackage(dir);
  signPackage(dir, signer);
  return { dir, packageId };
}

function place(
  ctl: TestController,
  node: NodeProcess,
  pkgDir: string,
  restart: RestartPolicy,
  opts: { name?: string; mode?: "service" | "once" } = {},
) {
  const source = new PackageDirSource(pkgDir);
  return ctl.client.call(
    node.target(),
    "place",
    {
      package_id: source.packageId,
      name: opts.name ?? "probe",
      variant: "any-linux",
      config: { mode: opts.mode ?? "service", args: [], env: {} },
      restart,
    },
    { decisionId: ctl.decisionId(), package: source },
  );
}

async function row(ctl: TestController, node: NodeProcess, id: string): Promise<JsonObject> {
  return ok(await ctl.status(node, id)).row as JsonObject;
}

/** The process groups of live (non-zombie) processes carrying the instance's id, from /proc. */
function liveGroups(instanceId: string): Set<number> {
  const groups = new Set<number>();
  for (const p of readdirSafe()) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue;
      if (readFileSync(`/proc/${p}/environ`, "utf8").split("\0").includes(`BERTH_INSTANCE_ID=${instanceId}`))
        groups.add(Number(fields[2]));
    } catch {
      // gone, or not ours
    }
  }
  return groups;
}

function readdirSafe(): string[] {
  try {
    return readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return [];
  }
}

/** Samples /proc every 100 ms until stopped: the largest number of the instance's live process groups ever seen. */
function sampleGroups(instanceId: string) {
  const counts: number[] = [];
  const timer = setInterval(() => counts.push(liveGroups(instanceId).size), 100);
  return {
    /** Resolves once `n` more samples were taken (a loaded machine fires the interval late, never early). */
    more: async (n: number) => {
      const want = counts.length + n;
      while (counts.length < want) await new Promise((r) => setTimeout(r, 50));
    },
    stop: () => {
      clearInterval(timer);
      return counts;
    },
  };
}

const lifecycle = (node: NodeProcess, id: string) =>
  node
    .events({ source: "node", kind: "workload.lifecycle", phase: "supervise" })
    .filter((e) => e.payload.instance_id === id)
    .map((e) => e.payload);
const starts = (node: NodeProcess, id: string) =>
  node.events({ source: "runtime", kind: "workload.start" }).filter((e) => e.payload.instance_id === id);

describe("a supervised agent on a node", () => {
  it("comes back in place after kill -9, with its workspace, and never runs as two process groups at once", async () => {
    const { ctl, node, pkg } = await setup(runScript("exec sleep 60"));
    const placed = ok(await place(ctl, node, pkg.dir, "always"));
    const id = placed.instance_id as string;
    const home = join(node.dataDir, "workspaces", "probe");
    await waitFor(() => existsSync(join(home, "runs")), "the first run's mark in the workspace", 30_000);
    const sampler = sampleGroups(id);
    await waitFor(() => liveGroups(id).size === 1 || undefined, "the agent's group");
    const before = await row(ctl, node, id);
    process.kill(-(before.pid as number), "SIGKILL");

    const after = await waitFor(
      async () => {
        const r = await row(ctl, node, id);
        return r.state === "running" && r.generation === 2 && liveGroups(id).size === 1 ? r : undefined;
      },
      "the agent to run again",
      30_000,
    );
    await sampler.more(6); // keep sampling past the restart, however late a loaded machine fires the timer
    const counts = sampler.stop();

    expect(after).toMatchObject({ instance_id: id, state: "running", restarts: 1, restart_policy: "always" });
    expect(after.pid).not.toBe(before.pid);
    // The first restart is immediate (no backoff): the lifecycle below records delay_ms 0 (a wall-clock bound here
    // would measure the machine's load, not the supervisor).
    expect(Math.max(...counts)).toBe(1);
    expect(counts.length).toBeGreaterThan(5);
    // The workspace is the same directory: the first run's line is still there, the second appended below it.
    // (the second line lands once the new wrapper is through the cgroup migration lock, so it is waited for).
    await waitFor(
      () => readFileSync(join(home, "runs"), "utf8").trim().split("\n").length >= 2 || undefined,
      "the second run's line",
      30_000,
    );
    expect(readFileSync(join(home, "runs"), "utf8").trim().split("\n")).toHaveLength(2);
    expect(lifecycle(node, id)).toEqual([
      expect.objectContaining({ from: "exited", to: "backoff", reason: "restart 1/3: killed by SIGKILL", delay_ms: 0 }),
      expect.objectContaining({
        from: "backoff",
        to: "running",
        reason: "restart 1/3: killed by SIGKILL",
        generation: 2,
      }),
    ]);
    // A fence taken before the restart (generation 1) refuses to unload the new process.
    const fenced = await ctl.verb(node, "unload", { instance_id: id, generation: 1 });
    expect(fenced).toMatchObject({ kind: "refused", code: "precondition_failed" });
    expect(node.verifyChain().ok).toBe(true);
  }, 90_000);

  it("is failed once its budget of three restarts is spent, and restarted no more until the operator starts it", async () => {
    const { ctl, node, pkg } = await setup(runScript("sleep 0.2\nexit 3"));
    const id = ok(await place(ctl, node, pkg.dir, "on-failure")).instance_id as string;
    const failed = await waitFor(
      async () => {
        const r = await row(ctl, node, id);
        return r.state === "failed" ? r : undefined;
      },
      "the budget to be spent",
      30_000,
    );
    expect(failed).toMatchObject({ restarts: 3, exit_code: 3 });
    expect(failed.detail).toMatch(/^restart budget spent \(3 restarts in 10 min\): exited with code 3/);
    const startsWhenFailed = starts(node, id).length;
    expect(startsWhenFailed).toBe(4); // the placement and three restarts
    const reasons = lifecycle(node, id).map((p) => `${p.from}>${p.to}: ${p.reason}`);
    expect(reasons).toEqual([
      "exited>backoff: restart 1/3: exited with code 3",
      "backoff>running: restart 1/3: exited with code 3",
      "exited>backoff: restart 2/3: exited with code 3",
      "backoff>running: restart 2/3: exited with code 3",
      "exited>backoff: restart 3/3: exited with code 3",
      "backoff>running: restart 3/3: exited with code 3",
      expect.stringMatching(/^exited>failed: restart budget spent/),
    ]);
    const delays = lifecycle(node, id)
      .filter((p) => p.to === "backoff")
      .map((p) => p.delay_ms);
    expect(delays).toEqual([0, 1000, 2000]);
    // Held: several seconds later nothing was started again.
    await new Promise((r) => setTimeout(r, 4000));
    expect(starts(node, id)).toHaveLength(startsWhenFailed);
    expect(liveGroups(id).size).toBe(0);
    expect((await row(ctl, node, id)).state).toBe("failed");

    // An operator start begins a fresh budget: it runs, and its next exit is restart 1/3 again.
    ok(await ctl.verb(node, "start", { instance_id: id }));
    await waitFor(
      () => lifecycle(node, id).filter((p) => p.reason === "restart 1/3: exited with code 3").length >= 3,
      "a fresh budget after the operator's start",
    );
  });

  it("is restarted per its policy after the kernel kills it over its memory limit (issue 15: killed, reported, restarted)", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    // `tail` keeps what it reads until a newline; /dev/zero has none, so each run grows past 32 MiB.
    const pkg = makePackage(signer, {
      script: runScript("head -c 400000000 /dev/zero | tail > /dev/null"),
      memoryMb: 32,
    });
    const id = ok(await place(ctl, node, pkg.dir, "on-failure")).instance_id as string;
    const restarted = await waitFor(
      () => lifecycle(node, id).find((p) => p.from === "backoff" && p.to === "running"),
      "a restart after the memory kill",
      60_000,
    );
    expect(String(restarted.reason)).toMatch(/^restart 1\/3: /);
    const exits = node
      .events({ kind: "workload.exit" })
      .map((e) => e.payload as JsonObject)
      .filter((p) => p.instance_id === id);
    expect(exits[0]).toMatchObject({ reason: "memory_limit", memory_mb: 32 });
  });

  it("is never restarted after a stop through berth during its backoff", async () => {
    const { ctl, node, pkg } = await setup(runScript("sleep 0.3\nexit 3"));
    let id = "";
    // The first restart is immediate; the second waits 1 s: stop inside that wait. On a loaded machine the status
    // poll and the stop's own call can outlast that second, and the stop lands on the run after it: that placement
    // proves nothing about a backoff, so another (under a new name) is tried.
    for (let attempt = 1; ; attempt++) {
      id = ok(await place(ctl, node, pkg.dir, "always", { name: attempt === 1 ? "probe" : `probe${attempt}` }))
        .instance_id as string;
      await waitFor(
        async () => {
          const r = await row(ctl, node, id);
          return r.state === "backoff" && r.restarts === 1;
        },
        "the second restart's backoff",
        30_000,
      );
      const stopped = await ctl.verb(node, "stop", { instance_id: id, grace_ms: 500 });
      expect(stopped.kind).toBe("ok");
      // Two starts at the stop: it came inside the backoff (a third start means it came after the restart).
      if (starts(node, id).length === 2 || attempt === 5) break;
    }
    const startsAtStop = starts(node, id).length;
    expect(startsAtStop).toBe(2);
    await new Promise((r) => setTimeout(r, 3500)); // past the 1 s backoff and the one after it
    expect(starts(node, id)).toHaveLength(startsAtStop);
    expect(await row(ctl, node, id)).toMatchObject({ state: "stopped", restarts: 1 });
    expect(liveGroups(id).size).toBe(0);
    expect(lifecycle(node, id).at(-1)).toMatchObject({ from: "backoff", to: "stopped" });
  });

  it("is restarted when its daemon returns if it crashed while the daemon was down", async () => {
    const { ctl, node, pkg } = await setup(runScript("exec sleep 60"));
    const id = ok(await place(ctl, node, pkg.dir, "always")).instance_id as string;
    const before = await row(ctl, node, id);
    // The row says running once the wrapper is spawned; the script's own line lands only after the wrapper has joined
    // its cgroups (a write to cgroup.procs waits for the kernel's cgroup migration lock, which a machine busy making and
    // removing other tests' cgroups can hold a long time: CI waited over 10 s once). Killing the first run before its
    // line is written would leave one line in all, so the crash waits for it.
    const runsFile = join(node.dataDir, "workspaces", "probe", "runs");
    const runs = () => (existsSync(runsFile) ? readFileSync(runsFile, "utf8").trim().split("\n") : []);
    await waitFor(() => runs().length >= 1 || undefined, "the first run's line in the workspace", 30_000);
    await node.kill9();
    process.kill(-(before.pid as number), "SIGKILL");
    await waitFor(() => liveGroups(id).size === 0, "the agent's group to die");
    await node.start();
    const after = await waitFor(
      async () => {
        const r = await row(ctl, node, id);
        return r.state === "running" && r.generation === 2 ? r : undefined;
      },
      "the agent to run again after the daemon's restart",
      30_000,
    );
    expect(after).toMatchObject({ instance_id: id, restarts: 1 });
    expect(liveGroups(id).size).toBe(1);
    const phases = node
      .events({ source: "node", kind: "workload.lifecycle" })
      .filter((e) => e.payload.instance_id === id)
      .map((e) => `${e.payload.phase}:${e.payload.from}>${e.payload.to}`);
    expect(phases).toEqual(["node_restart:running>exited", "supervise:exited>backoff", "supervise:backoff>running"]);
    // The restart is proven above; this is the entry running, behind the same migration lock as the first line.
    await waitFor(() => runs().length >= 2 || undefined, "the second run's line in the workspace", 30_000);
    expect(runs()).toHaveLength(2);
  }, 90_000);

  it("is stopped and restarted when its health check fails `misses` times in a row", async () => {
    const { ctl, node, pkg } = await setup(runScript("exec sleep 60"), {
      health: { exec: ["health.sh"], interval_s: 1, misses: 2 },
    });
    const id = ok(await place(ctl, node, pkg.dir, "on-failure")).instance_id as string;
    const home = join(node.dataDir, "workspaces", "probe");
    // Healthy for a few intervals: nothing happens.
    await new Promise((r) => setTimeout(r, 2500));
    expect(await row(ctl, node, id)).toMatchObject({ state: "running", generation: 1 });
    writeFileSync(join(home, "sick"), "");
    await waitFor(() => lifecycle(node, id).some((p) => p.to === "unhealthy"), "the unhealthy verdict", 30_000);
    rmSick(home);
    const after = await waitFor(
      async () => {
        const r = await row(ctl, node, id);
        return r.state === "running" && r.generation === 2 ? r : undefined;
      },
      "the restart after the unhealthy verdict",
      30_000,
    );
    expect(after.restarts).toBe(1);
    expect(lifecycle(node, id).slice(0, 3)).toEqual([
      expect.objectContaining({
        from: "running",
        to: "unhealthy",
        reason: "2 health checks failed in a row (exit code 1)",
      }),
      expect.objectContaining({
        from: "unhealthy",
        to: "backoff",
        reason: "restart 1/3: 2 health checks failed in a row (exit code 1)",
      }),
      expect.objectContaining({ from: "backoff", to: "running" }),
    ]);
    expect(liveGroups(id).size).toBe(1);
  });

  it("leaves a once job that exited 0 finished, whatever its policy", async () => {
    const { ctl, node, pkg } = await setup(runScript("exit 0"));
    const id = ok(await place(ctl, node, pkg.dir, "always", { mode: "once" })).instance_id as string;
    await waitFor(async () => (await row(ctl, node, id)).state === "finished", "the job to finish");
    await new Promise((r) => setTimeout(r, 1500));
    expect(starts(node, id)).toHaveLength(1);
    expect(await row(ctl, node, id)).toMatchObject({ state: "finished", exit_code: 0, restarts: 0 });
  });
});

describe("an agent's workspace on a node", () => {
  it("survives an unload and a new placement of the same name, and goes only with an unload that purges it", async () => {
    const { ctl, node, pkg } = await setup(runScript("exec sleep 60"));
    const home = join(node.dataDir, "workspaces", "scout");
    const first = ok(await place(ctl, node, pkg.dir, "never", { name: "scout" })).instance_id as string;
    await waitFor(() => existsSync(join(home, "runs")), "the first run's mark", 30_000);
    ok(await ctl.verb(node, "unload", { instance_id: first }));
    expect(existsSync(join(node.dataDir, "instances", first))).toBe(false);
    expect(existsSync(join(home, "runs"))).toBe(true);

    const second = ok(await place(ctl, node, pkg.dir, "never", { name: "scout" })).instance_id as string;
    expect(second).not.toBe(first);
    await waitFor(
      () => readFileSync(join(home, "runs"), "utf8").trim().split("\n").length === 2,
      "the second run's mark beside the first",
      30_000,
    );
    const purged = ok(await ctl.verb(node, "unload", { instance_id: second, purge: true }));
    expect(purged).toMatchObject({ unloaded: true, workspace_purged: true });
    expect(existsSync(home)).toBe(false);
    const unloads = node.events({ source: "runtime", kind: "workload.unload" }).map((e) => e.payload.workspace ?? null);
    expect(unloads).toEqual([null, "purged"]);
  }, 90_000);
});

function rmSick(home: string): void {
  rmSync(join(home, "sick"), { force: true });
}
