/**
 * `berth up` end to end: real node daemons, real agent processes, Ctrl-C, and a second run that reuses the state.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";

const home = mkdtempSync(join(tmpdir(), "berth-up-"));
afterEach(() => killAll());
afterAll(() => {
  for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

async function agentsJson(): Promise<Array<{ name: string; state: string; instance?: string | null }>> {
  const r = await runNode([berthBin(), "agents", "--json", "--data-dir", home], { env: { BERTH_HOME: home } });
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { agents: Array<{ name: string; state: string; instance?: string | null }> }).agents;
}

/** Issue 33 item 11: the uids of every live process whose environment names the agent (its wrapper, its entry …). */
function uidsOfAgent(name: string): number[] {
  const uids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`BERTH_NAME=${name}`)) continue;
      uids.push(Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1]));
    } catch {
      // ended while we looked
    }
  }
  return uids;
}

async function upUntilReady() {
  const p = spawnNode([berthBin(), "up", "--data-dir", home], { env: { BERTH_HOME: home } });
  await p.waitForOutput("ready; press Ctrl-C", 120_000);
  return p;
}

describe("berth up", () => {
  it("starts three nodes and the sample agents once, stops everything on Ctrl-C, and a second run reuses the state", async () => {
    const first = await upUntilReady();
    expect(first.output()).toMatch(/node pi-kitchen +pi5/);
    if (process.getuid?.() === 0) {
      // Issue 33 item 11: berth up as root runs its agents as nobody, and says so on its own output. Judged from /proc:
      // the wrapper (berth's, the group leader) is root; the agent's own process is 65534 once setpriv dropped it.
      expect(first.output()).toMatch(/agents +run as nobody, not root/);
      for (const name of ["heartbeat", "scout"]) {
        // 30 s: the drop comes after the agent's start, its cgroup join and setpriv, each slow on a loaded machine.
        const deadline = Date.now() + 30_000;
        while (!uidsOfAgent(name).includes(65534) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(uidsOfAgent(name), name).toContain(65534);
      }
    }
    // The controller as a service: the API answers with the token berth up created, and lists the same agents.
    const dashboard = /dashboard: (http:\/\/127\.0\.0\.1:\d+)\/#token=([A-Za-z0-9_-]+)/.exec(first.output());
    expect(dashboard, first.output()).not.toBeNull();
    const [, base, token] = dashboard as RegExpExecArray;
    const api = await fetch(`${base}/api/v1/agents`, { headers: { authorization: `Bearer ${token}` } });
    expect(api.status).toBe(200);
    const listed = (await api.json()) as { agents: Array<{ name: string; state: string }> };
    expect(listed.agents.map((a) => `${a.name}:${a.state}`).sort()).toEqual(["heartbeat:running", "scout:running"]);
    expect((await fetch(`${base}/api/v1/agents`)).status).toBe(401);
    const agents = await agentsJson();
    expect(agents.map((a) => a.name).sort()).toEqual(["heartbeat", "scout"]);
    expect(agents.every((a) => a.state === "running")).toBe(true);
    // Deploying a sample again while it runs is a no-op: still exactly one instance per agent.
    const again = await runNode(
      [berthBin(), "deploy", join(home, "up", "agents", "heartbeat.json"), "--json", "--data-dir", home],
      { env: { BERTH_HOME: home } },
    );
    expect(again.code, again.stderr).toBe(0);
    const instances = await runNode([berthBin(), "instances", "--json", "--data-dir", home], {
      env: { BERTH_HOME: home },
    });
    const placedOn = (JSON.parse(instances.stdout) as { placements: Array<{ node_id: string }> }).placements.map(
      (p) => p.node_id,
    );
    expect(placedOn).toHaveLength(2);
    expect(
      new Set(placedOn).size,
      "the two agents share the equal nodes (issue 16: spread counts what is placed)",
    ).toBe(2);

    first.child.kill("SIGINT");
    const exit = await first.exited();
    expect(exit.code, first.errors()).toBe(0);
    expect(first.output()).toContain("stopped");
    expect(processesUnder(home)).toEqual([]);
    await expect(fetch(`${base}/api/v1/health`)).rejects.toThrow();

    const second = await upUntilReady();
    const after = await agentsJson();
    expect(after.map((a) => a.name).sort()).toEqual(["heartbeat", "scout"]);
    expect(after.every((a) => a.state === "running")).toBe(true);
    const placements = await runNode([berthBin(), "instances", "--json", "--data-dir", home], {
      env: { BERTH_HOME: home },
    });
    expect((JSON.parse(placements.stdout) as { placements: unknown[] }).placements).toHaveLength(2);
    // The reader of berth up's output goes away first (a crashed script, a closed terminal pipe): its next line meets
    // a closed pipe, and it still stops everything it started.
    second.child.stdout?.destroy();
    second.child.kill("SIGINT");
    expect((await second.exited()).code).toBe(0);
    expect(processesUnder(home)).toEqual([]);
  }, 300_000);
});
