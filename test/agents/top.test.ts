/**
 * `berth top` (issue 36) with a real node daemon: an agent that spins shows CPU above 0 and memory above 0, locally and
 * through a `berth serve`, judged against the instance's own cgroup files and /proc read directly here.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { clientHome, controllerHome, run, serve } from "../cli/remote-support.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** Every directory named `name` under /sys/fs/cgroup (the instance's cgroup in each hierarchy the node used). */
function cgroupDirs(name: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 10) return;
    let entries: string[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      return;
    }
    for (const e of entries) {
      if (e === name) out.push(join(dir, e));
      else walk(join(dir, e), depth + 1);
    }
  };
  walk("/sys/fs/cgroup", 0);
  return out;
}

const readNumber = (path: string): number | null =>
  existsSync(path) ? Number(readFileSync(path, "utf8").trim()) : null;

/** The CPU time the kernel counted for the instance, read here: v2 cpu.stat, else its members' /proc times (what the node sums on v1). */
function cpuSecondsNow(dirs: readonly string[]): number {
  const v2 = dirs.find((d) => existsSync(join(d, "cpu.stat")));
  if (v2) return Number(/^usage_usec (\d+)$/m.exec(readFileSync(join(v2, "cpu.stat"), "utf8"))?.[1] ?? 0) / 1e6;
  const pids = new Set(
    dirs.flatMap((d) =>
      existsSync(join(d, "cgroup.procs"))
        ? readFileSync(join(d, "cgroup.procs"), "utf8").split("\n").filter(Boolean)
        : [],
    ),
  );
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
      ticks += [11, 12, 13, 14].reduce((s, i) => s + Number(fields[i]), 0);
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

describe("berth top", { timeout: 150_000 }, () => {
  it("shows a spinning agent's CPU and memory from its cgroup, the same way locally and through a server", async () => {
    requireBuild();
    const { home, env } = await controllerHome("#!/bin/sh\nwhile :; do :; done\n");
    const listed = await run(env, ["instances", "--json"]);
    const instanceId = String(((listed.doc.placements as JsonObject[])[0] as JsonObject).instance_id);
    const dirs = cgroupDirs(instanceId);
    expect(dirs.length, "the node made cgroups for the instance").toBeGreaterThan(0);
    const memoryFile =
      dirs.map((d) => join(d, "memory.usage_in_bytes")).find(existsSync) ??
      dirs.map((d) => join(d, "memory.current")).find(existsSync);

    const local = await run(env, ["top", "--json"]);
    expect(local.code, local.stderr).toBe(0);
    const row = (local.doc.agents as JsonObject[])[0] as JsonObject;
    expect(row).toMatchObject({ agent: "scout", target: "mesh", instance_id: instanceId });
    expect(Number(row.cpu_percent)).toBeGreaterThan(0);
    expect(Number(row.memory_bytes)).toBeGreaterThan(0);
    // Read after berth's reading: the kernel's counter can only have grown since.
    expect(Number(row.cpu_seconds_total)).toBeGreaterThan(0);
    expect(Number(row.cpu_seconds_total)).toBeLessThanOrEqual(cpuSecondsNow(dirs) + 0.011);
    if (memoryFile) expect(readNumber(memoryFile)).toBeGreaterThan(0);

    const human = await run(env, ["top"]);
    expect(human.stdout).toMatch(/AGENT\s+TARGET\s+NODE\s+CPU\s+MEM/);
    expect(human.stdout).toMatch(/scout\s+mesh\s+[0-9a-f]{12}\s+\d+\.\d%\s+\d+(\.\d)?(B|Ki|Mi|Gi)/);

    const { url } = await serve(home);
    const client = clientHome(home);
    expect(
      (
        await run(client.env, [
          "context",
          "add",
          "lab",
          "--server",
          url,
          "--token-file",
          client.tokenFile,
          "--use",
          "--json",
        ])
      ).code,
    ).toBe(0);
    const remote = await run(client.env, ["top", "--json"]);
    expect(remote.code, remote.stderr).toBe(0);
    const remoteRow = (remote.doc.agents as JsonObject[])[0] as JsonObject;
    expect(remoteRow).toMatchObject({ agent: "scout", target: "mesh", instance_id: instanceId });
    expect(Number(remoteRow.cpu_percent)).toBeGreaterThan(0);
    expect(Number(remoteRow.memory_bytes)).toBeGreaterThan(0);
  });
});
