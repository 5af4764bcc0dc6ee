import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Chain, verifyStoredChain } from "../../src/chain/chain.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../../src/keys/key-file.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { builtPath } from "../support/built.js";
import { killAll, spawnNode } from "../support/process.js";

let dir: string;
let keyFile: string;
const worker = () => builtPath("test/chain/append-worker.js");

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "berth-chain-proc-"));
  keyFile = join(dir, "owner.key");
  saveKeyFile(keyFile, generateSigningKey());
});
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the audit chain across OS processes", () => {
  it("two processes appending 1000 events each to one database leave one contiguous, valid chain", async () => {
    const dbPath = join(dir, "concurrent.db");
    // Create the chain first so both workers open the same genesis.
    const db = openDatabase(dbPath);
    Chain.open(db, loadKeyFile(keyFile), "controller");
    db.close();
    const a = spawnNode([worker(), dbPath, keyFile, "batch", "1000"]);
    const b = spawnNode([worker(), dbPath, keyFile, "batch", "1000"]);
    const [ea, eb] = await Promise.all([a.exited(), b.exited()]);
    expect(ea.code, a.errors()).toBe(0);
    expect(eb.code, b.errors()).toBe(0);
    const hashes = [...a.output().trim().split("\n"), ...b.output().trim().split("\n")];
    expect(hashes).toHaveLength(2000);
    const check = openDatabase(dbPath);
    const rows = check
      .prepare("SELECT seq, hash FROM audit_event WHERE kind = 'workload.place' ORDER BY seq")
      .all() as Array<{ seq: number; hash: string }>;
    const all = check.prepare("SELECT seq FROM audit_event ORDER BY seq").all() as Array<{ seq: number }>;
    expect(all.map((r) => r.seq)).toEqual(all.map((_, i) => i)); // contiguous from 0, no gaps, no forks
    expect(new Set(rows.map((r) => r.hash))).toEqual(new Set(hashes)); // every returned hash exists exactly once
    const chainId = (check.prepare("SELECT chain_id FROM audit_chain").get() as { chain_id: string }).chain_id;
    expect(verifyStoredChain(check, chainId, { key: loadKeyFile(keyFile).publicKey }).ok).toBe(true);
    check.close();
  }, 120_000);

  it("a process killed before commit leaves neither the event nor its state row, and the seq is reused", async () => {
    const dbPath = join(dir, "kill-before.db");
    const held = spawnNode([worker(), dbPath, keyFile, "hold"]);
    await held.waitForOutput("ready");
    held.child.kill("SIGKILL");
    await held.exited();
    const db = openDatabase(dbPath);
    expect(db.prepare("SELECT COUNT(*) AS n FROM work_item").get()).toEqual({ n: 0 });
    const chain = Chain.open(db, loadKeyFile(keyFile), "controller");
    expect(chain.tip().seq).toBe(0);
    expect(chain.verifyStored().ok).toBe(true);
    expect(withWriteTx(db, (tx) => chain.append(tx, { source: "trust", kind: "peer.add", payload: {} })).seq).toBe(1);
    db.close();
  });

  it("a process killed after commit leaves both the event and its state row", async () => {
    const dbPath = join(dir, "kill-after.db");
    const p = spawnNode([worker(), dbPath, keyFile, "commit-hold"]);
    await p.waitForOutput("committed");
    p.child.kill("SIGKILL");
    await p.exited();
    const db = openDatabase(dbPath);
    expect(db.prepare("SELECT COUNT(*) AS n FROM work_item").get()).toEqual({ n: 1 });
    const chain = Chain.open(db, loadKeyFile(keyFile), "controller");
    expect(chain.tip().seq).toBe(1);
    expect(chain.verifyStored().ok).toBe(true);
    db.close();
  });

  it("a process killed in the middle of a stream of appends leaves every state change paired with its event", async () => {
    const dbPath = join(dir, "kill-mid.db");
    const p = spawnNode([worker(), dbPath, keyFile, "forever"]);
    await p.waitForOutput("started");
    // Let it append a while, measured in committed rows rather than time.
    const probe = openDatabase(dbPath, { readonly: true });
    const deadline = Date.now() + 20_000;
    while (
      (probe.prepare("SELECT COUNT(*) AS n FROM work_item").get() as { n: number }).n < 200 &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    probe.close();
    p.child.kill("SIGKILL");
    await p.exited();
    const db = openDatabase(dbPath);
    const items = (db.prepare("SELECT id FROM work_item").all() as Array<{ id: string }>).map((r) => r.id).sort();
    const events = (
      db
        .prepare("SELECT json_extract(payload, '$.item') AS item FROM audit_event WHERE kind = 'workload.place'")
        .all() as Array<{ item: string }>
    )
      .map((r) => r.item)
      .sort();
    expect(items.length).toBeGreaterThanOrEqual(200);
    expect(events).toEqual(items);
    expect(Chain.open(db, loadKeyFile(keyFile), "controller").verifyStored().ok).toBe(true);
    db.close();
  });
});
