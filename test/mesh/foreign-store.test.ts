/**
 * Issue 20, the two-homes duplicate as a user meets it: a second `BERTH_HOME` holding the same controller key (a
 * copied key, a second operator machine) deploys the same agent again. Before, the node served both homes and the
 * first then listed the agent DUPLICATED. Now each node serves a key for the store it first served: the second home
 * is refused `foreign_store`, chained on the node, and never are two copies alive (/proc). `berth node rehome` moves a
 * node explicitly, chained on both sides, after which the first home is the foreign one.
 *
 * Real `berth node serve` daemons and real `berth` CLI processes on two homes; judged from /proc, the nodes' chains
 * (read-only) and `berth audit verify` of both controller chains.
 */
import { copyFileSync, cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliHome, type CliHome } from "../mesh-controller/support/cli-home.js";
import { TEST_PERMIT } from "../mesh-controller/support/package.js";
import { liveAgents, liveInstances } from "../support/live-agents.js";
import { killAll } from "../support/process.js";
import { cleanup, NodeProcess } from "./harness.js";

/** What `berth deploy` prints of the node's foreign_store refusal (the code itself is on the node's chain). */
const FOREIGN =
  /this node serves the controller key for store [0-9a-f]{32}, not store [0-9a-f]{32}; .*berth node rehome/;

afterEach(async () => {
  killAll();
  await cleanup();
});

function agentSpec(home: CliHome, name: string, prefer: string | null): string {
  const path = join(home.home, `${name}.json`);
  const mesh = prefer ? { mesh: { prefer: [prefer] } } : {};
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name },
      spec: { target: "mesh", package: "./pkg", ...mesh },
    }),
  );
  return path;
}

/** A second home of the same controller: its own (empty) controller.db, the first home's key, signers, permits and package. */
async function secondHomeOf(first: CliHome): Promise<CliHome> {
  const second = await cliHome("berth-foreign-b-");
  copyFileSync(join(first.home, "keys", "controller.key"), join(second.home, "keys", "controller.key"));
  for (const f of ["signers.json", "permits.json"]) copyFileSync(join(first.home, f), join(second.home, f));
  cpSync(first.pkgDir, second.pkgDir, { recursive: true, force: true });
  return { ...second, controllerKey: first.controllerKey, signer: first.signer };
}

async function verifiesChain(home: CliHome): Promise<boolean> {
  const r = await home.berth(
    "audit",
    "verify",
    "--db",
    join(home.home, "controller.db"),
    "--key-file",
    join(home.home, "keys", "controller.key"),
    "--json",
  );
  return r.code === 0 && (JSON.parse(r.stdout) as { ok: boolean }).ok;
}

