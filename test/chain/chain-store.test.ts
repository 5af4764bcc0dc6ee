import { mkdtempSync, rmSync, writeFileSync, chmodSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Chain, rowToEvent } from "../../src/chain/chain.js";
import { importChain } from "../../src/chain/import.js";
import { sealEvent, type SealedEvent } from "../../src/core/chain/event.js";
import { verifyEvents } from "../../src/core/chain/verify.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey, KeyFileError, loadKeyFile, saveKeyFile } from "../../src/keys/key-file.js";
import { type Db, openDatabase, withWriteTx } from "../../src/store/sqlite.js";

let dir: string;
let db: Db;
const key = signingKeyFromSeed(new Uint8Array(32).fill(7));
const otherKey = signingKeyFromSeed(new Uint8Array(32).fill(9));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "berth-chain-"));
  db = openDatabase(join(dir, "state.db"));
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

let clockMs = 1_767_225_600_000;
const clock = () => (clockMs += 10);

function tenEventChain(): { chain: Chain; events: SealedEvent[] } {
  const chain = Chain.open(db, key, "controller", clock);
  for (let i = 1; i < 10; i++) {
    withWriteTx(db, (tx) =>
      chain.append(tx, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "decision", n: i, tags: ["a", i], nested: { ok: true, none: null } },
      }),
    );
  }
  return { chain, events: [...chain.find()] };
}

