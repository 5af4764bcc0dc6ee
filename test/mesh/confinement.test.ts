/**
 * Issue 15, "Confinement", with real node daemons and real processes, judged from /proc and the node's chain:
 * nothing an agent forks outlives it (a double-forked `setsid` process included, where the node has a cgroup), the
 * memory limit ends an agent and says so, a `network: "none"` agent reaches nothing (not even 127.0.0.1), where no
 * cgroup is used the group is ended with its leader, and a root daemon runs agents as its agent user or refuses.
 * This machine has cgroup v2 (core files only) at /sys/fs/cgroup/unified beside v1 controllers: the instance is
 * tracked and killed by v2 and limited by v1's memory controller.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { removeNodeCgroups } from "./confinement-cgroups.js";
import {
  ALLOW_ALL,
  cleanup,
  MAIN,
  makePackage,
  type NodeProcess,
  NodeProcess as Node,
  ok,
  processesWithEnv,
  requireBuild,
  TestController,
  tempDir,
  waitFor,
} from "./harness.js";

vi.setConfig({ testTimeout: 120_000 });
beforeAll(requireBuild);

const nodeTags: string[] = [];
afterEach(async () => {
  await cleanup();
  // The node's (empty) cgroup directories: the daemon removes an instance's at unload, the node's own stays.
  for (const tag of nodeTags.splice(0)) removeNodeCgroups(tag);
});

async function node(over: Partial<Parameters<typeof Node.create>[0]> = {}) {
  const ctl = new TestController();
  const signer = generateSigningKey();
  const n = await Node.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
    ...over,
  });
  nodeTags.push(n.nodeId.slice(0, 12));
  return { ctl, signer, node: n };
}

/** Every live process carrying the instance's id in its environment (the wrapper, the entry, anything they forked). */
const processesOf = (id: string) =>
  processesWithEnv(`BERTH_INSTANCE_ID=${id}`).filter((pid) => statOf(pid)?.state !== "Z");

function statOf(pid: number): { state: string; pgrp: number; session: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: f[0] as string, pgrp: Number(f[2]), session: Number(f[3]) };
  } catch {
    return undefined;
  }
}

const commOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
};

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

const rowOf = async (ctl: TestController, n: NodeProcess, id: string) =>
  ok(await ctl.status(n, id)).row as {
    state: string;
    detail: string | null;
    exit_code: number | null;
    signal: string | null;
  };

async function factsOf(ctl: TestController, n: NodeProcess): Promise<JsonObject> {
  const d = await ctl.client.describe(n.address, null);
  if (d.kind !== "described") throw new Error(`describe: ${d.kind}`);
  return d.facts as JsonObject;
}

// The entry double-forks: a subshell starts `setsid sleep` (a new session and group) and exits, so the sleep is
// re-parented and outside the instance's process group; then the entry itself runs on.
const DOUBLE_FORK = "#!/bin/sh\n( setsid sleep 301 & )\necho placed-ok\nexec sleep 302\n";

