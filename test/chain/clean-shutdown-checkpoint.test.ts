/**
 * spec/audit-chain.md §10: the long-lived components — the API server (controller chain) and a node daemon (node chain) —
 * write a checkpoint at clean shutdown, so the next start-up check begins at the head they left, not at genesis.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { initNodeDataDir } from "../../src/mesh/node/init.js";
import { startServer } from "../../src/server/server.js";

const root = mkdtempSync(join(tmpdir(), "berth-shutdown-checkpoint-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The newest checkpoint, the chain's head, and the kind of the head event. */
function checkpointState(dbPath: string) {
  const db = new Database(dbPath, { readonly: true });
  try {
    const checkpoint = db.prepare("SELECT seq FROM audit_checkpoint ORDER BY seq DESC LIMIT 1").get() as
      | { seq: number }
      | undefined;
    const head = db.prepare("SELECT seq, kind FROM audit_event ORDER BY seq DESC LIMIT 1").get() as {
      seq: number;
      kind: string;
    };
    return { checkpoint: checkpoint?.seq ?? null, head };
  } finally {
    db.close();
  }
}

describe("a checkpoint at clean shutdown", () => {
  it("is written by the API server for the controller chain, covering everything before it", async () => {
    const dir = join(root, "server");
    const server = await startServer({ dataDir: dir, port: 0 });
    const answer = await fetch(`${server.url}/api/v1/nodes`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({}),
    });
    expect(answer.status, "a refused call is still chained as its api.call pair").toBe(400);
    await server.close();
    const { checkpoint, head } = checkpointState(join(dir, "controller.db"));
    // The checkpoint covers the event before its own chain.checkpoint record, which is the head.
    expect(head.kind).toBe("chain.checkpoint");
    expect(checkpoint).toBe(head.seq - 1);
  });

  it("is written by a node daemon for its chain, at every clean shutdown after new events", async () => {
    const dataDir = join(root, "node");
    initNodeDataDir(dataDir, { controllers: [generateSigningKey().publicKey], signers: [], permits: [], board: "pi5" });
    await (await NodeDaemon.start({ dataDir, listen: null, version: "test" })).close();
    const first = checkpointState(join(dataDir, "node.db"));
    expect(first.head.kind).toBe("chain.checkpoint");
    expect(first.checkpoint).toBe(first.head.seq - 1);
    // A restart appends node.boot, so its shutdown checkpoints again; the checkpoint always covers what came before.
    await (await NodeDaemon.start({ dataDir, listen: null, version: "test" })).close();
    const second = checkpointState(join(dataDir, "node.db"));
    expect(second.checkpoint).toBe(second.head.seq - 1);
    expect(second.checkpoint).toBeGreaterThan(first.checkpoint ?? 0);
  });
});