describe("the audit chain store", () => {
  it("writes a genesis on first open and keeps the same chain on reopen", () => {
    const chain = Chain.open(db, key, "controller", clock);
    const genesis = chain.get(0);
    expect(genesis?.kind).toBe("chain.genesis");
    expect(genesis?.payload).toMatchObject({ role: "controller", owner_key: key.publicKey });
    expect(Chain.open(db, key, "controller", clock).chainId).toBe(chain.chainId);
  });

  it("refuses to open a chain with another owner's key", () => {
    Chain.open(db, key, "controller", clock);
    expect(() => Chain.open(db, otherKey, "controller", clock)).toThrow(/belongs to key/);
  });

  it("commits a state change and its event together", () => {
    db.exec("CREATE TABLE thing (id TEXT PRIMARY KEY)");
    const chain = Chain.open(db, key, "controller", clock);
    const { event } = chain.record({ source: "trust", kind: "peer.add", payload: { node: "n1" } }, (tx) =>
      tx.db.prepare("INSERT INTO thing VALUES ('n1')").run(),
    );
    expect(chain.tip().hash).toBe(event.hash);
    expect(db.prepare("SELECT COUNT(*) AS n FROM thing").get()).toEqual({ n: 1 });
  });

  it("leaves the tip unchanged and the state untouched when the transaction throws after appending", () => {
    db.exec("CREATE TABLE thing (id TEXT PRIMARY KEY)");
    const chain = Chain.open(db, key, "controller", clock);
    const before = chain.tip();
    const seen: SealedEvent[] = [];
    chain.subscribe((e) => seen.push(e));
    expect(() =>
      withWriteTx(db, (tx) => {
        tx.db.prepare("INSERT INTO thing VALUES ('x')").run();
        chain.append(tx, { source: "trust", kind: "peer.add", payload: { node: "x" } });
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(chain.tip()).toEqual(before);
    expect(seen).toEqual([]);
    expect(db.prepare("SELECT COUNT(*) AS n FROM thing").get()).toEqual({ n: 0 });
    const next = withWriteTx(db, (tx) =>
      chain.append(tx, { source: "trust", kind: "peer.add", payload: { node: "y" } }),
    );
    expect(next.seq).toBe(before.seq + 1);
    expect(seen.map((e) => e.hash)).toEqual([next.hash]);
  });

  it("refuses UPDATE and DELETE on stored events", () => {
    tenEventChain();
    expect(() => db.prepare("UPDATE audit_event SET kind = 'x' WHERE seq = 1").run()).toThrow(/append-only/);
    expect(() => db.prepare("DELETE FROM audit_event WHERE seq = 1").run()).toThrow(/append-only/);
  });

  it("round-trips payloads of every JSON type through storage, export and import", () => {
    const { chain } = tenEventChain();
    const all = {
      s: 'ünïcödé \u0000 " \\ 😀',
      i: -42,
      big: 2 ** 53 - 1,
      zero: 0,
      t: true,
      f: false,
      n: null,
      arr: [1, "two", [3]],
      obj: { z: 1, a: 2, "\u00e9": 3 },
    };
    withWriteTx(db, (tx) => chain.append(tx, { source: "trust", kind: "policy.load", payload: all }));
    const lines = [...chain.exportLines()].map((l) => `${l}\n`).join("");
    const other = openDatabase(join(dir, "other.db"));
    const outcome = importChain(other, lines, { key: key.publicKey });
    expect(outcome).toMatchObject({ ok: true, value: { written: 11 } });
    const stored = other.prepare("SELECT payload FROM audit_event WHERE seq = 10").get() as { payload: string };
    expect(JSON.parse(stored.payload)).toEqual(all);
    other.close();
  });

  it("verifies the stored chain at start-up and names the corrupted seq", () => {
    const { chain } = tenEventChain();
    expect(chain.verifyStored().ok).toBe(true);
    db.exec("DROP TRIGGER audit_event_no_update");
    db.prepare("UPDATE audit_event SET payload = replace(payload, '\"n\":6', '\"n\":66') WHERE seq = 6").run();
    const result = chain.verifyStored();
    expect(result.failure).toMatchObject({ seq: 6, code: "payload_hash" });
  });

  it("refuses to open a chain that no longer verifies, naming the corrupted seq", () => {
    tenEventChain();
    db.exec("DROP TRIGGER audit_event_no_update");
    db.prepare("UPDATE audit_event SET payload = replace(payload, '\"n\":7', '\"n\": 7') WHERE seq = 7").run();
    expect(() => Chain.open(db, key, "controller", clock)).toThrow(/does not verify at seq 7 \(payload_hash/);
  });

  it("checks only from the newest valid checkpoint at start-up, and still catches a corrupted event after it", () => {
    const { chain } = tenEventChain();
    chain.checkpointIfDue(true); // covers seq 9, recorded as seq 10
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 3; i++) chain.append(tx, { source: "trust", kind: "peer.add", payload: { i } });
    });
    db.exec("DROP TRIGGER audit_event_no_update");
    // Before the checkpoint: left to `berth audit verify`, which walks everything.
    db.prepare("UPDATE audit_event SET ts = ts + 1 WHERE seq = 3").run();
    expect(() => Chain.open(db, key, "controller", clock)).not.toThrow();
    expect(chain.verifyStored().failure).toMatchObject({ seq: 3, code: "hash" });
    // After it: refused at start-up.
    db.prepare("UPDATE audit_event SET kind = 'peer.tier' WHERE seq = 12").run();
    expect(() => Chain.open(db, key, "controller", clock)).toThrow(/does not verify at seq 12 \(hash/);
  });

  it("reseals into a new chain whose genesis names the predecessor", () => {
    const { chain } = tenEventChain();
    const head = chain.tip();
    const next = Chain.reseal(db, key, "controller", "disk corruption", clock);
    expect(next.chainId).not.toBe(chain.chainId);
    expect(next.get(0)?.payload.predecessor).toEqual({
      chain_id: chain.chainId,
      seq: head.seq,
      hash: head.hash,
      reason: "disk corruption",
    });
    expect(next.verifyStored().ok).toBe(true);
  });

  it("writes a checkpoint every 1000 events and on demand, and both verify", () => {
    const chain = Chain.open(db, key, "controller", clock);
    withWriteTx(db, (tx) => {
      for (let i = 0; i < 1000; i++)
        chain.append(tx, { source: "placement", kind: "workload.place", payload: { phase: "decision", i } });
    });
    expect(chain.checkpoints().map((c) => c.checkpoint.seq)).toEqual([1000]);
    withWriteTx(db, (tx) => chain.append(tx, { source: "trust", kind: "peer.add", payload: {} }));
    const cp = chain.checkpointIfDue(true);
    expect(cp?.checkpoint.seq).toBe(1002);
    expect(chain.checkpointIfDue(true)).toBeUndefined();
    expect(chain.verifyStored()).toMatchObject({ ok: true, checkpoints: 2 });
  });

  it("reports a checkpoint with a bad signature as checkpoint", () => {
    const { chain } = tenEventChain();
    const cp = chain.checkpointIfDue(true)!;
    const bad = { ...cp, sig: cp.sig.replace(/^./, (c) => (c === "0" ? "1" : "0")) };
    expect(verifyEvents(chain.find(), { key: key.publicKey, checkpoints: [bad] }).failure?.code).toBe("checkpoint");
  });
});

describe("tampering is detected (spec/audit-chain.md §14)", () => {
  const cases: Array<[string, (e: SealedEvent, prev: SealedEvent) => Record<string, unknown>, string]> = [
    ["seq", (e) => ({ ...e, seq: e.seq + 1 }), "seq"],
    ["chain_id", (e) => ({ ...e, chain_id: "f".repeat(32) }), "chain_id"],
    ["ts raised by one", (e) => ({ ...e, ts: e.ts + 1 }), "hash"],
    ["ts below the previous event", (e, prev) => ({ ...e, ts: prev.ts - 1 }), "ts"],
    ["prev_hash", (e) => ({ ...e, prev_hash: "a".repeat(64) }), "prev_hash"],
    ["source", (e) => ({ ...e, source: "trust" }), "hash"],
    ["kind", (e) => ({ ...e, kind: "workload.stop" }), "hash"],
    ["one payload value", (e) => ({ ...e, payload: { ...e.payload, n: 999 } }), "payload_hash"],
    ["payload_hash", (e) => ({ ...e, payload_hash: "b".repeat(64) }), "payload_hash"],
    ["hash", (e) => ({ ...e, hash: "c".repeat(64) }), "hash"],
    ["one sig byte", (e) => ({ ...e, sig: (e.sig[0] === "0" ? "1" : "0") + e.sig.slice(1) }), "signature"],
  ];
  it.each(cases)("altering %s of event 5 stops verification at seq 5", (_name, alter, code) => {
    const { events } = tenEventChain();
    const tampered: unknown[] = [...events];
    tampered[5] = alter(events[5]!, events[4]!);
    expect(verifyEvents(tampered, { key: key.publicKey }).failure).toMatchObject({ seq: 5, code });
  });

  it("altering the genesis is reported as genesis", () => {
    const { events } = tenEventChain();
    const tampered: unknown[] = [...events];
    tampered[0] = { ...events[0]!, source: "trust" };
    expect(verifyEvents(tampered, { key: key.publicKey }).failure).toMatchObject({ seq: 0, code: "genesis" });
  });

  it("reordering, deleting or duplicating events is reported as seq", () => {
    const { events } = tenEventChain();
    const reordered = [...events];
    [reordered[4], reordered[5]] = [reordered[5]!, reordered[4]!];
    expect(verifyEvents(reordered, { key: key.publicKey }).failure).toMatchObject({ seq: 4, code: "seq" });
    expect(
      verifyEvents(
        events.filter((e) => e.seq !== 5),
        { key: key.publicKey },
      ).failure,
    ).toMatchObject({ seq: 5, code: "seq" });
    const duplicated = [...events.slice(0, 6), events[5]!, ...events.slice(6)];
    expect(verifyEvents(duplicated, { key: key.publicKey }).failure).toMatchObject({ seq: 6, code: "seq" });
    expect(verifyEvents(events.slice(1), { key: key.publicKey }).failure).toMatchObject({ seq: 0, code: "seq" });
  });

  it("truncation passes alone but fails against a checkpoint or an expected head", () => {
    const { chain, events } = tenEventChain();
    const cp = chain.checkpointIfDue(true)!;
    const short = events.slice(0, 7);
    expect(verifyEvents(short, { key: key.publicKey }).ok).toBe(true);
    expect(verifyEvents(short, { key: key.publicKey, checkpoints: [cp] }).failure?.code).toBe("truncated");
    expect(
      verifyEvents(short, { key: key.publicKey, expectHead: { seq: 9, hash: events[9]!.hash } }).failure?.code,
    ).toBe("truncated");
  });

  it("a suffix re-sealed with another key fails at its first event when the key is pinned", () => {
    const { events } = tenEventChain();
    const rewritten: SealedEvent[] = events.slice(0, 6);
    for (const e of events.slice(6)) {
      rewritten.push(
        sealEvent({
          chainId: e.chain_id,
          tip: rewritten[rewritten.length - 1],
          nowMs: e.ts,
          key: otherKey,
          draft: { source: e.source, kind: e.kind, payload: e.payload },
        }).event,
      );
    }
    expect(verifyEvents(rewritten, { key: key.publicKey }).failure).toMatchObject({ seq: 6, code: "signature" });
    const selfAsserted = verifyEvents(rewritten);
    expect(selfAsserted.keySelfAsserted).toBe(true);
  });

  it("a suffix re-sealed with the same key passes alone but is a fork against an earlier expected head", () => {
    const { events } = tenEventChain();
    const rewritten: SealedEvent[] = events.slice(0, 6);
    for (const e of events.slice(6)) {
      rewritten.push(
        sealEvent({
          chainId: e.chain_id,
          tip: rewritten[rewritten.length - 1],
          nowMs: e.ts,
          key,
          draft: { source: e.source, kind: e.kind, payload: { ...e.payload, rewritten: true } },
        }).event,
      );
    }
    expect(verifyEvents(rewritten, { key: key.publicKey }).ok).toBe(true);
    expect(
      verifyEvents(rewritten, { key: key.publicKey, expectHead: { seq: 8, hash: events[8]!.hash } }).failure?.code,
    ).toBe("fork");
  });

  it("a whole chain replaced by one signed with another key fails genesis against the owner key", () => {
    const db2 = openDatabase(join(dir, "forged.db"));
    const forged = Chain.open(db2, otherKey, "controller", clock);
    expect(verifyEvents(forged.find(), { key: key.publicKey }).failure).toMatchObject({ seq: 0, code: "genesis" });
    db2.close();
  });

  it("any byte changed in any field of any event is caught at that event (property)", () => {
    const { events } = tenEventChain();
    const fields = [
      "seq",
      "chain_id",
      "ts",
      "prev_hash",
      "source",
      "kind",
      "payload",
      "payload_hash",
      "hash",
      "sig",
    ] as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9 }),
        fc.constantFrom(...fields),
        fc.nat(),
        fc.integer({ min: 1, max: 15 }),
        (index, field, position, delta) => {
          const original = events[index]!;
          const line = JSON.stringify(original[field]);
          const at = position % line.length;
          const code = line.charCodeAt(at);
          const changed =
            line.slice(0, at) +
            String.fromCharCode(code === 34 || code === 92 ? code : ((code + delta) % 94) + 33) +
            line.slice(at + 1);
          let value: unknown;
          try {
            value = JSON.parse(changed);
          } catch {
            return; // that byte change made invalid JSON: an import refuses it before verification (tested separately)
          }
          if (JSON.stringify(value) === line) return; // no change
          const tampered: unknown[] = [...events];
          tampered[index] = { ...original, [field]: value };
          const result = verifyEvents(tampered, { key: key.publicKey });
          expect(result.ok).toBe(false);
          expect(result.failure?.seq).toBe(index);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("import", () => {
  it("refuses a fork with both hashes and writes nothing", () => {
    const { chain } = tenEventChain();
    const lines = [...chain.exportLines()].map((l) => `${l}\n`).join("");
    const other = openDatabase(join(dir, "collector.db"));
    expect(importChain(other, lines).ok).toBe(true);
    // The owner rewrites seq 9 with the same key: a different hash at a stored seq.
    const events = [...chain.find()];
    const forkedLast = sealEvent({
      chainId: chain.chainId,
      tip: events[8],
      nowMs: events[9]!.ts,
      key,
      draft: { source: "trust", kind: "peer.add", payload: { fork: true } },
    }).event;
    const forked = [...events.slice(0, 9), forkedLast].map((e) => `${JSON.stringify(e)}\n`).join("");
    const outcome = importChain(other, forked);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toContain(events[9]!.hash);
    expect(!outcome.ok && outcome.error).toContain(forkedLast.hash);
    other.close();
  });

  it("refuses to import the component's own chain", () => {
    const { chain } = tenEventChain();
    const lines = [...chain.exportLines()].map((l) => `${l}\n`).join("");
    expect(importChain(db, lines)).toMatchObject({ ok: false, error: expect.stringContaining("own chain") });
  });

  it("refuses a truncated line by number and an import whose signatures do not match the given key", () => {
    const { chain } = tenEventChain();
    const lines = [...chain.exportLines()].map((l) => `${l}\n`).join("");
    const other = openDatabase(join(dir, "collector.db"));
    expect(importChain(other, lines.slice(0, -20))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^line 10:/),
    });
    expect(importChain(other, lines, { key: otherKey.publicKey })).toMatchObject({
      ok: false,
      error: expect.stringContaining("genesis"),
    });
    expect(other.prepare("SELECT name FROM sqlite_master WHERE name = 'audit_event'").get()).toBeDefined();
    expect(other.prepare("SELECT COUNT(*) AS n FROM audit_event").get()).toEqual({ n: 0 });
    other.close();
  });

  it("the import parser never crashes and never accepts a defect (fuzzed)", () => {
    const { chain } = tenEventChain();
    const good = [...chain.exportLines()].map((l) => `${l}\n`).join("");
    const other = openDatabase(join(dir, "fuzz.db"));
    fc.assert(
      fc.property(fc.nat(good.length - 1), fc.string({ minLength: 0, maxLength: 4 }), fc.nat(3), (at, insert, drop) => {
        const mutated = good.slice(0, at) + insert + good.slice(at + drop);
        if (mutated === good) return;
        const outcome = importChain(other, mutated, { key: key.publicKey });
        if (outcome.ok) {
          // Accepted only when the mutation was meaningless to JSON (e.g. whitespace between tokens): every
          // accepted event is one of the owner's originals.
          const originals = new Set([...chain.find()].map((e) => e.hash));
          for (const line of mutated.split("\n").filter(Boolean))
            expect(originals.has(JSON.parse(line).hash)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    // Nothing defective was ever written: whatever is stored verifies.
    const stored = other.prepare("SELECT DISTINCT chain_id FROM audit_event").all() as Array<{ chain_id: string }>;
    for (const { chain_id } of stored) {
      const rows = other.prepare("SELECT * FROM audit_event WHERE chain_id = ? ORDER BY seq").all(chain_id) as Array<
        Parameters<typeof rowToEvent>[0]
      >;
      const events = rows.map(rowToEvent);
      expect(verifyEvents(events, { key: key.publicKey }).ok).toBe(true);
    }
    other.close();
  });
});

describe("key files", () => {
  it("are written with mode 0600 and load back to the same key", () => {
    const path = join(dir, "keys", "k.key");
    const k = generateSigningKey();
    saveKeyFile(path, k);
    expect(loadKeyFile(path).publicKey).toBe(k.publicKey);
    expect(() => saveKeyFile(path, k)).toThrow(/refusing to overwrite/);
  });

  it("refuse a key file readable by others and say how to fix it", () => {
    const path = join(dir, "k.key");
    saveKeyFile(path, generateSigningKey());
    chmodSync(path, 0o644);
    expect(() => loadKeyFile(path)).toThrow(/chmod 600/);
  });

  it("refuse a malformed key file naming the field", () => {
    const path = join(dir, "bad.key");
    writeFileSync(path, JSON.stringify({ format: "berth.key.v1", type: "ed25519", seed: "zz", public_key: "00" }), {
      mode: 0o600,
    });
    expect(() => loadKeyFile(path)).toThrow(KeyFileError);
    expect(() => loadKeyFile(path)).toThrow(/field seed/);
    writeFileSync(path, "{not json", { mode: 0o600 });
    expect(() => loadKeyFile(path)).toThrow(/not valid JSON/);
    const good = join(dir, "good.key");
    saveKeyFile(good, generateSigningKey());
    const doc = JSON.parse(readFileSync(good, "utf8"));
    writeFileSync(path, JSON.stringify({ ...doc, public_key: "0".repeat(64) }), { mode: 0o600 });
    expect(() => loadKeyFile(path)).toThrow(/does not belong to the seed/);
  });
});
