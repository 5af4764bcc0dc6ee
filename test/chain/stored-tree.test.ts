/**
 * Issue 38: the store keeps each chain's Merkle tree in the append's transaction (src/chain/tree-store.ts, schema v3)
 * and chains every checkpoint with its C2SP note. Judged from outside the writer: the stored tree is read through a
 * fresh connection and compared with a reference RFC 6962 computation over the stored event hashes
 * (core/chain/merkle.ts's list functions, which rehash every leaf), on SQLite (node daemon, Kubernetes provider,
 * a home) and on both engines of the controller's store; the CLI's `berth audit verify` catches an altered stored node
 * and a chained note that does not match the tree.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain, type EventRow, rowToEvent } from "../../src/chain/chain.js";
import { EngineChain } from "../../src/chain/engine-chain.js";
import { CHAIN_SCHEMA_VERSION } from "../../src/chain/schema.js";
import { StoredChainTree } from "../../src/chain/tree-reader.js";
import { onStoredTree } from "../../src/chain/tree-store.js";
import { sealEvent } from "../../src/core/chain/event.js";
import { consistencyProof, inclusionProof, leafHash, treeRoot } from "../../src/core/chain/merkle.js";
import { checkpointOrigin, openCheckpointNote, signCheckpointNote } from "../../src/core/chain/note.js";
import { consistencyProofFrom, treeHeadFrom } from "../../src/core/chain/tree-hashes.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import type { EngineKind } from "../../src/store/engine.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { berthBin } from "../support/built.js";
import { engineHarness } from "../support/engines.js";
import { runNode } from "../support/process.js";

const KEY = signingKeyFromSeed(new Uint8Array(32).fill(38));
const NEVER = { everyEvents: 1_000_000, everyMs: 600_000 };
const harness = engineHarness();

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "berth-stored-tree-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The reference: every stored event hash, in seq order, through a connection of its own. */
function referenceLeaves(path: string): Buffer[] {
  const db = openDatabase(path, { readonly: true });
  try {
    return (db.prepare("SELECT hash FROM audit_event ORDER BY seq").all() as Array<{ hash: string }>).map((r) =>
      leafHash(r.hash),
    );
  } finally {
    db.close();
  }
}

function storedRoot(path: string, size: number): Buffer {
  const db = openDatabase(path, { readonly: true });
  try {
    const { chain_id } = db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string };
    return new StoredChainTree(db, chain_id).root(size);
  } finally {
    db.close();
  }
}

/**
 * The rows of `audit_tree` as stored: every complete subtree from level 4 up is there (one per 2^L events at level L),
 * and each is the reference's hash of the events under it.
 */
function expectStoredRows(path: string, leaves: readonly Buffer[]): void {
  const db = openDatabase(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT level, idx, hash FROM audit_tree").all() as Array<{
      level: number;
      idx: number;
      hash: string;
    }>;
    let expected = 0;
    for (let level = 4; 2 ** level <= leaves.length; level++) expected += Math.floor(leaves.length / 2 ** level);
    expect(rows.length).toBe(expected);
    for (const r of rows)
      expect(r.hash).toBe(treeRoot(leaves.slice(r.idx * 2 ** r.level, (r.idx + 1) * 2 ** r.level)).toString("hex"));
  } finally {
    db.close();
  }
}

let files = 0;