describe("confinement on a node with cgroups", () => {
  it("says in its facts that it contains with a cgroup and enforces network none", async () => {
    const { ctl, node: n } = await node();
    const facts = await factsOf(ctl, n);
    expect(facts.containment).toBe("cgroup-v2");
    expect(facts.confinement).toMatchObject({
      kind: "cgroup-v2",
      kill: "cgroup.kill",
      memory_limit: "cgroup-v1",
      pids_limit: "cgroup-v1",
      network_none: "enforced",
    });
  });

  it("an agent that double-forks and calls setsid leaves nothing after stop", async () => {
    const { ctl, signer, node: n } = await node();
    const placed = ok(await ctl.place(n, makePackage(signer, { script: DOUBLE_FORK }).dir));
    const id = placed.instance_id as string;
    const pgid = placed.pid as number;
    const escaped = await waitFor(
      () => processesOf(id).find((pid) => statOf(pid)?.session === pid && statOf(pid)?.pgrp !== pgid),
      "the setsid process",
    );
    expect(statOf(escaped)?.pgrp).not.toBe(pgid);
    ok(await ctl.verb(n, "stop", { instance_id: id, grace_ms: 500 }));
    expect(processesOf(id)).toEqual([]);
    expect((await rowOf(ctl, n, id)).state).toBe("stopped");
  });

  it("on cgroup v1 alone (the freezer) a double-forked setsid process is ended by stop, and by its entry's exit", async () => {
    const { ctl, signer, node: n } = await node({ config: { confinement: { cgroups: "v1" } } });
    expect((await factsOf(ctl, n)).confinement).toMatchObject({
      kind: "cgroup-v1",
      kill: "freeze-kill",
      memory_limit: "cgroup-v1",
    });
    const placed = ok(await ctl.place(n, makePackage(signer, { script: DOUBLE_FORK }).dir));
    const id = placed.instance_id as string;
    await waitFor(
      () => processesOf(id).find((pid) => statOf(pid)?.session === pid && statOf(pid)?.pgrp !== placed.pid),
      "the setsid process",
    );
    ok(await ctl.verb(n, "stop", { instance_id: id, grace_ms: 500 }));
    expect(processesOf(id)).toEqual([]);
    // and an entry that exits takes its setsid child with it (the wrapper's kill loop over cgroup.procs)
    const exiting = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: "#!/bin/sh\n( setsid sleep 309 & )\nsleep 0.3\nexit 4\n" }).dir,
        { name: "exiting" },
      ),
    );
    await waitFor(
      async () => (await rowOf(ctl, n, exiting.instance_id as string)).state === "exited",
      "the exit to be recorded",
    );
    await waitFor(
      () => processesOf(exiting.instance_id as string).length === 0,
      "the setsid child to be ended",
      30_000,
    );
  });

  it("an entry that exits leaves no child behind, even one in its own session", async () => {
    const { ctl, signer, node: n } = await node();
    const placed = ok(
      await ctl.place(
        n,
        makePackage(signer, {
          script: "#!/bin/sh\n( setsid sleep 303 & )\nsleep 304 &\necho placed-ok\nsleep 0.3\nexit 3\n",
        }).dir,
      ),
    );
    const id = placed.instance_id as string;
    const row = await waitFor(async () => {
      const r = await rowOf(ctl, n, id);
      return r.state === "exited" ? r : undefined;
    }, "the exit to be recorded");
    expect(row.exit_code).toBe(3);
    await waitFor(() => processesOf(id).length === 0, "every process of the instance to be gone", 30_000);
  });

  it("an agent over its memory limit is killed by the kernel and reported as such", async () => {
    const { ctl, signer, node: n } = await node();
    // `tail` keeps everything it has read until it sees a newline; /dev/zero has none.
    const hog = "#!/bin/sh\necho placed-ok\nhead -c 400000000 /dev/zero | tail > /dev/null\necho survived\n";
    const placed = ok(await ctl.place(n, makePackage(signer, { script: hog, memoryMb: 32 }).dir));
    const id = placed.instance_id as string;
    const row = await waitFor(
      async () => {
        const r = await rowOf(ctl, n, id);
        return r.state === "exited" ? r : undefined;
      },
      "the exit to be recorded",
      30_000,
    );
    expect(row.detail).toBe("killed by the kernel: over its memory limit of 32 MiB");
    const exit = n
      .events({ kind: "workload.exit" })
      .map((e) => e.payload as JsonObject)
      .find((p) => p.instance_id === id);
    expect(exit).toMatchObject({ reason: "memory_limit", memory_mb: 32 });
    expect(processesOf(id)).toEqual([]);
  });

  it("the same program under no memory limit is not reported as killed for memory", async () => {
    const { ctl, signer, node: n } = await node();
    const placed = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: "#!/bin/sh\nhead -c 40000000 /dev/zero | tail > /dev/null\nexit 0\n" }).dir,
      ),
    );
    const id = placed.instance_id as string;
    const row = await waitFor(
      async () => {
        const r = await rowOf(ctl, n, id);
        return r.state === "exited" ? r : undefined;
      },
      "the exit to be recorded",
      30_000,
    );
    expect(row).toMatchObject({ exit_code: 0, detail: "process exited" });
  });
});

