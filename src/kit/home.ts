/**
 * Where berth keeps its state when nobody says: `$BERTH_HOME`, else `~/.berth` — except for root whose `~` other users
 * cannot pass through (Debian's /root is 0700). A root `berth up` runs its agents as `nobody` (issue 33 item 11), and
 * an agent must pass through every directory above its workspace, so such a home could only be refused. root's state
 * then lives in `/var/lib/berth`, where system services keep theirs; an existing `/root/.berth` is still used.
 * Every verb reads the home through this one rule, so `berth up` and a read verb in a second terminal agree.
 */
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export const ROOT_BERTH_HOME = "/var/lib/berth";

export interface HomeFacts {
  readonly env: NodeJS.ProcessEnv;
  /** The user's home directory (`$HOME`, else the password database's). */
  readonly userHome: string;
  readonly uid: number;
}

export function defaultBerthHome(facts: HomeFacts = currentHomeFacts()): string {
  const explicit = facts.env.BERTH_HOME;
  if (explicit !== undefined && explicit !== "") return explicit;
  const personal = join(facts.userHome, ".berth");
  if (facts.uid !== 0 || existsSync(personal) || othersCanPassThrough(facts.userHome)) return personal;
  return ROOT_BERTH_HOME;
}

export function currentHomeFacts(): HomeFacts {
  return { env: process.env, userHome: process.env.HOME ?? homedir(), uid: process.getuid?.() ?? -1 };
}

/**
 * The first of `dir` and the directories above it that a user other than the owner cannot pass through (no x bit for
 * others), with its mode; null when every one is passable. A directory that cannot be read throws, as `statSync` does.
 * Shared with `berth up`, which refuses a home its agents' user could not reach (src/up/local-mesh.ts).
 */
export function firstClosedDirectory(dir: string): { readonly dir: string; readonly mode: number } | null {
  for (let d = dir; ; d = dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) return { dir: d, mode };
    if (d === dirname(d)) return null;
  }
}

function othersCanPassThrough(dir: string): boolean {
  try {
    return firstClosedDirectory(dir) === null;
  } catch {
    return false;
  }
}
