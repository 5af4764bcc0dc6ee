import { describe, expect, it } from "vitest";
import { humanBytes, topRows, type Usage } from "./top";
import type { InstanceInfo } from "./types";

const instance = (id: string, state: string, usage: Usage | null, agent = id): InstanceInfo =>
  ({
    instance_id: id,
    name: id,
    node_id: "a".repeat(32),
    state,
    status: usage ? { agent, usage } : { agent },
  }) as unknown as InstanceInfo;

describe("the dashboard's top figures", () => {
  it("show memory at once and CPU from the second reading, busiest first, running instances only", () => {
    const first = new Map<string, Usage>([
      ["busy", { cpu_usec: 1_000_000, memory_bytes: 1, sampled_ms: 10_000 }],
      ["idle", { cpu_usec: 5_000, memory_bytes: 2, sampled_ms: 10_000 }],
    ]);
    const rows = topRows(
      [
        instance("idle", "running", { cpu_usec: 15_000, memory_bytes: 2 * 1024 * 1024, sampled_ms: 12_000 }),
        instance("busy", "running", { cpu_usec: 2_800_000, memory_bytes: 1536, sampled_ms: 12_000 }),
        instance("new", "running", { cpu_usec: 1, memory_bytes: 3, sampled_ms: 12_000 }),
        instance("gone", "stopped", null),
      ],
      first,
    );
    expect(rows.map((r) => [r.agent, r.cpu_percent, r.memory_bytes])).toEqual([
      ["busy", 90, 1536],
      ["idle", 0.5, 2 * 1024 * 1024],
      ["new", null, 3],
    ]);
    expect([humanBytes(1536), humanBytes(2 * 1024 * 1024), humanBytes(12)]).toEqual(["1.5Ki", "2.0Mi", "12B"]);
  });
});