describe("network none", () => {
  let server: Server | undefined;
  let accepted = 0;
  afterEach(() => server?.close());

  async function listener(): Promise<number> {
    accepted = 0;
    server = createServer((s) => {
      accepted++;
      s.destroy();
    });
    await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
    return (server.address() as { port: number }).port;
  }

  const dialler = (port: number) =>
    `#!/bin/bash\nif (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null; then echo connected; else echo blocked; fi\nexec sleep 300\n`;

  async function outputOf(ctl: TestController, n: NodeProcess, id: string): Promise<string> {
    return waitFor(async () => {
      const out = ok(await ctl.verb(n, "logs", { instance_id: id })).stdout as string;
      return out.includes("\n") ? out : undefined;
    }, "the agent's verdict");
  }

  it("a network none agent cannot connect to a listener on 127.0.0.1, while an egress one can", async () => {
    const port = await listener();
    const { ctl, signer, node: n } = await node();
    const none = ok(
      await ctl.place(n, makePackage(signer, { script: dialler(port), network: "none", name: "closed" }).dir, {
        name: "closed",
      }),
    );
    expect(await outputOf(ctl, n, none.instance_id as string)).toBe("blocked\n");
    expect(accepted).toBe(0);
    const egress = ok(
      await ctl.place(n, makePackage(signer, { script: dialler(port), network: "egress", name: "open" }).dir, {
        name: "open",
      }),
    );
    expect(await outputOf(ctl, n, egress.instance_id as string)).toBe("connected\n");
    // The agent's connect returns once the kernel has the handshake; this process's accept callback may run later.
    await waitFor(() => accepted === 1, "the listener to see the egress agent's connection", 30_000);
    expect(accepted).toBe(1);
  });

  it("without a network namespace the gate is fed egress, so a permit capping network at none refuses the package", async () => {
    const capped = [{ id: "none-only", actions: ["workload.*"], kinds: ["probe"], max_network: "none" as const }];
    const {
      ctl,
      signer,
      node: n,
    } = await node({ permits: capped, config: { confinement: { network_namespace: "off" } } });
    expect((await factsOf(ctl, n)).confinement).toMatchObject({ network_none: "not-enforced" });
    const r = await ctl.place(n, makePackage(signer, { network: "none" }).dir);
    expect(r).toMatchObject({ kind: "refused", code: "governance" });
    // The chained verdict shows what the gate was fed: the runtime's exposure, not the package's claim.
    const fed = (x: NodeProcess) =>
      x
        .events({ source: "gate", kind: "workload.load" })
        .map((e) => ((e.payload as JsonObject).workload as JsonObject).network);
    expect(fed(n)).toEqual(["egress"]);
    // The same permit on a node that enforces it admits the package.
    const enforced = await node({ permits: capped });
    ok(await enforced.ctl.place(enforced.node, makePackage(enforced.signer, { network: "none" }).dir));
    expect(fed(enforced.node)).toEqual(["none"]);
  });
});

describe("a node without cgroups (the process group only)", () => {
  const noCgroups = { config: { confinement: { cgroups: "off" } } };

  it("says so in its facts", async () => {
    const { ctl, node: n } = await node(noCgroups);
    expect(await factsOf(ctl, n)).toMatchObject({
      containment: "process-group",
      confinement: { kill: "process-group", memory_limit: null },
    });
  });

  it("an agent whose entry exits leaves no child behind", async () => {
    const { ctl, signer, node: n } = await node(noCgroups);
    const placed = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: "#!/bin/sh\nsleep 305 &\nsleep 306 &\necho placed-ok\nexit 0\n" }).dir,
      ),
    );
    const id = placed.instance_id as string;
    await waitFor(async () => (await rowOf(ctl, n, id)).state === "exited", "the exit to be recorded");
    await waitFor(() => processesOf(id).length === 0, "the children to be ended", 30_000);
  });

  it("kill -9 of the group leader ends what it left behind and records the exit", async () => {
    const { ctl, signer, node: n } = await node(noCgroups);
    const placed = ok(
      await ctl.place(n, makePackage(signer, { script: "#!/bin/sh\nsleep 307 &\necho placed-ok\nsleep 308\n" }).dir),
    );
    const id = placed.instance_id as string;
    await waitFor(() => processesOf(id).length >= 3, "the wrapper, the entry and its child");
    process.kill(placed.pid as number, "SIGKILL");
    const row = await waitFor(async () => {
      const r = await rowOf(ctl, n, id);
      return r.state === "exited" ? r : undefined;
    }, "the exit to be recorded");
    expect(row.detail).toContain("the group leader was killed");
    expect(processesOf(id)).toEqual([]);
  });
});

