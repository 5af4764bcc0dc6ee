/**
 * Test support: the cgroup directories a node daemon made on this host (`berth-<node id, 12 hex>` below the daemon's
 * own cgroup in each hierarchy, src/mesh/node/cgroup.ts), removed after a test killed the daemon and its instances.
 * Only empty directories can go; the kernel refuses the others.
 */
import { existsSync, readdirSync, rmdirSync } from "node:fs";
import { join } from "node:path";

const ROOTS = ["/sys/fs/cgroup"];

function cgroupDirsOf(tag: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 8) return;
    let names: string[] = [];
    try {
      names = readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      return;
    }
    for (const n of names) {
      if (n === `berth-${tag}`) out.push(join(dir, n));
      else if (!n.startsWith("berth-")) walk(join(dir, n), depth + 1);
    }
  };
  for (const root of ROOTS) if (existsSync(root)) walk(root, 0);
  return out;
}

function removeTree(dir: string): void {
  try {
    for (const d of readdirSync(dir, { withFileTypes: true })) if (d.isDirectory()) removeTree(join(dir, d.name));
    rmdirSync(dir);
  } catch {
    // still holds a process, or already gone
  }
}

/** `tagOrNodeId`: the node id (its first 12 hex name the directory) or the 12 hex themselves. */
export function removeNodeCgroups(tagOrNodeId: string): void {
  for (const dir of cgroupDirsOf(tagOrNodeId.slice(0, 12))) removeTree(dir);
}
