/**
 * Issue 38's interop: the proofs and the checkpoint note berth prints verify with an implementation that is not
 * berth's, golang.org/x/mod/sumdb/tlog and sumdb/note (tools/tlog-verify, a small Go program built from the Go module
 * proxy by tools/tlog-verify/build.sh; scripts/test builds it). In CI the test must run; elsewhere it is skipped only
 * when the binary was not built.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain } from "../../src/chain/chain.js";
import { consistencyProof, inclusionProof, leafHash, treeRoot } from "../../src/core/chain/merkle.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";

const TOOL = resolve("tools/tlog-verify/bin/tlog-verify");
const available = existsSync(TOOL);
if (process.env.CI === "true" && !available)
  throw new Error(`${TOOL} is missing: scripts/test builds it (tools/tlog-verify/build.sh)`);

function goVerify(doc: unknown): { code: number | null; out: string } {
  const r = spawnSync(TOOL, [], { input: JSON.stringify(doc), encoding: "utf8", timeout: 30_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** The verifier key sumdb/note reads: name+hash+base64(0x01 ‖ Ed25519 public key). */
function verifierKey(name: string, publicKeyHex: string): string {
  const blob = Buffer.concat([Buffer.from([1]), Buffer.from(publicKeyHex, "hex")]);
  const hash = createHash("sha256").update(`${name}\n`).update(blob).digest().subarray(0, 4).toString("hex");
  return `${name}+${hash}+${blob.toString("base64")}`;
}

const b64 = (h: Buffer) => h.toString("base64");

describe.skipIf(!available)("berth's Merkle proofs verify with golang.org/x/mod/sumdb/tlog (issue 38)", () => {
  let dir: string;
  let dbPath: string;
  let keyFile: string;
  let key: ReturnType<typeof generateSigningKey>;
  const berth = (...args: string[]) => runNode([berthBin(), ...args], { env: { BERTH_HOME: dir } });
  const append = (count: number) => {
    const db = openDatabase(dbPath);
    const chain = Chain.open(db, key, "controller");
    for (let i = 0; i < count; i++)
      withWriteTx(db, (tx) => chain.append(tx, { source: "placement", kind: "workload.place", payload: { i } }));
    db.close();
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "berth-tlog-interop-"));
    dbPath = join(dir, "controller.db");
    keyFile = join(dir, "controller.key");
    key = generateSigningKey();
    saveKeyFile(keyFile, key);
    append(40);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the exported checkpoint note, an inclusion proof and a consistency proof printed by the CLI all verify in Go", async () => {
    const exported = await berth("audit", "checkpoint", "--db", dbPath, "--key-file", keyFile, "--export");
    expect(exported.code, exported.stderr).toBe(0);
    const notePath = join(dir, "cp.txt");
    writeFileSync(notePath, exported.stdout);
    const origin = exported.stdout.split("\n")[0] as string;
    append(13);
    const prove = await berth("audit", "prove", "17", "--db", dbPath, "--pubkey", key.publicKey);
    expect(prove.code, prove.stderr).toBe(0);
    const consistency = await berth(
      "audit",
      "consistency",
      "--old",
      notePath,
      "--db",
      dbPath,
      "--pubkey",
      key.publicKey,
    );
    expect(consistency.code, consistency.stderr).toBe(0);
    const doc = {
      note: exported.stdout,
      vkey: verifierKey(origin, key.publicKey),
      inclusion: JSON.parse(prove.stdout),
      consistency: JSON.parse(consistency.stdout),
    };
    const r = goVerify(doc);
    expect(r.out).toBe("ok note\nok inclusion\nok consistency\n");
    expect(r.code).toBe(0);

    // The Go side can fail: one flipped proof hash, a note signed by another key, a wrong leaf index.
    const inclusion = JSON.parse(prove.stdout) as { path: string[]; leaf_index: number };
    const flipped = {
      ...doc,
      inclusion: { ...inclusion, path: [b64(createHash("sha256").update("x").digest()), ...inclusion.path.slice(1)] },
    };
    expect(goVerify(flipped)).toMatchObject({ code: 1, out: expect.stringMatching(/FAIL inclusion/) });
    expect(goVerify({ ...doc, vkey: verifierKey(origin, generateSigningKey().publicKey) })).toMatchObject({
      code: 1,
      out: expect.stringMatching(/FAIL note/),
    });
    expect(goVerify({ inclusion: { ...inclusion, leaf_index: 18 } })).toMatchObject({
      code: 1,
      out: expect.stringMatching(/FAIL inclusion/),
    });
  });

  it("inclusion and consistency proofs from core/chain/merkle.ts verify in Go for random tree sizes", () => {
    const hashes = Array.from({ length: 300 }, (_, i) => createHash("sha256").update(`e${i}`).digest("hex"));
    const leaves = hashes.map(leafHash);
    const cases = fc.sample(
      fc
        .integer({ min: 1, max: 300 })
        .chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n - 1 }), fc.integer({ min: 1, max: n }))),
      { numRuns: 40, seed: 38 },
    );
    for (const [n, index, old] of cases) {
      const root = treeRoot(leaves, n);
      const r = goVerify({
        inclusion: {
          tree_size: n,
          root: b64(root),
          leaf_index: index,
          event_hash: hashes[index],
          path: inclusionProof(leaves, index, n).map(b64),
        },
        consistency: {
          old: { tree_size: old, root: b64(treeRoot(leaves, old)) },
          new: { tree_size: n, root: b64(root) },
          proof: consistencyProof(leaves, old, n).map(b64),
        },
      });
      expect(r.out, `n ${n} index ${index} old ${old}`).toBe("ok inclusion\nok consistency\n");
    }
  });
});
