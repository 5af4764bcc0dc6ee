/**
 * The outside view the campaign judges by: live agent processes from /proc (by the BERTH_NAME / BERTH_INSTANCE_ID
 * environment the node gives every instance, filtered on the world's name prefix), and the controller's placements
 * from its store opened read-only.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/sqlite.js";

export interface LiveProcess {
  readonly pid: number;
  readonly pgid: number;
  readonly name: string;
  readonly instance: string;
}

/** Live (non-zombie) processes of agents whose name starts with `prefix`. */
export function liveAgentProcesses(prefix: string): LiveProcess[] {
  const found: LiveProcess[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || fields[0] === "X") continue;
      const env = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      const name = env.find((e) => e.startsWith("BERTH_NAME="))?.slice("BERTH_NAME=".length);
      if (name === undefined || !name.startsWith(prefix)) continue;
      const instance = env.find((e) => e.startsWith("BERTH_INSTANCE_ID="))?.slice("BERTH_INSTANCE_ID=".length);
      if (instance === undefined) continue;
      found.push({ pid: Number(entry), pgid: Number(fields[2]), name, instance });
    } catch {
      // ended while we looked, or not ours to read
    }
  }
  return found;
}

/** Distinct live instance ids per agent name. */
export function instancesByName(live: readonly LiveProcess[]): Map<string, Set<string>> {
  const by = new Map<string, Set<string>>();
  for (const p of live) {
    const set = by.get(p.name) ?? new Set<string>();
    set.add(p.instance);
    by.set(p.name, set);
  }
  return by;
}

/** The controller's placements (instance id → name), read-only; null while the store cannot be read. */
export function recordedPlacements(home: string): Map<string, string> | null {
  try {
    const db = openDatabase(join(home, "controller.db"), { readonly: true });
    try {
      const rows = db.prepare("SELECT instance_id, name FROM mesh_placements").all() as Array<{ instance_id: string; name: string }>;
      return new Map(rows.map((r) => [r.instance_id, r.name]));
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}
