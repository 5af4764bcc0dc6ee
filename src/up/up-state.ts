/**
 * What `berth up` started, kept in `<home>/up/up.json` so that `berth down` (and the next `berth up`) can find it:
 * each node's directory and port, the daemon's process identity, the agents it deployed, and the `berth up` process
 * itself while it runs in the foreground.
 *
 * A process is named by pid, host boot id and the kernel's start time together (the node runtime's `sameProcess`),
 * so a pid the kernel recycled for something else after a crash or a reboot is never signalled.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { hostBootId, type ProcessIdentity, procStat, sameProcess } from "../mesh/node/runtime.js";

const IdentitySchema = z.object({
  pid: z.number().int().positive(),
  host_boot_id: z.string(),
  start_marker: z.string().min(1),
});

const UpNodeSchema = z.object({
  name: z.string(),
  dir: z.string(),
  port: z.number().int().min(1).max(65535),
  node_id: z.string(),
  /** The running daemon, or null once it was stopped (absent in state files older than `berth down`). */
  daemon: IdentitySchema.nullable().default(null),
});

export const UpStateSchema = z.object({
  nodes: z.array(UpNodeSchema),
  /** The agents `berth up` deployed (the samples), stopped by name before anything else. */
  agents: z.array(z.string()).default([]),
  /** The `berth up` process while it stays in the foreground; null when detached or stopped. */
  up: IdentitySchema.nullable().default(null),
  detached: z.boolean().default(false),
});
export type UpState = z.infer<typeof UpStateSchema>;
export type UpNode = UpState["nodes"][number];

export const upStatePath = (home: string) => join(home, "up", "up.json");

/** The state of the last `berth up` in `home`, or undefined when there never was one. */
export function readUpState(home: string): UpState | undefined {
  const path = upStatePath(home);
  if (!existsSync(path)) return undefined;
  const parsed = UpStateSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success)
    throw new Error(
      `${path} is not a berth up state file (${parsed.error.issues[0]?.path.join(".") ?? "?"}: ${parsed.error.issues[0]?.message ?? "?"})`,
    );
  return parsed.data;
}

/** Written whole to a temporary file and renamed over the old one, so a reader never sees half a state. */
export function writeUpState(home: string, state: UpState): void {
  const path = upStatePath(home);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** The identity of a process that exists now (undefined when it is already gone). */
export function identityOf(pid: number): ProcessIdentity | undefined {
  const stat = procStat(pid);
  return stat ? { pid, host_boot_id: hostBootId(), start_marker: stat.startMarker } : undefined;
}

export const isAlive = (identity: ProcessIdentity | null): identity is ProcessIdentity =>
  identity !== null && sameProcess(identity);

/** The nodes whose recorded daemon is still the same running process. */
export function liveDaemons(state: UpState): UpNode[] {
  return state.nodes.filter((n) => isAlive(n.daemon));
}

/** The `berth up` process still in the foreground somewhere (another terminal), if any and if it is not this one. */
export function liveForegroundUp(state: UpState): ProcessIdentity | undefined {
  return isAlive(state.up) && state.up.pid !== process.pid ? state.up : undefined;
}
