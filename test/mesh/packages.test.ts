/**
 * Nothing unverified runs (I6): the node verifies the package it fetched over the request's connection against its
 * own trusted signers, its revocations and the pinned sizes and hashes, before anything is materialised or run.
 */
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import type { CallResult } from "../../src/mesh/client/node-client.js";
import { buildPackage, readEnvelope } from "../../src/mesh/packages/dir.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NodeProcess,
  ok,
  processesWithEnv,
  requireBuild,
  rowsOf,
  TestController,
  waitFor,
} from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

beforeAll(requireBuild);
afterEach(cleanup);

async function expectRefusedBeforeAnythingRuns(
  node: NodeProcess,
  ctl: TestController,
  r: CallResult,
  code: string,
  reasonPart: string,
  decisionId: string,
) {
  expect(r).toMatchObject({ kind: "refused", code });
  expect((r as { reason: string }).reason).toContain(reasonPart);
  expect(rowsOf(await ctl.status(node))).toEqual([]);
  expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  expect(readdirSync(join(node.dataDir, "instances"))).toEqual([]);
  expect(node.events({ source: "runtime", kind: "workload.load" })).toEqual([]);
}

describe("package verification on the node", () => {
  it("refuses a file changed after signing (same size, one byte) as verify and stores nothing", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    writeFileSync(join(pkg.dir, "run.sh"), "#!/bin/sh\necho placed-OK\nexec sleep 30\n");
    const decisionId = ctl.decisionId();
    const r = await ctl.place(node, pkg.dir, { decisionId, unchecked: true });
    await expectRefusedBeforeAnythingRuns(node, ctl, r, "verify", "does not match the pinned", decisionId);
    expect(readdirSync(join(node.dataDir, "store", "sha256"))).toEqual([]);
  });

  it("refuses a file longer or shorter than its pinned size as verify", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const longer = makePackage(signer);
    appendFileSync(join(longer.dir, "run.sh"), "# trailing bytes\n");
    const d1 = ctl.decisionId();
    await expectRefusedBeforeAnythingRuns(
      node,
      ctl,
      await ctl.place(node, longer.dir, { decisionId: d1, unchecked: true }),
      "verify",
      "larger than its pinned size",
      d1,
    );
    const shorter = makePackage(signer);
    writeFileSync(join(shorter.dir, "run.sh"), "#!/bin/sh\n");
    const d2 = ctl.decisionId();
    await expectRefusedBeforeAnythingRuns(
      node,
      ctl,
      await ctl.place(node, shorter.dir, { decisionId: d2, unchecked: true }),
      "verify",
      "shorter than its pinned size",
      d2,
    );
  });

  it("refuses an unsigned package and one signed only by a signer the node does not trust", async () => {
    const ctl = new TestController();
    const trusted = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [trusted.publicKey],
      permits: ALLOW_ALL,
    });
    const d1 = ctl.decisionId();
    await expectRefusedBeforeAnythingRuns(
      node,
      ctl,
      await ctl.place(node, makePackage(null).dir, { decisionId: d1 }),
      "verify",
      "unsigned",
      d1,
    );
    const d2 = ctl.decisionId();
    await expectRefusedBeforeAnythingRuns(
      node,
      ctl,
      await ctl.place(node, makePackage(generateSigningKey()).dir, { decisionId: d2 }),
      "verify",
      "not signed by a trusted signer",
      d2,
    );
  });

  it("refuses a package whose signer, package id or file hash the node has revoked", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const fileHash = readEnvelope(pkg.dir).envelope.statement.files[0]?.sha256 as string;
    for (const [kind, id, words] of [
      ["signer", signer.publicKey, "signer"],
      ["package", pkg.packageId, "package"],
      ["file", fileHash, "file"],
    ] as const) {
      node.writePolicy("revocations.json", {
        generation: 1,
        subjects: [{ kind, id, reason: "compromised", at_ms: 1 }],
      });
      const d = ctl.decisionId();
      await expectRefusedBeforeAnythingRuns(
        node,
        ctl,
        await ctl.place(node, pkg.dir, { decisionId: d }),
        "verify",
        `${words} '${id}' is revoked: compromised`,
        d,
      );
    }
    // an unreadable revocation list fails closed
    node.writePolicy("revocations.json", "{ not json");
    const d = ctl.decisionId();
    await expectRefusedBeforeAnythingRuns(
      node,
      ctl,
      await ctl.place(node, pkg.dir, { decisionId: d }),
      "verify",
      "revocation list unreadable",
      d,
    );
    expect(node.events({ source: "trust", kind: "policy.load" }).some((e) => e.payload.ok === false)).toBe(true);
  });

  it("tears down a running instance when its signer is revoked afterwards (forced, not gated)", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      extraArgs: ["--sweep-ms", "50"],
    });
    const pkg = makePackage(signer);
    const decisionId = ctl.decisionId();
    expect((await ctl.place(node, pkg.dir, { decisionId })).kind).toBe("ok");
    node.writePolicy("revocations.json", {
      generation: 1,
      subjects: [{ kind: "signer", id: signer.publicKey, reason: "leaked", at_ms: 1 }],
    });
    await expect
      .poll(() => node.events({ source: "node", kind: "workload.unload", phase: "forced" }).length, { timeout: 10_000 })
      .toBe(1);
    expect(rowsOf(await ctl.status(node))).toEqual([]);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  });

  it("refuses a variant the statement does not have as invalid_request", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const { PackageDirSource } = await import("../../src/mesh/client/package-source.js");
    const source = new PackageDirSource(pkg.dir);
    const r = await ctl.client.call(
      node.target(),
      "place",
      {
        package_id: source.packageId,
        name: "probe",
        variant: "riscv-linux",
        config: { mode: "service", args: [], env: {} },
      },
      { decisionId: ctl.decisionId(), package: source },
    );
    expect(r).toMatchObject({ kind: "refused", code: "invalid_request" });
    expect(buildPackage(pkg.dir).packageId).toBe(pkg.packageId);
  });
});

describe("the node's content store (issue 12)", () => {
  it("re-verifies a stored file before reuse: a copy changed on disk (same size) is fetched again and only the signed bytes run", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer);
    const first = ok(await ctl.place(node, pkg.dir));
    ok(await ctl.verb(node, "unload", { instance_id: first.instance_id as string }));
    const [stored] = readdirSync(join(node.dataDir, "store", "sha256")).filter((f) => !f.startsWith("."));
    const storedPath = join(node.dataDir, "store", "sha256", stored as string);
    // SD-card rot or a local writer: same size, different bytes (it would print placed-XX).
    writeFileSync(storedPath, readFileSync(storedPath, "utf8").replace("placed-ok", "placed-XX"));
    const second = ok(await ctl.place(node, pkg.dir));
    const id = second.instance_id as string;
    const stdout = await waitFor(() => {
      const text = readFileSync(join(node.dataDir, "instances", id, "stdout.log"), "utf8");
      return text.length > 0 ? text : undefined;
    }, "the instance's first output");
    expect(stdout).toBe("placed-ok\n");
    expect(readFileSync(join(node.dataDir, "instances", id, "work", "run.sh"), "utf8")).toContain("placed-ok");
    expect(readFileSync(storedPath, "utf8")).toContain("placed-ok");
  });
});