describe("the stored Merkle tree of a SQLite chain (issue 38)", () => {
  it("has the root of RFC 6962 over the event hashes at every size, after appends across transactions and after reopening", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 11 }),
        fc.nat(),
        (batches, reopenAfter, pick) => {
          const path = join(dir, `sync-${files++}.db`);
          let db = openDatabase(path);
          let chain = Chain.open(db, KEY, "node", Date.now, NEVER);
          for (const [b, count] of batches.entries()) {
            withWriteTx(db, (tx) => {
              for (let i = 0; i < count; i++)
                chain.append(tx, { source: "trust", kind: "peer.add", payload: { b, i } });
            });
            if (b === reopenAfter) {
              db.close();
              db = openDatabase(path);
              chain = Chain.open(db, KEY, "node", Date.now, NEVER);
            }
            const leaves = referenceLeaves(path);
            expectStoredRows(path, leaves);
            expect(storedRoot(path, leaves.length).equals(treeRoot(leaves))).toBe(true);
            const size = 1 + (pick % leaves.length);
            expect(storedRoot(path, size).equals(treeRoot(leaves, size))).toBe(true);
          }
          db.close();
        },
      ),
      { numRuns: 25 },
    );
  });

  it("answers inclusion and consistency proofs from the stored tree equal to the reference's, at random sizes", () => {
    const path = join(dir, "proofs.db");
    const db = openDatabase(path);
    const chain = Chain.open(db, KEY, "node", Date.now, NEVER);
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 700; i++) chain.append(tx, { source: "trust", kind: "peer.add", payload: { i } });
    });
    db.close();
    const leaves = referenceLeaves(path);
    expectStoredRows(path, leaves);
    const reader = openDatabase(path, { readonly: true });
    try {
      const tree = new StoredChainTree(reader, chain.chainId);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: leaves.length }), fc.nat(), fc.nat(), (size, a, b) => {
          const index = a % size;
          const old = b % (size + 1);
          expect(tree.inclusion(index, size).map((h) => h.toString("hex"))).toEqual(
            inclusionProof(leaves, index, size).map((h) => h.toString("hex")),
          );
          expect(tree.consistency(old, size).map((h) => h.toString("hex"))).toEqual(
            consistencyProof(leaves, old, size).map((h) => h.toString("hex")),
          );
        }),
        { numRuns: 200 },
      );
    } finally {
      reader.close();
    }
  });

  it("is built once when a store written before the tree (chain schema v2) is opened, with the reference's root", () => {
    const path = join(dir, "v2.db");
    let db = openDatabase(path);
    const chain = Chain.open(db, KEY, "node", Date.now, NEVER);
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 333; i++) chain.append(tx, { source: "trust", kind: "peer.add", payload: { i } });
    });
    db.exec("DROP TABLE audit_tree; UPDATE berth_schema SET version = 2 WHERE component = 'audit'");
    db.close();
    db = openDatabase(path);
    Chain.open(db, KEY, "node", Date.now, NEVER);
    expect(db.prepare("SELECT version FROM berth_schema WHERE component = 'audit'").get()).toEqual({
      version: CHAIN_SCHEMA_VERSION,
    });
    expect(CHAIN_SCHEMA_VERSION).toBe(3);
    db.close();
    const leaves = referenceLeaves(path);
    expectStoredRows(path, leaves);
    expect(storedRoot(path, leaves.length).equals(treeRoot(leaves))).toBe(true);
  });

  it("chains every checkpoint with a C2SP note signed by the owner key over the tree of every event before it", () => {
    const path = join(dir, "notes.db");
    const db = openDatabase(path);
    const chain = Chain.open(db, KEY, "node", Date.now, { everyEvents: 16, everyMs: 600_000 });
    for (let b = 0; b < 7; b++) {
      withWriteTx(db, (tx) => {
        for (let i = 0; i < 13; i++) chain.append(tx, { source: "trust", kind: "peer.add", payload: { b, i } });
      });
    }
    chain.checkpointIfDue(true);
    db.close();
    const reader = openDatabase(path, { readonly: true });
    const events = (reader.prepare("SELECT * FROM audit_event ORDER BY seq").all() as EventRow[]).map(rowToEvent);
    reader.close();
    const notes = events.filter((e) => e.kind === "chain.checkpoint");
    expect(notes.length).toBeGreaterThanOrEqual(6);
    const leaves = events.map((e) => leafHash(e.hash));
    for (const e of notes) {
      const opened = openCheckpointNote(e.payload.note as string, KEY.publicKey);
      expect(opened.ok && opened.value).toMatchObject({ origin: checkpointOrigin(chain.chainId), size: e.seq });
      expect(opened.ok && opened.value.root.equals(treeRoot(leaves, e.seq))).toBe(true);
    }
  });
});

describe.each(["sqlite", "postgres"] as const)(
  "the stored Merkle tree of the controller's store on %s (issue 38)",
  { timeout: 120_000 },
  (kind: EngineKind) => {
    it("has the root and the consistency proofs of RFC 6962 over the event hashes, across transactions and another connection", async () => {
      const engine = await harness.open(kind);
      let chain = await EngineChain.open(engine, KEY, "controller", Date.now, NEVER);
      const batches = fc.sample(fc.integer({ min: 1, max: 37 }), { numRuns: 10, seed: 38 });
      for (const [b, count] of batches.entries()) {
        // Half the batches through a second connection (another process on the store): its frontier is read back.
        const writer = b % 2 === 0 ? engine : await harness.reopen(engine);
        if (writer !== engine) chain = await EngineChain.open(writer, KEY, "controller", Date.now, NEVER);
        await writer.transaction(async (tx) => {
          for (let i = 0; i < count; i++)
            await chain.append(tx, { source: "placement", kind: "workload.place", payload: { b, i } });
        });
        const hashes = await engine.read((q) =>
          q.all<{ hash: string }>("SELECT hash FROM audit_event WHERE chain_id = ? ORDER BY seq", [chain.chainId]),
        );
        const leaves = hashes.map((r) => leafHash(r.hash));
        const n = leaves.length;
        const root = await engine.read((q) => onStoredTree(q, chain.chainId, (read) => treeHeadFrom(read, n)));
        expect(root.equals(treeRoot(leaves))).toBe(true);
        const old = 1 + ((b * 7919) % n);
        const proof = await engine.read((q) =>
          onStoredTree(q, chain.chainId, (read) => consistencyProofFrom(read, old, n)),
        );
        expect(proof.map((h) => h.toString("hex"))).toEqual(
          consistencyProof(leaves, old, n).map((h) => h.toString("hex")),
        );
      }
      const verified = await chain.verifyStored();
      expect(verified.ok, JSON.stringify(verified.failure)).toBe(true);
    });
  },
);

