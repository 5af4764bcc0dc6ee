/**
 * The dashboard's top view (issue 36, as `berth top`): each running instance's CPU and memory from two readings of
 * `GET /instances` (each row's `status.usage`: the node's cgroup counter and memory in use). The CPU share is the CPU
 * time used between two readings over the wall time between them, so the first reading shows memory and no CPU yet.
 * Pure; src/core/agents/top.ts computes the same for the CLI.
 */
import type { InstanceInfo } from "./types";

export interface Usage {
  readonly cpu_usec: number;
  readonly memory_bytes: number;
  readonly sampled_ms: number;
}

export interface TopRow {
  readonly agent: string;
  readonly instance_id: string;
  readonly node_id: string;
  /** Percent of one core over the last interval (200 = two busy cores); null until a second reading. */
  readonly cpu_percent: number | null;
  readonly memory_bytes: number | null;
}

export function usageOf(i: InstanceInfo): Usage | null {
  const u = i.status?.usage as Partial<Usage> | undefined;
  return u && typeof u.cpu_usec === "number" && typeof u.memory_bytes === "number" && typeof u.sampled_ms === "number"
    ? { cpu_usec: u.cpu_usec, memory_bytes: u.memory_bytes, sampled_ms: u.sampled_ms }
    : null;
}

function cpuPercent(before: Usage | undefined, now: Usage): number | null {
  if (!before) return null;
  const wallUsec = (now.sampled_ms - before.sampled_ms) * 1000;
  const used = now.cpu_usec - before.cpu_usec;
  if (wallUsec <= 0 || used < 0) return null;
  return Math.round((used / wallUsec) * 1000) / 10;
}

/** The running instances, busiest first, given this reading and the one before (by instance id). */
export function topRows(instances: readonly InstanceInfo[], before: ReadonlyMap<string, Usage>): TopRow[] {
  const rows = instances
    .filter((i) => i.state === "running" || i.state === "unhealthy")
    .map((i) => {
      const usage = usageOf(i);
      const agent = typeof i.status?.agent === "string" && i.status.agent !== "" ? i.status.agent : i.name;
      return {
        agent,
        instance_id: i.instance_id,
        node_id: i.node_id,
        cpu_percent: usage ? cpuPercent(before.get(i.instance_id), usage) : null,
        memory_bytes: usage ? usage.memory_bytes : null,
      };
    });
  return rows.sort(
    (a, b) =>
      (b.cpu_percent ?? -1) - (a.cpu_percent ?? -1) ||
      (b.memory_bytes ?? -1) - (a.memory_bytes ?? -1) ||
      a.agent.localeCompare(b.agent),
  );
}

/** 1536 → "1.5Ki": the binary units `berth top`, `kubectl top` and free(1) -h use. */
export function humanBytes(bytes: number): string {
  const units = ["B", "Ki", "Mi", "Gi", "Ti"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value}B` : `${value.toFixed(value >= 10 ? 0 : 1)}${units[unit]}`;
}
