/**
 * The audit chain as it grows, and what goes on it (issue 36), with real processes: a node daemon, a deployed mesh
 * agent, and `berth events -f` / `berth audit tail -f` as child processes whose stdout is read line by line while
 * another `berth` writes. Reads leave the chain as it was, locally and through a `berth serve` (an access log may
 * record them, the chain does not); a write adds its events, and the follower prints every one of them, in order.
 * Judged from outside: the chain read back with `audit tail --json` (its own read-only open).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, MAIN, requireBuild, waitFor } from "../mesh/harness.js";
import { killAll, spawnNode } from "../support/process.js";
import { clientHome, controllerHome, run, serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

async function chainSeqs(env: NodeJS.ProcessEnv): Promise<number[]> {
  const r = await run(env, ["audit", "tail", "-n", "100000", "--json", "--local"]);
  expect(r.code, r.stderr).toBe(0);
  return (r.doc.events as JsonObject[]).map((e) => Number(e.seq));
}

/** The seqs a follower printed so far (text lines start with the seq; --json lines are events). */
function printedSeqs(out: string, json: boolean): number[] {
  return out
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("SEQ"))
    .map((l) => (json ? Number((JSON.parse(l) as { seq: number }).seq) : Number(l.split(/\s+/)[0])));
}

const READS = [
  ["agents"],
  ["instances"],
  ["nodes", "list"],
  ["agent", "status", "scout"],
  ["agent", "logs", "scout"],
  ["unsettled"],
  ["audit", "tail"],
  ["events"],
];

describe("the chain as it grows", { timeout: 120_000 }, () => {
  it("reads chain nothing and a write chains its events, which berth events -f prints as they are appended, locally and through a server", async () => {
    requireBuild();
    const { home, env, spec } = await controllerHome();

    const start = await chainSeqs(env);
    for (const args of READS) expect((await run(env, [...args, "--json"])).code, args.join(" ")).toBe(0);
    expect(await chainSeqs(env), "reads on the files chain nothing").toEqual(start);

    // Local: the files read-only, a text line per event.
    const local = spawnNode([MAIN, "events", "-f", "-n", "1"], { env });
    await local.waitForOutput(new RegExp(`^${start.at(-1)}\\s`, "m"));
    const stopped = await run(env, ["agent", "stop", "scout", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const afterStop = await chainSeqs(env);
    expect(afterStop.length, "a write chains its events").toBeGreaterThan(start.length);
    await waitFor(
      () => printedSeqs(local.output(), false).at(-1) === afterStop.at(-1),
      "berth events -f to print the stop's events",
      30_000,
    );
    expect(printedSeqs(local.output(), false)).toEqual(afterStop.slice(start.length - 1));
    local.child.kill("SIGINT");

    // Through a server: reads are not api.calls; `audit tail -f --json` prints each new event as a JSON line.
    const { url } = await serve(home);
    const client = clientHome(home);
    expect(
      (
        await run(client.env, [
          "context",
          "add",
          "lab",
          "--server",
          url,
          "--token-file",
          client.tokenFile,
          "--use",
          "--json",
        ])
      ).code,
    ).toBe(0);
    const served = await chainSeqs(env);
    for (const args of READS)
      expect((await run(client.env, [...args, "--json"])).code, `${args.join(" ")} through the server`).toBe(0);
    expect(await chainSeqs(env), "reads through the server chain nothing").toEqual(served);

    const remote = spawnNode([MAIN, "audit", "tail", "-f", "-n", "1", "--json"], { env: client.env });
    await waitFor(
      () => printedSeqs(remote.output(), true).at(-1) === served.at(-1),
      "the follower's first line",
      30_000,
    );
    const deployed = await run(client.env, ["deploy", spec, "--json"]);
    expect([deployed.code, deployed.doc.outcome], deployed.stderr).toEqual([0, "started"]);
    const afterDeploy = await chainSeqs(env);
    expect(afterDeploy.length).toBeGreaterThan(served.length);
    await waitFor(
      () => printedSeqs(remote.output(), true).at(-1) === afterDeploy.at(-1),
      "audit tail -f to print the deploy's events",
      30_000,
    );
    expect(printedSeqs(remote.output(), true)).toEqual(afterDeploy.slice(served.length - 1));
    const kinds = remote
      .output()
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => (JSON.parse(l) as { kind: string }).kind);
    expect(kinds, "the deploy's api.call pair and its agent.deploy").toEqual(
      expect.arrayContaining(["api.call", "agent.deploy"]),
    );
    remote.child.kill("SIGINT");
  });
});
