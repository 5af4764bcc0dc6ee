/**
 * Issue 35: concurrent placements through `POST /api/v1/placements` never make two copies of one name. Many
 * requests for the same name race on one `berth serve` (in process, real listener) with two real node daemons; the
 * verdict is judged from outside: the answers, the controller's store opened read-only (placements, decisions and
 * the chain), and the instances the nodes hold, read through a signed status call.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifyStoredChain } from "../../src/chain/chain.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { startServer } from "../../src/server/server.js";
import { controllerKeyPath } from "../../src/server/state.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { cleanup, NodeProcess, requireBuild } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "./support/package.js";

const dirs: string[] = [];
afterEach(async () => {
  await cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("concurrent placements of one name through the API", () => {
  it("place exactly one instance; every other request is refused as name_taken or answered for that one placement", async () => {
    requireBuild();
    const dir = mkdtempSync(join(tmpdir(), "berth-same-name-"));
    dirs.push(dir);
    const key = generateSigningKey();
    const signer = generateSigningKey();
    saveKeyFile(controllerKeyPath(dir), key);
    const pkgDir = join(dir, "pkg");
    const packageId = probePackage(pkgDir, signer);
    writeJson(join(dir, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
    writeJson(join(dir, "permits.json"), [TEST_PERMIT]);
    const nodes = await Promise.all(
      [0, 1].map(() =>
        NodeProcess.create({ controllers: [key.publicKey], signers: [signer.publicKey], permits: [TEST_PERMIT] }),
      ),
    );
    const server = await startServer({ dataDir: dir, port: 0 });
    let answers: Array<{
      status: number;
      body: { error?: { code?: string }; placed?: { instance_id: string } | null };
    }>;
    try {
      for (const n of nodes) expect((await server.state.controller.addTarget(n.address, "paired")).ok).toBe(true);
      expect((await server.state.controller.registerPackage(pkgDir)).ok).toBe(true);
      answers = await Promise.all(
        Array.from({ length: 12 }, async () => {
          const r = await fetch(`${server.url}/api/v1/placements`, {
            method: "POST",
            headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
            body: JSON.stringify({ package: packageId, name: "only-one" }),
          });
          return {
            status: r.status,
            body: (await r.json()) as { error?: { code?: string }; placed?: { instance_id: string } | null },
          };
        }),
      );
    } finally {
      await server.close();
    }

    const placed = answers.filter((a) => a.status === 201 && a.body.placed);
    expect(placed.length, JSON.stringify(answers.map((a) => [a.status, a.body.error?.code]))).toBe(1);
    // Every other answer refuses the name (409) or reports the one placement made (an idempotent answer).
    for (const a of answers.filter((x) => !placed.includes(x))) {
      if (a.status === 409) expect(a.body.error?.code).toBe("name_taken");
      else expect(a.body.placed?.instance_id).toBe(placed[0]?.body.placed?.instance_id);
    }

    // The store, opened read-only: one placement of the name, at most one decision of it ever dispatched, a chain
    // that verifies.
    const db = openDatabase(join(dir, "controller.db"), { readonly: true });
    try {
      const rows = db
        .prepare("SELECT instance_id, node_id FROM mesh_placements WHERE name = ?")
        .all("only-one") as Array<{ instance_id: string; node_id: string }>;
      expect(rows).toHaveLength(1);
      expect(rows[0]?.instance_id).toBe(placed[0]?.body.placed?.instance_id);
      const dispatched = db.prepare("SELECT COUNT(*) AS n FROM mesh_decisions WHERE name = ?").get("only-one") as {
        n: number;
      };
      expect(dispatched.n).toBe(1);
      const chainId = (db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string })
        .chain_id;
      expect(verifyStoredChain(db, chainId, { key: key.publicKey }).ok).toBe(true);
    } finally {
      db.close();
    }
    // The nodes, their stores opened read-only: one instance of the name across both.
    const held = nodes.flatMap((n) => {
      const nodeDb = openDatabase(join(n.dataDir, "node.db"), { readonly: true });
      try {
        return nodeDb.prepare("SELECT instance_id FROM node_instance WHERE name = ?").all("only-one") as Array<{
          instance_id: string;
        }>;
      } finally {
        nodeDb.close();
      }
    });
    expect(held.map((h) => h.instance_id)).toEqual([placed[0]?.body.placed?.instance_id]);
  });
});
