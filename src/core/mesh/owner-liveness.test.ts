import { describe, expect, it } from "vitest";
import { type HereFacts, judgeOwner, needsPidProbe, type OwnerLease } from "./owner-liveness.js";

const owner: OwnerLease = {
  owner_id: "o1",
  epoch: 3,
  pid: 4242,
  start_time: "9001",
  boot_id: "boot-a",
  host: "alpha",
  renewed_ms: 100_000,
  ttl_ms: 30_000,
  released_ms: null,
};
const here = (over: Partial<HereFacts> = {}): HereFacts => ({
  host: "alpha",
  boot_id: "boot-a",
  now_ms: 100_500,
  pid_start_time: "9001",
  ...over,
});

describe("judging whether a lease owner is provably gone", () => {
  it("an owner on this host and boot whose pid runs with the recorded start time is alive", () => {
    expect(judgeOwner(owner, here()).alive).toBe(true);
  });

  it("an owner on this host and boot whose pid is not running is gone, even if its lease was renewed a moment ago", () => {
    expect(judgeOwner(owner, here({ pid_start_time: null }))).toMatchObject({
      alive: false,
      why: expect.stringMatching(/not running/),
    });
  });

  it("an owner whose pid now belongs to a process with another start time is gone (pid reuse)", () => {
    expect(judgeOwner(owner, here({ pid_start_time: "12" }))).toMatchObject({
      alive: false,
      why: expect.stringMatching(/another process/),
    });
  });

  it("an owner from an earlier boot of this host is gone", () => {
    expect(judgeOwner(owner, here({ boot_id: "boot-b" })).alive).toBe(false);
  });

  it("an owner on another host is alive within its TTL and gone past it, whatever this machine's pids say", () => {
    expect(judgeOwner(owner, here({ host: "beta", pid_start_time: null, now_ms: 129_000 })).alive).toBe(true);
    expect(judgeOwner(owner, here({ host: "beta", pid_start_time: "9001", now_ms: 131_000 })).alive).toBe(false);
  });

  it("an owner that released its lease is gone, and none recorded is gone", () => {
    expect(judgeOwner({ ...owner, released_ms: 100_200 }, here()).alive).toBe(false);
    expect(judgeOwner(null, here()).alive).toBe(false);
  });

  it("the pid is probed only for an unreleased owner on this host and boot", () => {
    expect(needsPidProbe(owner, here())).toBe(true);
    expect(needsPidProbe(owner, here({ host: "beta" }))).toBe(false);
    expect(needsPidProbe(owner, here({ boot_id: "boot-b" }))).toBe(false);
    expect(needsPidProbe({ ...owner, released_ms: 1 }, here())).toBe(false);
  });
});
