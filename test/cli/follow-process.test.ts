/**
 * `berth agent logs NAME -f` and `berth instance logs ID -f` with real processes (issue 13): a node daemon runs an
 * agent that prints a numbered line five times a second; the follower, in its own process group as a terminal's
 * foreground job is, must print the lines written after it started, each once and in order, and end with exit 0 when
 * the group gets SIGINT (what Ctrl-C sends). Through a context and on the files. Then `berth agent stop --wait`
 * through the context: answered once the agent's processes are gone, judged from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, MAIN, processesWithEnv, requireBuild, waitFor } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { clientHome, controllerHome, run, serve } from "./remote-support.js";

const TICKER = "#!/bin/sh\ni=0\nwhile true; do echo tick-$i; i=$((i+1)); sleep 0.2; done\n";

const followers: ChildProcess[] = [];
afterEach(async () => {
  for (const f of followers.splice(0)) if (f.exitCode === null && f.pid) process.kill(-f.pid, "SIGKILL");
  killAll();
  await cleanup();
});

/** A follower as a terminal starts a job: its own process group, so a Ctrl-C is SIGINT to every process in it. */
function follow(env: NodeJS.ProcessEnv, args: readonly string[]) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  followers.push(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) =>
    child.on("exit", (code, signal) => r({ code, signal })),
  );
  const ticks = () => [...out.matchAll(/^tick-(\d+)$/gm)].map((m) => Number(m[1]));
  return { child, out: () => out, err: () => err, exited, ticks };
}

async function followUntilCtrlC(env: NodeJS.ProcessEnv, args: readonly string[]): Promise<void> {
  const f = follow(env, args);
  const firstSeen = await waitFor(
    () => (f.ticks().length > 0 ? Math.max(...f.ticks()) : false),
    `${args.join(" ")}: its first lines (${f.err()})`,
    20_000,
  );
  // Lines the agent writes after the follower printed its first answer arrive too, each once and in order.
  await waitFor(
    () => Math.max(...f.ticks()) >= firstSeen + 10,
    `${args.join(" ")}: lines written after it started (${f.err()})`,
    20_000,
  );
  const ticks = f.ticks();
  expect(ticks, `${args.join(" ")}: every line once, in order`).toEqual(
    Array.from({ length: ticks.length }, (_, i) => (ticks[0] as number) + i),
  );
  process.kill(-(f.child.pid as number), "SIGINT");
  const end = await Promise.race([f.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 5_000))]);
  expect(end, `${args.join(" ")}: Ctrl-C ends it, exit 0 (${f.err()})`).toEqual({ code: 0, signal: null });
}

describe("following a log", () => {
  it("prints new lines as the agent writes them until Ctrl-C, through a context and on the files; stop --wait answers once the agent is gone", async () => {
    requireBuild();
    const { home, env } = await controllerHome(TICKER);
    const { url } = await serve(home);
    const client = clientHome(home);
    expect(
      (await run(client.env, ["context", "add", "lab", "--server", url, "--token-file", client.tokenFile, "--use"]))
        .code,
    ).toBe(0);
    const instance = String(
      ((await run(env, ["agents", "--json", "--local"])).doc.agents as JsonObject[])[0]?.instance,
    );

    await followUntilCtrlC(client.env, ["agent", "logs", "scout", "-f"]);
    await followUntilCtrlC(env, ["instance", "logs", instance, "-f", "--local"]);

    expect(processesWithEnv(`BERTH_INSTANCE_ID=${instance}`).length, "the agent runs before the stop").toBeGreaterThan(
      0,
    );
    const stopped = await run(client.env, ["agent", "stop", "scout", "--wait", "--json"]);
    expect([stopped.code, stopped.doc.ok, stopped.doc.instance], stopped.stderr).toEqual([0, true, instance]);
    expect(
      processesWithEnv(`BERTH_INSTANCE_ID=${instance}`),
      "no process of the agent is left when stop --wait answers",
    ).toEqual([]);
  }, 240_000);
});
