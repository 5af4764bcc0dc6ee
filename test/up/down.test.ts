/**
 * `berth up --detach` and `berth down` (issue 13): down stops what up started — the agents through berth, an instance
 * placed by hand on the local nodes, then the daemons — judged from /proc; twice is harmless; with nothing up it says
 * so. A foreground `berth up` in another terminal is asked to stop itself.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";

const home = mkdtempSync(join(tmpdir(), "berth-down-"));
const env = { BERTH_HOME: home };
afterEach(() => killAll());
afterAll(() => {
  for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

const berth = (...args: string[]) => runNode([berthBin(), ...args, "--data-dir", home], { env });

interface DownDoc {
  ok: boolean;
  was_up: boolean;
  reason?: string;
  stopped_agents?: string[];
  stopped_instances?: Array<{ name: string }>;
  stopped_nodes?: string[];
  foreground_up?: number | null;
}

async function down(): Promise<{ code: number | null; doc: DownDoc; stderr: string }> {
  const r = await berth("down", "--json");
  return { code: r.code, doc: JSON.parse(r.stdout) as DownDoc, stderr: r.stderr };
}

describe("berth down", () => {
  it("with nothing ever up it says so and succeeds", async () => {
    const empty = mkdtempSync(join(tmpdir(), "berth-down-empty-"));
    try {
      const r = await runNode([berthBin(), "down", "--data-dir", empty], { env: { BERTH_HOME: empty } });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("nothing to stop");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("stops what berth up --detach left running, instances placed by hand included, and a second down is harmless", async () => {
    const upped = await runNode([berthBin(), "up", "--detach", "--no-kubernetes", "--data-dir", home], { env });
    expect(upped.code, upped.stderr).toBe(0);
    expect(upped.stdout).toContain("`berth down` stops them all");
    expect(upped.stdout).not.toContain("press Ctrl-C");
    // berth up itself is gone; its daemons and agents are not.
    expect(processesUnder(home).length).toBeGreaterThanOrEqual(5);

    const again = await runNode([berthBin(), "up", "--detach", "--no-kubernetes", "--data-dir", home], { env });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("berth is already up");

    const placed = await berth("place", join(home, "up", "packages", "heartbeat"), "--name", "by-hand", "--json");
    expect(placed.code, placed.stderr || placed.stdout).toBe(0);

    const first = await down();
    expect(first.code, first.stderr).toBe(0);
    expect(first.doc).toMatchObject({ ok: true, was_up: true });
    expect(first.doc.stopped_agents?.sort()).toEqual(["heartbeat", "scout"]);
    expect(first.doc.stopped_instances?.map((i) => i.name)).toEqual(["by-hand"]);
    expect(first.doc.stopped_nodes?.sort()).toEqual(["homelab", "pi-garage", "pi-kitchen"]);
    expect(processesUnder(home)).toEqual([]);

    const second = await down();
    expect(second.code).toBe(0);
    expect(second.doc).toMatchObject({ ok: true, was_up: false, reason: "no node daemon of berth up is running" });
  }, 300_000);

  it("reports only what it stopped this time, not an agent or an instance stopped before it ran", async () => {
    const upped = await runNode([berthBin(), "up", "--detach", "--no-kubernetes", "--data-dir", home], { env });
    expect(upped.code, upped.stderr).toBe(0);
    // Stopped by their user long before: an agent of berth up's, and an instance placed by hand.
    const scout = await berth("agent", "stop", "scout", "--json");
    expect(scout.code, scout.stderr).toBe(0);
    const placed = await berth(
      "place",
      join(home, "up", "packages", "heartbeat"),
      "--name",
      "stopped-long-ago",
      "--json",
    );
    expect(placed.code, placed.stderr || placed.stdout).toBe(0);
    const instance = String((JSON.parse(placed.stdout) as { placed: { instance_id: string } }).placed.instance_id);
    expect((await berth("instance", "stop", instance, "--json")).code).toBe(0);

    const text = await berth("down");
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("stopped agent heartbeat");
    expect(text.stdout, "scout was stopped before").not.toMatch(/scout/);
    expect(text.stdout, "the hand-placed instance was stopped before").not.toContain(instance);
    expect(processesUnder(home)).toEqual([]);

    const upAgain = await runNode([berthBin(), "up", "--detach", "--no-kubernetes", "--data-dir", home], { env });
    expect(upAgain.code, upAgain.stderr).toBe(0);
    expect((await berth("agent", "stop", "scout", "--json")).code).toBe(0);
    const doc = await down();
    expect(doc.code, doc.stderr).toBe(0);
    expect(doc.doc.stopped_agents, "only heartbeat ran").toEqual(["heartbeat"]);
    expect(doc.doc.stopped_instances, "nothing placed by hand ran").toEqual([]);
    expect(doc.doc.stopped_nodes?.sort()).toEqual(["homelab", "pi-garage", "pi-kitchen"]);
    expect(processesUnder(home)).toEqual([]);
  }, 400_000);

  it("asks a berth up running in the foreground elsewhere to stop, and it stops everything", async () => {
    const foreground = spawnNode([berthBin(), "up", "--no-kubernetes", "--port", "0", "--data-dir", home], { env });
    await foreground.waitForOutput("ready; press Ctrl-C", 180_000);
    const r = await down();
    expect(r.code, r.stderr).toBe(0);
    expect(r.doc.foreground_up).toBe(foreground.child.pid);
    expect((await foreground.exited()).code).toBe(0);
    expect(foreground.output()).toContain("stopped agent heartbeat");
    expect(processesUnder(home)).toEqual([]);
  }, 300_000);
});
