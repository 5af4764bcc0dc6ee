import { describe, expect, it } from "vitest";
import { cpuPercent, humanBytes, topRows } from "./top.js";

describe("berth top's arithmetic", () => {
  it("gives a CPU share only once there are two readings of the same instance", () => {
    expect(cpuPercent(undefined, { cpu_usec: 5e6, memory_bytes: 1, sampled_ms: 2000 })).toBeNull();
    expect(
      cpuPercent(
        { cpu_usec: 1e6, memory_bytes: 1, sampled_ms: 1000 },
        { cpu_usec: 1.5e6, memory_bytes: 1, sampled_ms: 2000 },
      ),
    ).toBe(50);
  });

  it("shows no share when the counter went back (the instance restarted between readings)", () => {
    expect(
      cpuPercent(
        { cpu_usec: 9e6, memory_bytes: 1, sampled_ms: 1000 },
        { cpu_usec: 1e6, memory_bytes: 1, sampled_ms: 2000 },
      ),
    ).toBeNull();
  });

  it("lists the busiest first and a stopped instance without figures last", () => {
    const rows = topRows(
      [
        {
          instance_id: "a",
          agent: "idle",
          target: "mesh",
          node: "n",
          usage: { cpu_usec: 0, memory_bytes: 10, sampled_ms: 2000 },
        },
        {
          instance_id: "b",
          agent: "busy",
          target: "mesh",
          node: "n",
          usage: { cpu_usec: 2e6, memory_bytes: 5, sampled_ms: 2000 },
        },
        { instance_id: "c", agent: "gone", target: "mesh", node: "n", usage: null },
      ],
      new Map([
        ["a", { cpu_usec: 0, memory_bytes: 10, sampled_ms: 1000 }],
        ["b", { cpu_usec: 1e6, memory_bytes: 5, sampled_ms: 1000 }],
      ]),
    );
    expect(rows.map((r) => [r.agent, r.cpu_percent])).toEqual([
      ["busy", 100],
      ["idle", 0],
      ["gone", null],
    ]);
  });

  it("prints memory in binary units", () => {
    expect(humanBytes(512)).toBe("512B");
    expect(humanBytes(1536)).toBe("1.5Ki");
    expect(humanBytes(3 * 1024 * 1024)).toBe("3.0Mi");
  });
});
