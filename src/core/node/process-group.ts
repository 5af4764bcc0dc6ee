/**
 * Is an instance alive? (issue 21, cases 4 and 5): an instance is alive while any process of its process group is,
 * not only while its group leader (berth's sh wrapper) is. Pure: the shell scans /proc and passes what it saw.
 *
 * Pid reuse cannot fool it: Linux never hands out a pid equal to the id of a process group that still has a member,
 * so while any member lives the pgid is ours; once the group is empty a new process may get the old leader's pid
 * and lead a new group of that id. That process (pid = pgid) then has a start time other than the one recorded,
 * and the group is judged not ours. Zombies are not alive (they run nothing; their parent has yet to reap them).
 */

/** One /proc/<pid>/stat row: pid, process group, state letter and start time (field 22, clock ticks since boot). */
export interface ProcRow {
  readonly pid: number;
  readonly pgrp: number;
  readonly state: string;
  readonly startMarker: string;
}

export interface GroupIdentity {
  /** The leader's pid, which is the group's id. */
  readonly pid: number;
  readonly start_marker: string;
}

/** The live members of the instance's group (the leader included if it still lives), or `[]`. */
export function groupMembers(rows: readonly ProcRow[], identity: GroupIdentity): ProcRow[] {
  const holder = rows.find((r) => r.pid === identity.pid);
  // The pid of the leader now belongs to another process: the group we recorded is gone and its id reused.
  if (holder !== undefined && holder.startMarker !== identity.start_marker) return [];
  return rows.filter((r) => r.pgrp === identity.pid && r.state !== "Z" && r.state !== "X");
}
