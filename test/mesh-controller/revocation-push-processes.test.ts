/**
 * Issue 33 item 6, revocation reaches every node, with real `berth node serve` daemons: `berth revoke` / `unrevoke`
 * (the controller's `revoke`) sign a sequenced list and push it to every node the controller knows, judged from
 * /proc (the revoked agent's processes), the nodes' own chains and pushed files (read read-only), and the
 * controller's answers and explain:
 *
 * - a reachable node takes the list at once, chains each subject, and stops what it revokes;
 * - a node cut off meanwhile is reported behind; once it answers again it gets the latest list at its next contact,
 *   and until it has it no placement goes there (the dry run's explain says why);
 * - a node never goes back to an older list.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { waitFor } from "../mesh/harness.js";
import { liveAgents } from "../support/live-agents.js";
import { cleanupProcesses, processFixture } from "./support/processes.js";

vi.setConfig({ testTimeout: 120_000 });

afterEach(async () => {
  await cleanupProcesses();
});

const LONG_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 600\n";
const NAME = `revoked${process.pid}`;
const operator = { user: "test", via: "berth revoke" };

/** A node's chain events of a kind, read read-only from its node.db. */
function nodeEvents(dataDir: string, kind: string): JsonObject[] {
  const db = new Database(join(dataDir, "node.db"), { readonly: true });
  try {
    return (
      db.prepare("SELECT payload FROM audit_event WHERE kind = ? ORDER BY seq").all(kind) as Array<{ payload: string }>
    ).map((r) => JSON.parse(r.payload) as JsonObject);
  } finally {
    db.close();
  }
}

describe("revocation reaches every node (real daemons)", () => {
  it("a revoke is pushed to every node: the reachable one stops the revoked agent; the cut-off one gets the latest list at its next contact and takes no placement before", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = fx.controller;
    expect((await ctl.addTarget(fx.proxy.address, "paired")).ok).toBe(true);
    expect((await ctl.addTarget(fx.second.address, "paired")).ok).toBe(true);
    const placed = await ctl.place({
      package: fx.pkgDir,
      name: NAME,
      config: { mode: "service" },
      pin: fx.second.nodeId,
    });
    expect(placed.placed?.node_id, placed.explain).toBe(fx.second.nodeId);
    const packageId = placed.placed!.package_id;
    await waitFor(() => liveAgents(NAME).length > 0, "the agent running");
    await fx.proxy.cut();

    const revoked = await ctl.revoke({ revoke: true, kind: "package", id: packageId, reason: "a bad build", operator });
    expect(revoked.ok).toBe(true);
    if (!revoked.ok) return;
    expect(revoked.value.generation).toBe(1);
    expect(revoked.value.nodes).toEqual(
      expect.arrayContaining([
        { node: fx.second.nodeId, kind: "pushed", generation: 1, changed: true },
        expect.objectContaining({ node: fx.first.nodeId, kind: "behind", held: 0, wanted: 1 }),
      ]),
    );
    // The reachable node chained the subject and stopped what it revokes, at once (not at its 60 s sweep).
    expect(nodeEvents(fx.second.dataDir, "workload.revoke")).toEqual([
      expect.objectContaining({
        subject_kind: "package",
        subject: packageId,
        generation: 1,
        controller: ctl.controllerId,
      }),
    ]);
    await waitFor(() => liveAgents(NAME).length === 0, "the revoked agent stopped by its node", 30_000);
    expect(await ctl.store.events({ kind: "workload.revoke" })).toEqual([
      expect.objectContaining({ subject_kind: "package", subject: packageId, generation: 1, reason: "a bad build" }),
    ]);

    const lifted = await ctl.revoke({
      revoke: false,
      kind: "package",
      id: packageId,
      reason: "rebuilt and checked",
      operator,
    });
    expect(lifted.ok && lifted.value.generation).toBe(2);
    expect(nodeEvents(fx.second.dataDir, "workload.unrevoke")).toEqual([
      expect.objectContaining({ subject: packageId, generation: 2 }),
    ]);

    // The cut-off node answers again: until it holds generation 2 it takes no placement (a dry run sends nothing).
    await fx.proxy.heal();
    const dry = await ctl.place({
      package: fx.pkgDir,
      name: `${NAME}b`,
      config: { mode: "service" },
      prefer: [fx.first.nodeId],
      dry_run: true,
    });
    expect(dry.decision.placement?.node_id).toBe(fx.second.nodeId);
    expect(dry.explain).toContain("this node holds revocation list 0, the controller's is 2");
    // Its next contact (this placement's) brings it the list first; then it may take the placement.
    const after = await ctl.place({
      package: fx.pkgDir,
      name: `${NAME}b`,
      config: { mode: "service" },
      prefer: [fx.first.nodeId],
    });
    expect(after.placed?.node_id, after.explain).toBe(fx.first.nodeId);
    const pushedFile = JSON.parse(
      readFileSync(join(fx.first.dataDir, "revocations.pushed", `${ctl.controllerId}.json`), "utf8"),
    ) as { generation: number };
    expect(pushedFile.generation).toBe(2);

    // A node never goes back to an older list, whoever signs it.
    const client = new NodeClient({
      key: fx.key,
      connector: new TlsConnector({ identity: fx.key, connectTimeoutMs: 2_000 }),
      timeoutMs: 5_000,
      authority: () => ctl.authority.current(),
    });
    const older = await client.call(
      fx.second.target(),
      "revocations",
      { generation: 1, subjects: [] },
      { decisionId: "e".repeat(64) },
    );
    expect(older).toMatchObject({ kind: "refused", code: "precondition_failed" });
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });
});