describe("who agents run as", () => {
  it("berth node init --agent-user writes it to node.json (creating an existing user is a no-op), and refuses a bad name", () => {
    const dir = join(tempDir(), "node");
    const out = JSON.parse(
      execFileSync(
        process.execPath,
        [MAIN, "node", "init", "--data-dir", dir, "--agent-user", "nobody", "--create-agent-user", "--json"],
        { encoding: "utf8" },
      ),
    );
    expect(out).toMatchObject({ agent_user: "nobody", allow_root_agents: false });
    expect(JSON.parse(readFileSync(join(dir, "node.json"), "utf8"))).toMatchObject({ agent_user: "nobody" });
    const bad = spawnSync(
      process.execPath,
      [MAIN, "node", "init", "--data-dir", join(tempDir(), "node"), "--agent-user", "Not A User"],
      { encoding: "utf8" },
    );
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("--agent-user");
  });

  it("a root daemon with no agent user and no allow_root_agents refuses to start agents, naming the setting", async () => {
    const { ctl, signer, node: n } = await node({ allowRootAgents: false });
    const r = await ctl.place(n, makePackage(signer).dir);
    expect(r).toMatchObject({ kind: "refused", code: "runtime" });
    expect(JSON.stringify(r)).toContain("agent_user");
    expect(processesWithEnv(`BERTH_NODE_ID=${n.nodeId}`)).toEqual([]);
  });

  it("a root daemon with agent_user runs the agent as that user, in a workspace it can write", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    // mkdtemp makes 0700 directories; the agent user must be able to pass through the test's temporary parent.
    const made = await Node.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      allowRootAgents: false,
      config: { agent_user: "nobody" },
    });
    nodeTags.push(made.nodeId.slice(0, 12));
    chmodSync(dirname(made.dataDir), 0o711);
    const placed = ok(
      await ctl.place(
        made,
        makePackage(signer, { script: '#!/bin/sh\necho written > "$HOME/mine" && echo placed-ok\nexec sleep 300\n' })
          .dir,
      ),
    );
    const id = placed.instance_id as string;
    // Judge the entry once it runs the package's program (`sleep`, after run.sh's exec), never merely "a process of
    // the instance that is not the leader": between the wrapper's fork and setpriv's setresuid that process is berth's
    // own launcher, still root, running none of the package's code (issue 33: the flake read exactly that window).
    const entry = await waitFor(
      () => processesOf(id).find((pid) => pid !== placed.pid && commOf(pid) === "sleep"),
      "the entry running its program",
    );
    expect(uidOf(entry)).toBe(65534);
    // Nothing of the instance but the wrapper (the group leader, berth's) is root once the entry runs.
    expect(processesOf(id).filter((pid) => pid !== placed.pid && uidOf(pid) === 0)).toEqual([]);
    expect(uidOf(placed.pid as number)).toBe(0);
    await waitFor(
      async () => (ok(await ctl.verb(made, "logs", { instance_id: id })).stdout as string).includes("placed-ok"),
      "the agent to write in its workspace",
    );
    // Issue 15: $HOME is the agent's workspace, per name outside the instance directory, given to the agent user.
    expect(readFileSync(join(made.dataDir, "workspaces", "probe", "mine"), "utf8")).toBe("written\n");
  });
});
