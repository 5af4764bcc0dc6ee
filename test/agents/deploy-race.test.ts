/**
 * Issue 21 case 3, with real processes: two `berth deploy` of one agent, the first one's `status` answer from one
 * node held back in the test TCP proxy while the second places the agent. The first then reads a placement record
 * that did not exist when it asked; it must not take that fresh placement for a stale record and unload it (a live
 * agent stopped by automation), nor place a second copy. Judged from /proc: the agent's processes that ran after the
 * second deploy still run, and no other process carries the agent's mark.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey, loadKeyFile } from "../../src/keys/key-file.js";
import { cleanup, MAIN, NodeProcess, processesWithEnv, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { TcpProxy } from "../support/tcp-proxy.js";

const proxies: TcpProxy[] = [];
afterEach(async () => {
  killAll();
  for (const p of proxies.splice(0)) await p.close();
  await cleanup();
});

const parsed = (stdout: string): JsonObject => {
  try {
    return JSON.parse(stdout) as JsonObject;
  } catch {
    throw new Error(`no JSON document: ${stdout}`);
  }
};

describe("concurrent deploys of one agent", () => {
  it("a deploy whose status answer is late never unloads the placement the other deploy made meanwhile", {
    timeout: 120_000,
  }, async () => {
    requireBuild();
    const home = tempDir("berth-agents-race-");
    const env = { BERTH_HOME: home };
    const berth = (...args: string[]) => runNode([MAIN, ...args], { env });
    const keys = await berth("keys", "new", "--json");
    const controllerKey = (parsed(keys.stdout) as { public_key: string }).public_key;
    const signer = generateSigningKey();
    probePackage(join(home, "pkg"), signer, { script: "#!/bin/sh\necho agent-up\nexec sleep 300\n" });
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
    const nodeSpec = { controllers: [controllerKey], signers: [signer.publicKey], permits: [TEST_PERMIT] };
    const [direct, slow] = await Promise.all([
      NodeProcess.create(nodeSpec),
      NodeProcess.create({ ...nodeSpec, board: "pi4" }),
    ]);
    const proxy = await TcpProxy.start(slow.address, {
      tls: { node: slow.identity(), controller: loadKeyFile(join(home, "keys", "controller.key")) },
    });
    proxies.push(proxy);
    expect((await berth("nodes", "add", direct.address, "--tier", "paired")).code).toBe(0);
    expect((await berth("nodes", "add", proxy.address, "--tier", "paired")).code).toBe(0);
    const mark = `RACE_MARK=${Date.now()}-${process.pid}`;
    const spec = join(home, "scout.yaml");
    writeFileSync(
      spec,
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n  config: { env: { RACE_MARK: "${mark.slice("RACE_MARK=".length)}" } }\n`,
    );

    // The first deploy asks every node for its status; the slow node's answer stays in the proxy.
    proxy.delayNextAnswer("status");
    const first = spawnNode([MAIN, "deploy", spec, "--json"], { env });
    await waitFor(() => proxy.delayed === 1 || undefined, "the first deploy's status answer held in the proxy", 60_000);

    // Meanwhile a second deploy places the agent and starts it.
    const second = await berth("deploy", spec, "--json");
    const placed = parsed(second.stdout);
    expect([second.code, placed.outcome], second.stdout + second.stderr).toEqual([0, "started"]);
    const agentPids = await waitFor(() => {
      const pids = processesWithEnv(mark);
      return pids.length > 0 ? pids : undefined;
    }, "the agent's processes");

    // Then the held answer arrives and the first deploy goes on.
    proxy.releaseDelayed();
    const done = await first.exited();
    const late = parsed(first.output());
    expect(done.code, first.output() + first.errors()).toBe(0);
    expect(late.outcome).toBe("unchanged");
    expect(late.instance).toBe(placed.instance);
    expect(String(late.message)).not.toContain("berth instance unload");

    // From /proc: the very processes that ran after the second deploy still run, and nothing else carries the mark.
    expect(processesWithEnv(mark).sort()).toEqual([...agentPids].sort());
    const agents = parsed((await berth("agents", "--json")).stdout).agents as JsonObject[];
    expect(agents.map((a) => [a.name, a.state, a.instance])).toEqual([["scout", "running", placed.instance]]);
    const verified = await berth("audit", "verify", "--json");
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  });
});
