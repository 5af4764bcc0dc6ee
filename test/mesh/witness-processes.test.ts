/**
 * Issue 38 from outside: nodes witness the controller's history. A thief with the controller's key and database
 * rewrites the last 10 events of its chain and re-signs them (and a checkpoint over them): `berth audit verify` still
 * passes, but `berth audit consistency` against a checkpoint exported earlier fails, and the next command to a real
 * `berth node serve` that saw the old head is refused `witness`, the reason chained on the node. A store restored from
 * one backup into two homes that then diverge: a node that followed one refuses the other (the store fence of issue 20
 * cannot tell them apart: both have the backup's store id).
 *
 * Real node daemons and real `berth` CLI processes; judged from the CLI's output, /proc (no agent started) and the
 * nodes' chains read-only.
 */
import { copyFileSync, cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { cliHome, type CliHome } from "../mesh-controller/support/cli-home.js";
import { TEST_PERMIT } from "../mesh-controller/support/package.js";
import { liveAgents } from "../support/live-agents.js";
import { rewriteChainTail } from "../support/rewrite-chain.js";
import { killAll } from "../support/process.js";
import { cleanup, NodeProcess } from "./harness.js";

interface Witnesses {
  ok: boolean;
  nodes: Array<{ node_id: string; state: string; size: number | null; root: string | null; ours: string | null }>;
}

afterEach(async () => {
  killAll();
  await cleanup();
});

async function ok(home: CliHome, ...args: string[]): Promise<string> {
  const r = await home.berth(...args);
  expect(r.code, `berth ${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(0);
  return r.stdout;
}

function witnessRefusals(node: NodeProcess) {
  return node.events({ kind: "workload.refuse" }).filter((e) => e.payload.code === "witness");
}

/** The thief: the last `count` events rewritten and re-signed with the controller's own key (test/support/rewrite-chain.ts). */
function rewriteTail(home: CliHome, count: number): void {
  const key = loadKeyFile(join(home.home, "keys", "controller.key"));
  const db = openDatabase(join(home.home, "controller.db"));
  try {
    const own = db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string };
    const total = (
      db.prepare("SELECT COUNT(*) AS n FROM audit_event WHERE chain_id = ?").get(own.chain_id) as { n: number }
    ).n;
    rewriteChainTail(db, own.chain_id, total - count, key);
  } finally {
    db.close();
  }
}

/** A second home on a copy of the first one's store (a restored backup): same key, same store id, same chain. */
async function homeFromBackup(a: CliHome, backup: string): Promise<CliHome> {
  const b = await cliHome("berth-witness-b-");
  copyFileSync(join(a.home, "keys", "controller.key"), join(b.home, "keys", "controller.key"));
  for (const f of ["signers.json", "permits.json"]) copyFileSync(join(a.home, f), join(b.home, f));
  cpSync(a.pkgDir, b.pkgDir, { recursive: true, force: true });
  await ok(b, "restore", backup);
  return { ...b, controllerKey: a.controllerKey, signer: a.signer };
}

describe("nodes witness the controller's checkpoints (issue 38)", { timeout: 240_000 }, () => {
  it("a tail rewritten and re-signed with the stolen key passes verify, fails consistency, and is refused by the node that saw the old head", async () => {
    const a = await cliHome("berth-witness-a-");
    const node = await NodeProcess.create({
      controllers: [a.controllerKey],
      signers: [a.signer.publicKey],
      permits: [TEST_PERMIT],
    });
    await ok(a, "nodes", "add", node.address, "--tier", "paired");
    const name = `w${process.pid}`;
    await ok(a, "place", a.pkgDir, "--name", `${name}a`);
    // Published out of band (a ticket, a git commit): the checkpoint a user can check the chain against later.
    const exported = join(a.home, "published-checkpoint.txt");
    writeFileSync(exported, await ok(a, "audit", "checkpoint", "--export"));
    await ok(a, "place", a.pkgDir, "--name", `${name}b`);
    await ok(a, "audit", "checkpoint");
    await ok(a, "place", a.pkgDir, "--name", `${name}c`);
    // The node accepted each newer checkpoint with a proof from the one it held, and chained it.
    const accepted = node.events({ kind: "controller.checkpoint" });
    expect(accepted.map((e) => e.payload.size)).toEqual(
      [...accepted.map((e) => e.payload.size as number)].sort((x, y) => x - y),
    );
    expect(accepted.length).toBeGreaterThanOrEqual(2);
    expect(accepted.slice(1).every((e) => typeof e.payload.from_size === "number")).toBe(true);
    const held = accepted[accepted.length - 1]?.payload.size as number;
    expect(witnessRefusals(node)).toEqual([]);
    const before = JSON.parse(await ok(a, "audit", "witnesses", "--json")) as Witnesses;
    expect(before.nodes).toEqual([expect.objectContaining({ node_id: node.nodeId, state: "consistent", size: held })]);

    // The thief rewrites the last 10 events (the node's checkpoint covers some of them) and signs a new checkpoint.
    rewriteTail(a, 10);
    await ok(a, "audit", "checkpoint");

    const single = await a.berth("audit", "verify", "--key-file", join(a.home, "keys", "controller.key"), "--json");
    expect(single.code, `single-chain verify still passes: ${single.stdout}${single.stderr}`).toBe(0);
    expect((JSON.parse(single.stdout) as { ok: boolean }).ok).toBe(true);

    const consistency = await a.berth("audit", "consistency", "--old", exported);
    expect(consistency.code).toBe(1);
    expect(consistency.stdout).toMatch(
      /^FAIL chain [0-9a-f]{32} fork: the chain does not extend the exported checkpoint/,
    );

    // Asked before anything is sent: the node holds a tree this store's chain no longer hashes to.
    const after = await a.berth("audit", "witnesses", "--json");
    expect(after.code).toBe(1);
    const report = JSON.parse(after.stdout) as Witnesses;
    expect(report.nodes).toEqual([
      expect.objectContaining({ node_id: node.nodeId, state: "inconsistent", size: held }),
    ]);
    expect(report.nodes[0]?.root).not.toBe(report.nodes[0]?.ours);

    const next = await a.berth("place", a.pkgDir, "--name", `${name}d`);
    expect(next.code).not.toBe(0);
    expect(next.stdout + next.stderr).toMatch(/witness/);
    expect(liveAgents(`${name}d`)).toEqual([]);
    const refused = witnessRefusals(node);
    if (process.env.BERTH_TEST_SHOW_REFUSALS)
      process.stderr.write(
        `place: ${next.stdout}${next.stderr}\nnode: ${String(refused[0]?.payload.reason)}\nconsistency: ${consistency.stdout}\n`,
      );
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]?.payload.reason).toMatch(
      new RegExp(`does not extend the one this node holds, tree size ${held} .*rewritten or forked`),
    );
    // The node still holds the old head: nothing it accepted moved.
    expect(node.events({ kind: "controller.checkpoint" }).length).toBe(accepted.length);
    expect(node.verifyChain().ok).toBe(true);
  });

  it("two stores restored from one backup diverge: a node that followed one refuses the other", async () => {
    const a = await cliHome("berth-witness-a-");
    const spec = { controllers: [a.controllerKey], signers: [a.signer.publicKey], permits: [TEST_PERMIT] };
    const [n1, n2] = await Promise.all([NodeProcess.create(spec), NodeProcess.create(spec)]);
    await ok(a, "nodes", "add", n1.address, "--tier", "paired");
    const name = `f${process.pid}`;
    await ok(a, "audit", "checkpoint");
    const backup = join(a.home, "..", `${name}-backup.db`);
    await ok(a, "backup", backup);
    const b = await homeFromBackup(a, backup);

    // A goes on and n1 follows it.
    await ok(a, "place", a.pkgDir, "--name", `${name}a`, "--pin", n1.nodeId);
    await ok(a, "audit", "checkpoint");
    await ok(a, "place", a.pkgDir, "--name", `${name}a2`, "--pin", n1.nodeId);
    // B diverges from the same backup and n2 follows it.
    await ok(b, "nodes", "add", n2.address, "--tier", "paired");
    await ok(b, "audit", "checkpoint");
    await ok(b, "place", b.pkgDir, "--name", `${name}b`, "--pin", n2.nodeId);
    await ok(b, "audit", "checkpoint");
    await ok(b, "place", b.pkgDir, "--name", `${name}b2`, "--pin", n2.nodeId);

    // Each node refuses the other history, under the same key and the same store id.
    const fromB = await b.berth("place", b.pkgDir, "--name", `${name}x`, "--pin", n1.nodeId);
    expect(fromB.code).not.toBe(0);
    expect(fromB.stdout + fromB.stderr).toMatch(/witness/);
    await ok(a, "nodes", "add", n2.address, "--tier", "paired");
    const fromA = await a.berth("place", a.pkgDir, "--name", `${name}y`, "--pin", n2.nodeId);
    expect(fromA.code).not.toBe(0);
    expect(fromA.stdout + fromA.stderr).toMatch(/witness/);
    expect(liveAgents(`${name}x`)).toEqual([]);
    expect(liveAgents(`${name}y`)).toEqual([]);
    const seen = JSON.parse((await b.berth("audit", "witnesses", "--json")).stdout) as Witnesses;
    expect(seen.nodes.find((n) => n.node_id === n1.nodeId)?.state).toMatch(/^(inconsistent|ahead_of_this_store)$/);
    expect(seen.nodes.find((n) => n.node_id === n2.nodeId)?.state).toBe("consistent");
    for (const n of [n1, n2]) {
      if (process.env.BERTH_TEST_SHOW_REFUSALS)
        process.stderr.write(`${n.nodeId}: ${String(witnessRefusals(n)[0]?.payload.reason)}\n`);
      const refused = witnessRefusals(n);
      expect(refused.length, `witness refusals on ${n.nodeId}`).toBeGreaterThan(0);
      expect(refused[0]?.payload.reason).toMatch(
        /the controller's history was (rewritten|rolled back or forked|rewritten or forked)/,
      );
      expect(n.events({ kind: "controller.bind" })).toHaveLength(1);
      expect(n.verifyChain().ok).toBe(true);
    }
  });
});
