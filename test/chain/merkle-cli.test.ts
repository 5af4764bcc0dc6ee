/**
 * Issue 38 from outside: the Merkle checkpoint a user exports and publishes catches what single-chain verification
 * cannot, a tail rewritten and re-signed with the owner's own (stolen) key. Judged by the CLI's own answers on a
 * controller database; the proofs it prints are checked here with the RFC 9162 verifiers.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain } from "../../src/chain/chain.js";
import { leafHash, verifyConsistency, verifyInclusion } from "../../src/core/chain/merkle.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";
import { rewriteChainTail } from "../support/rewrite-chain.js";

let dir: string;
let dbPath: string;
let keyFile: string;
let publicKey: string;
let stolen: ReturnType<typeof generateSigningKey>;
const berth = (...args: string[]) => runNode([berthBin(), ...args], { env: { BERTH_HOME: dir } });
const b64 = (s: string) => Buffer.from(s, "base64");

function appendEvents(path: string, from: number, count: number): void {
  const db = openDatabase(path);
  const chain = Chain.open(db, stolen, "controller");
  for (let i = from; i < from + count; i++)
    withWriteTx(db, (tx) =>
      chain.append(tx, { source: "placement", kind: "workload.place", payload: { phase: "decision", i } }),
    );
  db.close();
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "berth-merkle-cli-"));
  dbPath = join(dir, "controller.db");
  keyFile = join(dir, "keys", "controller.key");
  stolen = generateSigningKey();
  publicKey = stolen.publicKey;
  saveKeyFile(keyFile, stolen);
  appendEvents(dbPath, 0, 30); // genesis + 30: seq 0..30
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Merkle checkpoints over the audit chain (issue 38)", () => {
  let notePath: string;

  it("checkpoint --export prints a signed tlog checkpoint note of the whole chain, its own chain.checkpoint event included", async () => {
    const r = await berth("audit", "checkpoint", "--db", dbPath, "--key-file", keyFile, "--export");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^berth\/audit\/[0-9a-f]{32}\n32\n[A-Za-z0-9+/]{43}=\n\n\u2014 berth\/audit\/[0-9a-f]{32} [A-Za-z0-9+/=]{92}\n$/,
    );
    notePath = join(dir, "checkpoint.txt");
    writeFileSync(notePath, r.stdout);
    appendEvents(dbPath, 30, 5); // the chain grows past the exported tree (seq 0..31): seq 0..36
  });

  it("prove prints an inclusion proof that verifies against the printed root", async () => {
    const r = await berth("audit", "prove", "7", "--db", dbPath, "--pubkey", publicKey);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      tree_size: number;
      root: string;
      leaf_index: number;
      event_hash: string;
      path: string[];
    };
    expect(doc).toMatchObject({ tree_size: 37, leaf_index: 7 });
    expect(verifyInclusion(leafHash(doc.event_hash), 7, 37, doc.path.map(b64), b64(doc.root))).toBe(true);
    const out = await berth("audit", "prove", "37", "--db", dbPath);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/seq 37 is not in this chain \(it holds seq 0\.\.36\)/);
  });

  it("an intact chain that grew extends the exported checkpoint, with a consistency proof that verifies", async () => {
    const v = await berth("audit", "verify", "--db", dbPath, "--pubkey", publicKey, "--against", notePath);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    expect(v.stdout).toMatch(
      /^ok chain [0-9a-f]{32} events 37 head 36:[0-9a-f]{64} checkpoints 1 extends tree size 32 root /,
    );
    const c = await berth("audit", "consistency", "--old", notePath, "--db", dbPath, "--pubkey", publicKey);
    expect(c.code, c.stderr).toBe(0);
    const doc = JSON.parse(c.stdout) as {
      ok: boolean;
      old: { tree_size: number; root: string };
      new: { tree_size: number; root: string };
      proof: string[];
    };
    expect(doc).toMatchObject({ ok: true, old: { tree_size: 32 }, new: { tree_size: 37 } });
    expect(verifyConsistency(32, 37, doc.proof.map(b64), b64(doc.old.root), b64(doc.new.root))).toBe(true);
  });

  it("a tail of 10 events rewritten and re-signed with the stolen key passes single-chain verify but fails against the exported checkpoint", async () => {
    const copy = join(dir, "rewritten.db");
    const src = openDatabase(dbPath);
    src.exec(`VACUUM INTO '${copy}'`);
    src.close();
    const db = openDatabase(copy);
    const { chain_id } = db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string };
    const total = (db.prepare("SELECT COUNT(*) AS n FROM audit_event").get() as { n: number }).n;
    // seq 27..36; the exported tree covers seq 0..31. The thief also drops the stored checkpoints that would name the
    // old heads and signs the chained notes again: they hold the database and the key.
    rewriteChainTail(db, chain_id, total - 10, stolen);
    db.close();

    const single = await berth("audit", "verify", "--db", copy, "--pubkey", publicKey);
    expect(single.code, `single-chain verify still passes: ${single.stdout}`).toBe(0);
    expect(single.stdout).toMatch(/^ok chain [0-9a-f]{32} events 37 /);

    const against = await berth("audit", "verify", "--db", copy, "--pubkey", publicKey, "--against", notePath);
    expect(against.code).toBe(1);
    expect(against.stdout).toMatch(
      /^FAIL chain [0-9a-f]{32} seq 31 fork: .*checkpoint\.txt: the chain does not extend the exported checkpoint: at tree size 32 the checkpoint's root is [A-Za-z0-9+/]{43}=, the chain's first 32 events hash to [A-Za-z0-9+/]{43}=/,
    );
    const json = await berth("audit", "verify", "--db", copy, "--pubkey", publicKey, "--against", notePath, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, failure: { seq: 31, code: "fork" } });

    const consistency = await berth("audit", "consistency", "--old", notePath, "--db", copy, "--pubkey", publicKey);
    expect(consistency.code).toBe(1);
    expect(consistency.stdout).toMatch(
      /^FAIL chain [0-9a-f]{32} fork: the chain does not extend the exported checkpoint: at tree size 32/,
    );
  });

  it("refuses a checkpoint note that the pinned key did not sign", async () => {
    const other = generateSigningKey();
    const r = await berth("audit", "verify", "--db", dbPath, "--pubkey", other.publicKey, "--against", notePath);
    // The chain itself fails first under another key (genesis); pinned to the owner, a forged note is refused.
    expect(r.code).toBe(1);
    const forged = join(dir, "forged.txt");
    const { signCheckpointNote, openCheckpointNote } = await import("../../src/core/chain/note.js");
    const opened = openCheckpointNote(readFileSync(notePath, "utf8"), publicKey);
    if (!opened.ok) throw new Error(opened.error);
    writeFileSync(forged, signCheckpointNote(other, opened.value));
    const f = await berth("audit", "verify", "--db", dbPath, "--pubkey", publicKey, "--against", forged);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/checkpoint file .*forged\.txt is refused: no signature line is by the key [0-9a-f]{64}/);
  });
});
