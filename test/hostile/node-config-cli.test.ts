/**
 * Issue 12 (High), seen from where users meet it: a placement's configuration outside the package's signed surface
 * is refused by the node (`config_refused`), and `berth deploy` of an agent spec (an env name) and `berth place` (an
 * argument) both show that refusal with the field named, while nothing of the agent runs. A real `berth node serve` daemon, real CLI processes;
 * judged from /proc (no process carries the agent's name) and the node's answer as the CLI prints it.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, NodeProcess } from "../mesh/harness.js";
import { cliHome } from "../mesh-controller/support/cli-home.js";
import { TEST_PERMIT } from "../mesh-controller/support/package.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** Live processes the node started under `name`, from /proc. */
function livePids(name: string): string[] {
  const pids: string[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/environ`, "utf8").split("\0").includes(`BERTH_NAME=${name}`)) pids.push(p);
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

describe("configuration outside the signed surface, through the CLI (issue 12)", () => {
  it("berth deploy and berth place name the refused field, and nothing of the agent runs", async () => {
    const cli = await cliHome("berth-config-cli-");
    const node = await NodeProcess.create({
      controllers: [cli.controllerKey],
      signers: [cli.signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await cli.berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);

    const name = `cfg${process.pid}`;
    const spec = join(cli.home, "agent.json");
    writeFileSync(
      spec,
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name },
        spec: {
          target: "mesh",
          package: "./pkg",
          config: { env: { NODE_OPTIONS: "--import=data:text/javascript,process.exit(7)" } },
        },
      }),
    );
    const deployed = await cli.berth("deploy", spec);
    expect(deployed.code).not.toBe(0);
    expect(deployed.stdout + deployed.stderr).toMatch(/refused: config\.env\.NODE_OPTIONS: .*never accepted/);

    // `berth place` takes arguments only (no env flag); one the package does not declare is refused by its position.
    const placed = await cli.berth("place", cli.pkgDir, "--name", `${name}p`, "--arg", "--undeclared");
    expect(placed.code).not.toBe(0);
    expect(placed.stdout + placed.stderr).toMatch(/config\.args\[0\]/);

    expect(livePids(name)).toEqual([]);
    expect(livePids(`${name}p`)).toEqual([]);
  });
});
