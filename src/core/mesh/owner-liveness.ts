/**
 * Whether the owner of a controller-store lease is provably gone (issue 21, src/store/README.md "Ownership").
 * Crash recovery may touch a decision only when this says `gone`: a live process's decision is never interrupted,
 * settled or released by another (cases 1, 2 and 6).
 *
 * Pure: the shell reads the facts (this host's name and boot id, the start time of the owner's pid from
 * /proc/<pid>/stat when the owner is on this host and boot, the clock) and passes them in.
 *
 * | owner                                   | judged                                       |
 * |-----------------------------------------|----------------------------------------------|
 * | none recorded (a store from before v3)  | gone (nothing can prove it alive)            |
 * | released its lease (closed cleanly)     | gone                                         |
 * | same host and boot, pid not running     | gone                                         |
 * | same host and boot, pid start differs   | gone (the pid was reused)                    |
 * | same host and boot, same pid and start  | alive                                        |
 * | same host, other boot                   | gone (the machine restarted since)           |
 * | other host, renewed within its TTL      | alive (cannot be proved gone from here)      |
 * | other host, not renewed past its TTL    | gone (lease expired)                         |
 */

export interface OwnerLease {
  readonly owner_id: string;
  readonly epoch: number;
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot): with the pid and the boot, the identity of a process. */
  readonly start_time: string;
  readonly boot_id: string;
  readonly host: string;
  readonly renewed_ms: number;
  readonly ttl_ms: number;
  readonly released_ms: number | null;
}

export interface HereFacts {
  readonly host: string;
  readonly boot_id: string;
  readonly now_ms: number;
  /** The start time of the owner's pid on this machine now; null when no such process runs. */
  readonly pid_start_time: string | null;
}

export type OwnerVerdict =
  | { readonly alive: true; readonly why: string }
  | { readonly alive: false; readonly why: string };

/** Whether `pid_start_time` must be read for this owner (same host and boot); otherwise the probe is not needed. */
export function needsPidProbe(owner: OwnerLease, here: Pick<HereFacts, "host" | "boot_id">): boolean {
  return owner.released_ms === null && owner.host === here.host && owner.boot_id === here.boot_id;
}

export function judgeOwner(owner: OwnerLease | null, here: HereFacts): OwnerVerdict {
  if (owner === null) return { alive: false, why: "no owner is recorded for it (written before owners were recorded)" };
  const who = `pid ${owner.pid} on ${owner.host}`;
  if (owner.released_ms !== null) return { alive: false, why: `its owner (${who}) released its lease` };
  if (owner.host === here.host) {
    if (owner.boot_id !== here.boot_id)
      return { alive: false, why: `its owner (${who}) ran before this machine restarted` };
    if (here.pid_start_time === null) return { alive: false, why: `its owner (${who}) is not running` };
    if (here.pid_start_time !== owner.start_time)
      return { alive: false, why: `its owner (${who}) is gone; the pid now belongs to another process` };
    return { alive: true, why: `its owner (${who}) is running` };
  }
  const silentMs = here.now_ms - owner.renewed_ms;
  if (silentMs > owner.ttl_ms)
    return {
      alive: false,
      why: `its owner (${who}) has not renewed its lease for ${silentMs} ms (TTL ${owner.ttl_ms} ms)`,
    };
  return { alive: true, why: `its owner (${who}) renewed its lease ${silentMs} ms ago (TTL ${owner.ttl_ms} ms)` };
}
