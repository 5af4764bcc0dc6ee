/**
 * Issue 12 "Also": revocation ids are compared case-insensitively. An uppercase package id (or signer key) in a node's
 * revocations.json revokes, on a real daemon: the place is refused and nothing runs.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, requireBuild, TestController } from "../mesh/harness.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(requireBuild);
afterEach(cleanup);

describe("revocations name hex ids in any case", () => {
  it("an uppercase package id or signer key in revocations.json revokes", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const pkg = makePackage(signer);
    const other = makePackage(signer, { name: "other" });
    const revocations = {
      generation: 1,
      subjects: [{ kind: "package", id: pkg.packageId.toUpperCase(), reason: "bad build", at_ms: 0 }],
    };
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      revocations,
    });
    const r = await ctl.place(node, pkg.dir);
    expect(r).toMatchObject({ kind: "refused", code: "verify" });
    expect((r as { reason: string }).reason).toContain("is revoked: bad build");
    expect(readdirSync(join(node.dataDir, "instances"))).toEqual([]);
    // The same node with the signer revoked in uppercase refuses the signer's other package too.
    const bySigner = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      revocations: {
        generation: 1,
        subjects: [{ kind: "signer", id: signer.publicKey.toUpperCase(), reason: "key lost", at_ms: 0 }],
      },
    });
    const r2 = await ctl.place(bySigner, other.dir);
    expect(r2).toMatchObject({ kind: "refused", code: "verify" });
    expect((r2 as { reason: string }).reason).toContain("is revoked: key lost");
  });
});
