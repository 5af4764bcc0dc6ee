/**
 * Issue 33 items 11 and 12, with real node daemons and real agents, judged from /proc: every agent runs with
 * no_new_privs (`NoNewPrivs: 1`), whoever it runs as; and a root agent that tries to leave its cgroup and its session
 * is still ended by unload (before: it wrote its pid into the root cgroup, called setsid, and outlived the unload).
 */
import { chmodSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { cleanupConfined, confinedNode as node, factsOf } from "../mesh/confined-node.js";
import { makePackage, ok, requireBuild, waitFor } from "../mesh/harness.js";
import { processesWithEnv } from "../support/live-agents.js";

vi.setConfig({ testTimeout: 120_000 });
beforeAll(requireBuild);

const strays: number[] = [];
afterEach(async () => {
  await cleanupConfined();
  // A process that escaped (on a build without the fix) must not outlive the test either.
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone: what the test wants
    }
  }
});

const statusOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
};
const field = (pid: number, name: string) => new RegExp(`^${name}:\\s+(\\S+)`, "m").exec(statusOf(pid) ?? "")?.[1];
const cmdlineOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
};
/** Live (not zombie) processes whose command line is exactly `cmd`. */
const processesRunning = (cmd: string) =>
  readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((pid) => cmdlineOf(pid) === cmd && field(pid, "State") !== "Z");

describe.runIf(process.getuid?.() === 0)("agent privileges (a root daemon)", () => {
  it("every agent runs with no_new_privs: a root agent and one run as its agent user, judged from /proc/PID/status", async () => {
    const root = await node();
    const mark = 2000 + Math.floor(Math.random() * 900);
    const placed = ok(
      await root.ctl.place(root.node, makePackage(root.signer, { script: `#!/bin/sh\nexec sleep ${mark}\n` }).dir),
    );
    // The entry once it runs the package's program (never berth's launcher before its exec, see confinement.test.ts).
    const entry = await waitFor(
      () =>
        processesWithEnv(`BERTH_INSTANCE_ID=${placed.instance_id as string}`).find(
          (pid) => cmdlineOf(pid) === `sleep ${mark}`,
        ),
      "the root agent's entry",
    );
    expect(field(entry, "Uid")).toBe("0");
    expect(field(entry, "NoNewPrivs")).toBe("1");

    const user = await node({ allowRootAgents: false, config: { agent_user: "nobody" } });
    chmodSync(dirname(user.node.dataDir), 0o711);
    const placedUser = ok(
      await user.ctl.place(user.node, makePackage(user.signer, { script: `#!/bin/sh\nexec sleep ${mark + 1}\n` }).dir),
    );
    const entryUser = await waitFor(
      () =>
        processesWithEnv(`BERTH_INSTANCE_ID=${placedUser.instance_id as string}`).find(
          (pid) => cmdlineOf(pid) === `sleep ${mark + 1}`,
        ),
      "the agent user's entry",
    );
    expect(field(entryUser, "Uid")).toBe("65534");
    expect(field(entryUser, "NoNewPrivs")).toBe("1");
    expect((await factsOf(root.ctl, root.node)).confinement).toMatchObject({ no_new_privs: "enforced" });
  });

  it("a root agent that writes itself into the root cgroups and calls setsid is gone after unload", async () => {
    const { ctl, signer, node: n } = await node();
    const mark = 3000 + Math.floor(Math.random() * 900);
    // The escape: every root cgroup.procs this host has (v2 and each v1 hierarchy), then a new session, re-parented.
    const breakOut = `for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; do echo $$ > "$f" 2>/dev/null; done; exec sleep ${mark}`;
    const script = `#!/bin/sh\n( setsid sh -c '${breakOut}' & )\necho placed-ok\nexec sleep 300\n`;
    const placed = ok(await ctl.place(n, makePackage(signer, { script }).dir));
    const escapee = await waitFor(() => processesRunning(`sleep ${mark}`)[0], "the escaping process");
    strays.push(escapee);
    ok(await ctl.verb(n, "unload", { instance_id: placed.instance_id as string }));
    // Judged from /proc: the process the agent started to escape is gone (the kernel may take a moment to reap it).
    await waitFor(
      () => processesRunning(`sleep ${mark}`).length === 0,
      "the escaped process to be gone after unload",
      30_000,
    );
    expect(processesRunning(`sleep ${mark}`)).toEqual([]);
    expect((await factsOf(ctl, n)).confinement).toMatchObject({ root_agents: "held-in-cgroup" });
  });
});