async function ok(home: CliHome, ...args: string[]): Promise<string> {
  const r = await home.berth(...args);
  expect(r.code, `berth ${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(0);
  return r.stdout;
}

describe("a second home of one controller key (issue 20)", { timeout: 180_000 }, () => {
  it("deploying the same agent from a second home is refused foreign_store on the node, and only one copy ever runs", async () => {
    const a = await cliHome("berth-foreign-a-");
    const [n1, n2] = await Promise.all([
      NodeProcess.create({ controllers: [a.controllerKey], signers: [a.signer.publicKey], permits: [TEST_PERMIT] }),
      NodeProcess.create({ controllers: [a.controllerKey], signers: [a.signer.publicKey], permits: [TEST_PERMIT] }),
    ]);
    await ok(a, "nodes", "add", n1.address, "--tier", "paired");
    await ok(a, "nodes", "add", n2.address, "--tier", "paired");
    const name = `heartbeat${process.pid}`;
    await ok(a, "deploy", agentSpec(a, name, n1.nodeId));
    expect(liveInstances(name)).toHaveLength(1);

    // The second home knows only the other node: before issue 20 it placed a second copy there.
    const b = await secondHomeOf(a);
    await ok(b, "nodes", "add", n2.address, "--tier", "paired");
    const again = await b.berth("deploy", agentSpec(b, name, null));
    expect(again.code).not.toBe(0);
    expect(again.stdout + again.stderr).toMatch(FOREIGN);
    // Knowing the node that runs it, the second home sees the copy (reads are served) and places nothing; anything
    // it would place there is refused too.
    await ok(b, "nodes", "add", n1.address, "--tier", "paired");
    expect(await ok(b, "deploy", agentSpec(b, name, n1.nodeId))).toMatch(/is running as .* nothing to do/);
    const pinned = await b.berth("place", b.pkgDir, "--name", `${name}x`, "--pin", n1.nodeId);
    expect(pinned.code).not.toBe(0);
    expect(pinned.stdout + pinned.stderr).toMatch(/foreign_store/);
    expect(liveAgents(`${name}x`)).toEqual([]);
    expect(liveInstances(name)).toHaveLength(1);

    // The first home's view: one instance, not duplicated.
    const agents = JSON.parse(await ok(a, "agents", "--json")) as { agents: Array<{ name: string; state: string }> };
    expect(agents.agents.find((g) => g.name === name)?.state).not.toMatch(/DUPLICATED/i);

    // Each refusal is on the refusing node's chain, with its code; the binding was chained once, by the first home.
    for (const n of [n1, n2]) {
      const refusals = n.events({ kind: "workload.refuse" }).filter((e) => e.payload.code === "foreign_store");
      expect(refusals.length, `foreign_store refusals on ${n.nodeId}`).toBeGreaterThan(0);
      const binds = n.events({ kind: "controller.bind" });
      expect(binds).toHaveLength(1);
      expect(binds[0]?.payload).toMatchObject({ how: "first_request", from_store: null });
      expect(n.verifyChain().ok).toBe(true);
    }
    expect(await verifiesChain(a)).toBe(true);
    expect(await verifiesChain(b)).toBe(true);
  });

  it("berth node rehome moves a node to the second home, chained on both sides; the first home is then the foreign one", async () => {
    const a = await cliHome("berth-rehome-a-");
    const node = await NodeProcess.create({
      controllers: [a.controllerKey],
      signers: [a.signer.publicKey],
      permits: [TEST_PERMIT],
    });
    await ok(a, "nodes", "add", node.address, "--tier", "paired");
    const b = await secondHomeOf(a);
    await ok(b, "nodes", "add", node.address, "--tier", "paired");
    const first = `first${process.pid}`;
    const refused = await b.berth("place", b.pkgDir, "--name", first);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/foreign_store/);
    expect(liveAgents(first)).toEqual([]);

    const noReason = await b.berth("node", "rehome", node.nodeId, "--reason", "  ");
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason/);

    const moved = JSON.parse(
      await ok(b, "node", "rehome", node.nodeId, "--reason", "the lab moves to the second operator machine", "--json"),
    ) as {
      ok: boolean;
      store_id: string;
      from_store: string | null;
    };
    expect(moved.ok).toBe(true);
    expect(moved.from_store).not.toBeNull();
    expect(moved.from_store).not.toBe(moved.store_id);

    // Now the second home places, and the first is refused.
    await ok(b, "place", b.pkgDir, "--name", first);
    expect(liveAgents(first).length).toBeGreaterThan(0);
    const second = `second${process.pid}`;
    const fromA = await a.berth("place", a.pkgDir, "--name", second);
    expect(fromA.code).not.toBe(0);
    expect(fromA.stdout + fromA.stderr).toMatch(/foreign_store/);
    expect(liveAgents(second)).toEqual([]);

    // Chained on the node (controller.bind how rehome, with the reason and the store it replaced) and in the
    // second home's chain (request and outcome, the outcome naming the request by its hash).
    const rehomed = node.events({ kind: "controller.bind" }).find((e) => e.payload.how === "rehome");
    expect(rehomed?.payload).toMatchObject({
      reason: "the lab moves to the second operator machine",
      from_store: moved.from_store,
      store_id: moved.store_id,
    });
    const tail = JSON.parse(
      await ok(b, "audit", "tail", "--db", join(b.home, "controller.db"), "--json", "-n", "50"),
    ) as {
      events: Array<{ kind: string; hash: string; payload: Record<string, unknown> }>;
    };
    const rehomes = tail.events.filter((e) => e.kind === "controller.rehome");
    expect(rehomes.map((e) => e.payload.phase)).toEqual(["request", "outcome"]);
    expect(rehomes[1]?.payload).toMatchObject({
      decision_id: rehomes[0]?.hash,
      result: "ok",
      from_store: moved.from_store,
    });
    expect(rehomed?.payload.decision_id).toBe(rehomes[0]?.hash);
    expect(node.verifyChain().ok).toBe(true);
    expect(await verifiesChain(a)).toBe(true);
    expect(await verifiesChain(b)).toBe(true);
  });
});