describe("berth audit verify against the stored tree and the chained notes (issue 38)", () => {
  let home: string;
  let publicKey: string;
  let keyFile: string;
  const berth = (...args: string[]) => runNode([berthBin(), ...args], { env: { ...process.env, BERTH_HOME: home } });

  beforeAll(() => {
    home = mkdtempSync(join(dir, "home-"));
    const key = generateSigningKey();
    publicKey = key.publicKey;
    keyFile = join(home, "owner.key");
    saveKeyFile(keyFile, key);
    const db = openDatabase(join(home, "chain.db"));
    const chain = Chain.open(db, key, "node", Date.now, { everyEvents: 50, everyMs: 600_000 });
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 120; i++) chain.append(tx, { source: "trust", kind: "peer.add", payload: { i } });
    });
    db.close();
  });

  function copyOf(name: string): string {
    const copy = join(home, name);
    const src = openDatabase(join(home, "chain.db"));
    src.exec(`VACUUM INTO '${copy}'`);
    src.close();
    return copy;
  }

  it("passes on the chain as written", async () => {
    const ok = await berth("audit", "verify", "--db", join(home, "chain.db"), "--pubkey", publicKey);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
  });

  it("fails a stored tree node altered in place, naming the node and the events under it", async () => {
    const copy = copyOf("tampered-node.db");
    const db = openDatabase(copy);
    db.exec("DROP TRIGGER audit_tree_no_update");
    db.prepare("UPDATE audit_tree SET hash = ? WHERE level = 5 AND idx = 1").run("ab".repeat(32));
    db.close();
    const out = await berth("audit", "verify", "--db", copy, "--pubkey", publicKey, "--json");
    expect(out.code).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: false, failure: { seq: 63, code: "tree" } });
    expect(JSON.parse(out.stdout).failure.detail).toMatch(
      /level 5, index 1 \(events 32\.\.63\) is abab.*the stored tree was altered/,
    );
  });

  it("fails a chained checkpoint whose note signs another root, even re-sealed with the owner's key", async () => {
    const copy = copyOf("tampered-note.db");
    const db = openDatabase(copy);
    db.exec("DROP TRIGGER audit_event_no_delete; DROP TRIGGER audit_tree_no_delete");
    const rows = (db.prepare("SELECT * FROM audit_event ORDER BY seq").all() as EventRow[]).map(rowToEvent);
    const at = rows.find((e) => e.kind === "chain.checkpoint" && e.seq > 50);
    if (at === undefined) throw new Error("no chained checkpoint after seq 50");
    db.prepare("DELETE FROM audit_event WHERE seq >= ?").run(at.seq);
    db.prepare("DELETE FROM audit_tree WHERE ((idx + 1) << level) > ?").run(at.seq);
    const { loadKeyFile } = await import("../../src/keys/key-file.js");
    const key = loadKeyFile(keyFile);
    const wrong = signCheckpointNote(key, {
      origin: checkpointOrigin(at.chain_id),
      size: at.seq,
      root: Buffer.alloc(32, 7),
    });
    const tip = rows[at.seq - 1] as (typeof rows)[number];
    const { event, canonicalPayload } = sealEvent({
      chainId: at.chain_id,
      tip,
      nowMs: at.ts,
      key,
      draft: { source: "chain", kind: "chain.checkpoint", payload: { ...at.payload, note: wrong } },
    });
    db.prepare(
      "INSERT INTO audit_event (chain_id, seq, ts, prev_hash, source, kind, payload, payload_hash, hash, sig) VALUES (?,?,?,?,?,?,?,?,?,?)",
    ).run(
      event.chain_id,
      event.seq,
      event.ts,
      event.prev_hash,
      event.source,
      event.kind,
      canonicalPayload,
      event.payload_hash,
      event.hash,
      event.sig,
    );
    db.close();
    const out = await berth("audit", "verify", "--db", copy, "--pubkey", publicKey, "--json");
    expect(out.code).toBe(1);
    const failure = JSON.parse(out.stdout).failure;
    expect(failure).toMatchObject({ seq: at.seq, code: "checkpoint" });
    expect(failure.detail).toMatch(
      new RegExp(`note at seq ${at.seq} signs root BwcH.* for tree size ${at.seq}; the events before it hash to `),
    );
  });
});
