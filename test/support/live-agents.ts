/**
 * The OS-level truth the process tests judge by: live (not zombie) processes a node started for an agent, found in
 * /proc by the environment the node gives every instance (BERTH_NAME, BERTH_INSTANCE_ID, BERTH_NODE_ID).
 *
 * Read afresh on every call, because a test asks at one instant and must not miss a copy. The fault campaign keeps
 * its own scan (test/campaign/observe.ts `liveAgentProcesses`), which reads each pid's environment once so a sample
 * every 100 ms stays cheap for hours; its price is that a pid judged "not an agent" for 2 s is not read again, which
 * a one-off "no copy is left" must not pay.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface LiveAgent {
  readonly pid: number;
  readonly instance: string | undefined;
  readonly node: string | undefined;
}

function envValue(env: readonly string[], key: string): string | undefined {
  return env.find((e) => e.startsWith(`${key}=`))?.slice(key.length + 1);
}

/** Live processes whose environment holds `needle`, with that environment. */
function liveWithEnv(needle: string): Array<{ pid: number; env: string[] }> {
  const found: Array<{ pid: number; env: string[] }> = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const env = readFileSync(`/proc/${p}/environ`, "utf8").split("\0");
      if (env.includes(needle)) found.push({ pid: Number(p), env });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Pids of live processes whose environment holds `needle` (e.g. `BERTH_DECISION_ID=<id>`). */
export function processesWithEnv(needle: string): number[] {
  return liveWithEnv(needle).map((p) => p.pid);
}

/** Every live process carrying BERTH_NAME=`name` (an instance is a process group, often two pids). */
export function liveAgents(name: string): LiveAgent[] {
  return liveWithEnv(`BERTH_NAME=${name}`).map(({ pid, env }) => ({
    pid,
    instance: envValue(env, "BERTH_INSTANCE_ID"),
    node: envValue(env, "BERTH_NODE_ID"),
  }));
}

/** Distinct instance ids of `name`'s live processes, sorted. */
export function liveInstances(name: string): string[] {
  const ids = new Set<string>();
  for (const a of liveAgents(name)) if (a.instance !== undefined) ids.add(a.instance);
  return [...ids].sort();
}
