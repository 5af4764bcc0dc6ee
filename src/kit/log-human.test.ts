import { describe, expect, it } from "vitest";
import { humanLogLine, humanLogs } from "./log-human.js";

describe("logs for a person on a terminal (issue 36)", () => {
  it("turns a pino JSON line into one short line with its level word, message and fields", () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 11, 7, 7, 1, 2),
      pid: 1,
      hostname: "vm",
      msg: "request refused",
      route: "/api/v1/agents",
      status: 400,
      why: "a b",
    });
    expect(humanLogLine(line)).toBe('07:01:02 WARN  request refused  route=/api/v1/agents status=400 why="a b"');
    expect(humanLogLine(line)).not.toContain("{");
  });

  it("says nothing about leading the store when no other controller led it", () => {
    expect(
      humanLogLine(
        JSON.stringify({
          level: 30,
          time: 0,
          msg: "leader of the store",
          epoch: 2,
          why: "the store has had no leader",
        }),
      ),
    ).toBeNull();
    expect(
      humanLogLine(
        JSON.stringify({ level: 30, time: 0, msg: "leader of the store", epoch: 3, why: "the leader's lease ran out" }),
      ),
    ).toContain("leader of the store");
  });

  it("is chosen on a terminal unless --log-format json, and never off one unless --log-format text", () => {
    expect([
      humanLogs("auto", true),
      humanLogs("auto", false),
      humanLogs("auto", undefined),
      humanLogs("json", true),
      humanLogs("text", false),
    ]).toEqual([true, false, false, false, true]);
  });
});
