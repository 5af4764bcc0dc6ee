import { chmodSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain } from "../../src/chain/chain.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";

let dir: string;
let dbPath: string;
let keyFile: string;
let publicKey: string;
const berth = (...args: string[]) => runNode([berthBin(), ...args], { env: { BERTH_HOME: dir } });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "berth-audit-cli-"));
  dbPath = join(dir, "controller.db");
  keyFile = join(dir, "keys", "controller.key");
  const key = generateSigningKey();
  publicKey = key.publicKey;
  saveKeyFile(keyFile, key);
  const db = openDatabase(dbPath);
  const chain = Chain.open(db, key, "controller");
  for (let i = 0; i < 8; i++)
    withWriteTx(db, (tx) =>
      chain.append(tx, { source: "placement", kind: "workload.place", payload: { phase: "decision", i } }),
    );
  db.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("berth audit", () => {
  it("verify prints ok for an intact chain pinned to the owner key", async () => {
    const r = await berth("audit", "verify", "--db", dbPath, "--pubkey", publicKey);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok chain [0-9a-f]{32} events 9 head 8:[0-9a-f]{64} checkpoints 0/);
    expect(r.stderr).toBe("");
  });

  it("verify warns that the key is self-asserted when none is pinned", async () => {
    const r = await berth("audit", "verify", "--db", dbPath);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/self-asserted/);
  });

  it("verify exits 1 on a tampered database and names the event and the failed check", async () => {
    const copy = join(dir, "tampered.db");
    const db = openDatabase(dbPath);
    db.exec(`VACUUM INTO '${copy}'`);
    db.close();
    const t = openDatabase(copy);
    t.exec("DROP TRIGGER audit_event_no_update");
    t.prepare("UPDATE audit_event SET payload = replace(payload, '\"i\":3', '\"i\":4') WHERE seq = 4").run();
    t.close();
    const r = await berth("audit", "verify", "--db", copy, "--key-file", keyFile, "--json");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, failure: { seq: 4, code: "payload_hash" } });
    const human = await berth("audit", "verify", "--db", copy, "--key-file", keyFile);
    expect(human.stdout).toMatch(/^FAIL chain [0-9a-f]{32} seq 4 payload_hash: /);
  });

  it("export then verify --file round-trips, and a truncated export line fails naming the line", async () => {
    const exported = await berth("audit", "export", "--db", dbPath);
    expect(exported.code).toBe(0);
    const file = join(dir, "chain.jsonl");
    writeFileSync(file, exported.stdout);
    expect((await berth("audit", "verify", "--file", file, "--pubkey", publicKey)).code).toBe(0);
    writeFileSync(file, exported.stdout.slice(0, -30));
    const bad = await berth("audit", "verify", "--file", file, "--pubkey", publicKey);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/format: line 9:/);
  });

  it("tail prints the newest events, as JSON with --json", async () => {
    const r = await berth("audit", "tail", "--db", dbPath, "-n", "3", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).events.map((e: { seq: number }) => e.seq)).toEqual([6, 7, 8]);
    const bad = await berth("audit", "tail", "--db", dbPath, "-n", "zero");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/-n/);
  });

  it("refuses a malformed public key and a missing database with usage status 2", async () => {
    expect((await berth("audit", "verify", "--db", dbPath, "--pubkey", "xyz")).stderr).toMatch(
      /--pubkey.*64 lowercase hex/,
    );
    const missing = await berth("audit", "verify", "--db", join(dir, "nope.db"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
  });

  it("refuses a database from a newer schema with a clear error", async () => {
    const newer = join(dir, "newer.db");
    const db = openDatabase(newer);
    db.exec(
      "CREATE TABLE berth_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL); INSERT INTO berth_schema VALUES ('audit', 99)",
    );
    db.close();
    const r = await berth("audit", "checkpoint", "--db", newer, "--key-file", keyFile);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/schema version 99, newer than this berth understands/);
  });

  it("keys show refuses a key file readable by others", async () => {
    const loose = join(dir, "loose.key");
    writeFileSync(loose, readFileSync(keyFile));
    chmodSync(loose, 0o644);
    const r = await berth("keys", "show", "--key-file", loose);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/chmod 600/);
  });
});
