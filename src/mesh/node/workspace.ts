/**
 * The agent's workspace on a node (issue 15): its `$HOME`, kept per placement name in `<data dir>/workspaces/<name>/`
 * (mode 0700), outside the instance directory. It survives restarts (supervised or operator), `berth agent replace`
 * and a redeploy of the same name onto this node, because only the instance directory (the package's files, tmp/,
 * logs) is removed with an instance. It is removed only by an unload that asks for it (`purge`, chained with the
 * unload: `berth agent purge NAME`, `--purge`). It never follows an agent to another node.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { NAME_PATTERN } from "../../core/protocol/bodies.js";

export function workspaceDir(dataDir: string, name: string): string {
  // The name was validated at the edge (NAME_PATTERN); checked again because it becomes a path component.
  if (!NAME_PATTERN.test(name)) throw new Error(`workspace name ${JSON.stringify(name)} is not a placement name`);
  return join(dataDir, "workspaces", name);
}

/**
 * The workspace, created on first use. When agents run as an unprivileged user (confine.ts), the workspace is given
 * to that user and `workspaces/` gets search permission only, as the runtime does for the instances' directories.
 */
export function ensureWorkspace(
  dataDir: string,
  name: string,
  owner: { readonly uid: number; readonly gid: number } | null = null,
): string {
  const dir = workspaceDir(dataDir, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (owner !== null) {
    chmodSync(join(dataDir, "workspaces"), 0o711);
    chownSync(dir, owner.uid, owner.gid);
  }
  return dir;
}

/** Removes the workspace; says whether there was one. */
export function purgeWorkspace(dataDir: string, name: string): boolean {
  const dir = workspaceDir(dataDir, name);
  const existed = existsSync(dir);
  rmSync(dir, { recursive: true, force: true });
  return existed;
}
