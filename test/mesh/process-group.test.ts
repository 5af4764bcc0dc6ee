/**
 * Issue 21, cases 4 and 5, as issue 15 changed them: an instance is alive while any process of its group is, and
 * nothing an agent forks outlives it. Real daemons, real processes, judged from /proc: killing only the group leader
 * (berth's sh wrapper) ends the rest of the group and records the exit (so nothing runs unowned and a deploy places
 * one fresh copy); killing only the agent's entry makes the wrapper end the child it left behind.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, ok, requireBuild, TestController, waitFor } from "./harness.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(requireBuild);
afterEach(cleanup);

/** Live (non-zombie) pids whose process group is `pgid`, from /proc. */
function groupOf(pgid: number): Array<{ pid: number; ppid: number; comm: string }> {
  const out: Array<{ pid: number; ppid: number; comm: string }> = [];
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const text = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z")
        out.push({
          pid: Number(name),
          ppid: Number(fields[1]),
          comm: text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")),
        });
    } catch {
      // gone mid-scan
    }
  }
  return out;
}

// The entry runs `sleep` as a child (no exec), so the group is: wrapper (leader) → run.sh → sleep.
const FORKING = "#!/bin/sh\necho placed-ok\nsleep 300\n";

async function placedForking() {
  const ctl = new TestController();
  const signer = generateSigningKey();
  const node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
  });
  const placed = ok(await ctl.place(node, makePackage(signer, { script: FORKING }).dir));
  const id = placed.instance_id as string;
  const pgid = placed.pid as number;
  await waitFor(() => groupOf(pgid).some((p) => p.comm === "sleep"), "the entry's child to start");
  return { ctl, node, id, pgid };
}

const rowOf = async (ctl: TestController, node: NodeProcess, id: string) =>
  ok(await ctl.status(node, id)).row as { state: string; detail: string | null; generation: number };

describe("nothing of an instance's group outlives its leader or its entry", () => {
  it("kill -9 of only the group leader ends every other member and records the exit", async () => {
    const { ctl, node, id, pgid } = await placedForking();
    process.kill(pgid, "SIGKILL");
    const row = await waitFor(async () => {
      const r = await rowOf(ctl, node, id);
      return r.state !== "running" ? r : undefined;
    }, "the daemon to record the exit");
    expect(row.state).toBe("exited");
    expect(row.detail).toContain("the group leader was killed");
    expect(groupOf(pgid)).toEqual([]);
    // An unload of the exited instance has nothing left to stop.
    ok(await ctl.verb(node, "unload", { instance_id: id }));
  });

  it("kill -9 of only the agent's entry: the wrapper ends the child it left behind and the exit is recorded", async () => {
    const { ctl, node, id, pgid } = await placedForking();
    const entry = groupOf(pgid).find((p) => p.ppid === pgid && p.comm !== "sleep");
    expect(entry).toBeDefined();
    process.kill(entry?.pid as number, "SIGKILL");
    const row = await waitFor(async () => {
      const r = await rowOf(ctl, node, id);
      return r.state !== "running" ? r : undefined;
    }, "the daemon to see the wrapper exit");
    expect(row).toMatchObject({ state: "exited", signal: "SIGKILL" });
    await waitFor(() => groupOf(pgid).length === 0, "the orphaned sleep to be ended", 30_000);
  });

  it("an unload fenced on a generation the instance is not at is refused precondition_failed and touches nothing", async () => {
    const { ctl, node, id, pgid } = await placedForking();
    const r = await ctl.verb(node, "unload", { instance_id: id, generation: 7 });
    expect(r).toMatchObject({ kind: "refused", code: "precondition_failed" });
    expect(groupOf(pgid).length).toBeGreaterThan(0);
  });
});
