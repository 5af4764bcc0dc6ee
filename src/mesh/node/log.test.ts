import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { nodeLogger } from "./log.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** What `write` puts in a file opened for it. */
function written(write: (fd: number) => void): string {
  const dir = mkdtempSync(join(tmpdir(), "berth-node-log-"));
  dirs.push(dir);
  const path = join(dir, "out");
  const fd = openSync(path, "w");
  write(fd);
  closeSync(fd);
  return readFileSync(path, "utf8");
}

const calls: Array<[level: "info" | "warn" | "error" | "debug", fields: Record<string, unknown>, msg: string]> = [
  ["info", { containment: { kind: "cgroup-v2", kill: "cgroup.kill", agent_user: null } }, "containment probed"],
  [
    "info",
    { instance_id: "probe-0-ce41d6dca184", name: "probe-0", pid: 15432, generation: 1, skipped: undefined },
    "instance started",
  ],
  ["warn", { reason: 'a "quoted"\nreason, ünïcode' }, "agents will be refused"],
  ["error", {}, "no fields"],
  ["debug", { hidden: true }, "below the level"],
];

describe("the node daemon's log lines", () => {
  it("are the lines pino writes for the same fields, level and time", () => {
    const ours = written((fd) => {
      const log = nodeLogger("info", "e5864a95bd61dd5b543d563952c5d678", fd, () => 1796189324101);
      for (const [level, fields, msg] of calls) log[level](fields, msg);
    });
    const theirs = written((fd) => {
      const log = pino(
        {
          level: "info",
          base: { component: "node", node_id: "e5864a95bd61dd5b543d563952c5d678" },
          timestamp: () => ',"time":1796189324101',
        },
        pino.destination({ fd, sync: true }),
      );
      for (const [level, fields, msg] of calls) log[level](fields, msg);
    });
    expect(ours.split("\n").filter(Boolean)).toHaveLength(4);
    expect(ours).toBe(theirs);
  });

  it("are one short line each for people when asked (a terminal): time, level, message, fields; no JSON, no node id", () => {
    const text = written((fd) => {
      const log = nodeLogger(
        "info",
        "e5864a95bd61dd5b543d563952c5d678",
        fd,
        () => Date.UTC(2026, 11, 7, 7, 52, 39),
        true,
      );
      for (const [level, fields, msg] of calls) log[level](fields, msg);
    });
    const lines = text.split("\n").filter(Boolean);
    expect(lines).toHaveLength(4);
    expect(lines[1]).toBe(
      "07:52:39 INFO  instance started  instance_id=probe-0-ce41d6dca184 name=probe-0 pid=15432 generation=1",
    );
    expect(lines[3]).toBe("07:52:39 ERROR no fields");
    for (const line of lines) {
      expect(line).toMatch(/^\d\d:\d\d:\d\d (INFO |WARN |ERROR) /);
      expect(line).not.toContain("node_id");
      expect(line).not.toMatch(/^\{/);
    }
  });

  it("writes nothing at silent", () => {
    expect(written((fd) => nodeLogger("silent", "n", fd).error({ a: 1 }, "x"))).toBe("");
  });
});
