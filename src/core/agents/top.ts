/**
 * `berth top` (issue 36): each running instance's CPU and memory from two readings of its node's status. A node reports
 * cumulative CPU time (its cgroup's counter) and memory in use; the CPU share is the time used between two readings
 * over the wall time between them, so one reading alone shows memory and no CPU figure yet. Pure: the shell asks.
 */

/** What a node said of one running instance (the `usage` of its status row). */
export interface UsageReading {
  readonly cpu_usec: number;
  readonly memory_bytes: number;
  readonly sampled_ms: number;
}

export interface TopInput {
  readonly instance_id: string;
  /** The agent's name where berth deployed it, else the placement's name. */
  readonly agent: string;
  readonly target: string;
  readonly node: string;
  readonly usage: UsageReading | null;
}

export interface TopRow {
  readonly agent: string;
  readonly instance_id: string;
  readonly target: string;
  readonly node: string;
  /** Percent of one core over the last interval (200 = two cores busy); null until a second reading. */
  readonly cpu_percent: number | null;
  readonly cpu_seconds_total: number | null;
  readonly memory_bytes: number | null;
}

/** CPU share between two readings of the same instance; null when there is no earlier one or the counter went back (a restart). */
export function cpuPercent(before: UsageReading | undefined, now: UsageReading): number | null {
  if (!before) return null;
  const wallUsec = (now.sampled_ms - before.sampled_ms) * 1000;
  const used = now.cpu_usec - before.cpu_usec;
  if (wallUsec <= 0 || used < 0) return null;
  return Math.round((used / wallUsec) * 1000) / 10;
}

/** The rows of `berth top`, busiest first (by CPU, then memory), given this reading and the one before (by instance). */
export function topRows(inputs: readonly TopInput[], before: ReadonlyMap<string, UsageReading>): TopRow[] {
  const rows = inputs.map((i) => ({
    agent: i.agent,
    instance_id: i.instance_id,
    target: i.target,
    node: i.node,
    cpu_percent: i.usage ? cpuPercent(before.get(i.instance_id), i.usage) : null,
    cpu_seconds_total: i.usage ? i.usage.cpu_usec / 1e6 : null,
    memory_bytes: i.usage ? i.usage.memory_bytes : null,
  }));
  return rows.sort(
    (a, b) =>
      (b.cpu_percent ?? -1) - (a.cpu_percent ?? -1) ||
      (b.memory_bytes ?? -1) - (a.memory_bytes ?? -1) ||
      a.agent.localeCompare(b.agent),
  );
}

/** 1536 → "1.5Ki"; the binary units `kubectl top` and free(1) -h use. */
export function humanBytes(bytes: number): string {
  const units = ["B", "Ki", "Mi", "Gi", "Ti"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value}B` : `${value.toFixed(1)}${units[unit]}`;
}
