import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PLAIN_WORKLOAD } from "../../test/support/workload.js";
import { engineHarness } from "../../test/support/engines.js";
import { signingKeyFromSeed } from "../core/crypto/ed25519.js";
import { ControllerStore } from "../mesh/controller/store.js";
import type { EngineKind, Query, StoreEngine, Tx } from "../store/engine.js";
import { openDatabase, withWriteTx } from "../store/sqlite.js";
import { Chain, EVENT_COLUMNS } from "./chain.js";
import { EngineChain } from "./engine-chain.js";
import { CHAIN_SCHEMA_VERSION } from "./schema.js";

/**
 * Chain schema v2 (issue 19, spec/audit-chain.md §7): no index keys the events on their hash. Run on both engines;
 * the PostgreSQL tier never skips.
 */
const harness = engineHarness();
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(4));
const CLOCK = 1_767_225_600_000;
const W = PLAIN_WORKLOAD;

/** v1's events table exactly as berth wrote it before issue 19 (with `UNIQUE` on the hash), per engine. */
const V1_EVENTS_SQLITE = `
  CREATE TABLE audit_event (chain_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,
                            prev_hash TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                            payload TEXT NOT NULL, payload_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
                            sig TEXT NOT NULL,
                            phase TEXT GENERATED ALWAYS AS (json_extract(payload, '$.phase')) VIRTUAL,
                            PRIMARY KEY (chain_id, seq)) WITHOUT ROWID;
  CREATE INDEX audit_event_skp ON audit_event (chain_id, source, kind, phase);
  CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
  CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;`;

/**
 * Turns a store back into one made by the old schemas, rows kept: chain v1 (the events table rebuilt from v1's DDL on
 * SQLite, v1's named constraint on PostgreSQL) and controller v8 (no event columns on the decisions).
 */
async function backToV1(tx: Tx): Promise<void> {
  if (tx.kind === "sqlite") {
    await tx.exec(`CREATE TEMP TABLE kept AS SELECT ${EVENT_COLUMNS} FROM audit_event; DROP TABLE audit_event; ${V1_EVENTS_SQLITE}
                   INSERT INTO audit_event (${EVENT_COLUMNS}) SELECT ${EVENT_COLUMNS} FROM kept; DROP TABLE kept;`);
  } else {
    await tx.exec("ALTER TABLE audit_event ADD CONSTRAINT audit_event_hash_key UNIQUE (hash)");
  }
  await tx.exec(
    "ALTER TABLE mesh_decisions DROP COLUMN event_chain_id; ALTER TABLE mesh_decisions DROP COLUMN event_seq;",
  );
  await tx.run("UPDATE berth_schema SET version = 1 WHERE component = 'audit'");
  await tx.run("UPDATE berth_schema SET version = 8 WHERE component = 'mesh_controller'");
}

/** The indexes over audit_event, by the columns they key on. */
async function eventIndexes(q: Query): Promise<string[]> {
  if (q.kind === "sqlite") {
    const names = await q.all<{ name: string }>("SELECT name FROM pragma_index_list('audit_event') ORDER BY name");
    const out: string[] = [];
    for (const { name } of names)
      out.push(
        (await q.all<{ name: string }>(`SELECT name FROM pragma_index_info('${name}') ORDER BY seqno`))
          .map((c) => c.name)
          .join(","),
      );
    return out.sort();
  }
  const rows = await q.all<{ def: string }>("SELECT indexdef AS def FROM pg_indexes WHERE tablename = 'audit_event'");
  return rows.map((r) => /\((.*)\)/.exec(r.def)?.[1]?.replace(/\s/g, "") ?? r.def).sort();
}

async function opened(engine: StoreEngine) {
  const chain = await EngineChain.open(engine, KEY, "controller", () => CLOCK);
  return { chain, store: await ControllerStore.open(engine, chain, () => CLOCK) };
}

function decide(store: ControllerStore, name: string, dispatch: boolean) {
  return store.commitDecision({
    name,
    packageId: W.package_id,
    workload: W,
    dispatch,
    event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name, order: { name } } },
    refusal: (error) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "decision", name, error } }),
  });
}

describe.each(["sqlite", "postgres"] as const)("chain schema v2 on %s", { timeout: 60_000 }, (kind: EngineKind) => {
  it("keys no index on the event hash: the primary key and the (source, kind, phase) index only", async () => {
    const engine = await harness.open(kind);
    await opened(engine);
    expect(await engine.read(eventIndexes)).toEqual(["chain_id,seq", "chain_id,source,kind,phase"]);
  });

  it("a store made by chain schema v1 and controller schema v8 migrates on open, every row kept, and every lookup by hash still answers", async () => {
    const engine = await harness.open(kind);
    const { chain, store } = await opened(engine);
    const placed = await decide(store, "triage", true);
    const dry = await decide(store, "dry", false);
    for (let i = 0; i < 5; i++)
      await engine.transaction((tx) => chain.append(tx, { source: "trust", kind: "peer.add", payload: { n: i } }));
    const before = await engine.read((q) => q.all(`SELECT ${EVENT_COLUMNS} FROM audit_event ORDER BY chain_id, seq`));
    await engine.transaction(backToV1);
    expect((await engine.read(eventIndexes)).length).toBe(3);

    const again = await harness.reopen(engine);
    const { chain: chain2, store: store2 } = await opened(again);
    expect(await again.read((q) => q.get("SELECT version FROM berth_schema WHERE component = 'audit'"))).toMatchObject({
      version: CHAIN_SCHEMA_VERSION,
    });
    expect(await again.read(eventIndexes)).toEqual(["chain_id,seq", "chain_id,source,kind,phase"]);
    expect(await again.read((q) => q.all(`SELECT ${EVENT_COLUMNS} FROM audit_event ORDER BY chain_id, seq`))).toEqual(
      before,
    );
    expect((await chain2.verifyStored()).ok).toBe(true);
    // The decision's row learnt where its event is; the dry run (no row) and any event are found by a scan.
    const placedEvent = await chain2.get(1);
    expect(placedEvent?.hash).toBe(placed);
    expect(
      await again.read((q) => q.get("SELECT event_chain_id, event_seq FROM mesh_decisions WHERE id = ?", [placed])),
    ).toEqual({
      event_chain_id: chain2.chainId,
      event_seq: 1,
    });
    expect((await store2.decisionEvent(placed))?.seq).toBe(1);
    expect(await store2.decisionPayload(placed)).toMatchObject({ order: { name: "triage" } });
    expect((await store2.decisionEvent(dry))?.payload).toMatchObject({ name: "dry" });
    const tip = await chain2.tip();
    expect((await chain2.byHash(tip.hash))?.seq).toBe(tip.seq);
    // Appending goes on where the migrated chain stopped.
    const next = await again.transaction((tx) =>
      chain2.append(tx, { source: "trust", kind: "peer.add", payload: { n: 9 } }),
    );
    expect(next.prev_hash).toBe(tip.hash);
  });

  it("a new decision records its event's place, and a wrong place falls back to the scan rather than answering another event", async () => {
    const engine = await harness.open(kind);
    const { chain, store } = await opened(engine);
    const id = await decide(store, "triage", true);
    const at = await engine.read((q) =>
      q.get<{ event_seq: number }>("SELECT event_seq FROM mesh_decisions WHERE id = ?", [id]),
    );
    expect(Number(at?.event_seq)).toBe((await chain.byHash(id))?.seq);
    expect((await chain.byHash(id, 0))?.hash).toBe(id);
    expect(await chain.byHash("f".repeat(64), 0)).toBeUndefined();
  });

  it("three controllers opening one fresh store at the same moment all open it, on one chain", async () => {
    // On PostgreSQL each ran the schema's DDL, and the later ones failed on the catalog (23505 on pg_type's index).
    const first = await harness.open(kind);
    const engines = [first, await harness.reopen(first), await harness.reopen(first)];
    const chains = await Promise.all(engines.map((e) => EngineChain.open(e, KEY, "controller", () => CLOCK)));
    expect(new Set(chains.map((c) => c.chainId)).size).toBe(1);
    expect((await chains[2]!.verifyStored()).ok).toBe(true);
  });

  it("a second row at a taken (chain, seq), the only way to store one hash twice, is refused by the primary key", async () => {
    const engine = await harness.open(kind);
    const { chain } = await opened(engine);
    const genesis = await chain.get(0);
    const row = await engine.read((q) =>
      q.get<Record<string, string | number>>(`SELECT ${EVENT_COLUMNS} FROM audit_event WHERE seq = 0`),
    );
    expect(genesis && row).toBeTruthy();
    await expect(
      engine.transaction((tx) =>
        tx.run(
          `INSERT INTO audit_event (${EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)`,
          EVENT_COLUMNS.split(", ").map((c) => row?.[c] ?? null),
        ),
      ),
    ).rejects.toThrow(/UNIQUE|duplicate key/i);
  });
});

describe("chain schema v2 for the synchronous chain (node daemon, Kubernetes provider)", () => {
  it("a database made by chain schema v1 migrates on open, rows and verification kept, and byHash still finds every event", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-chain-v1-"));
    try {
      const path = join(dir, "state.db");
      let db = openDatabase(path);
      const chain = Chain.open(db, KEY, "node", () => CLOCK);
      for (let i = 0; i < 5; i++)
        withWriteTx(db, (tx) => chain.append(tx, { source: "trust", kind: "peer.add", payload: { n: i } }));
      const before = db.prepare(`SELECT ${EVENT_COLUMNS} FROM audit_event ORDER BY seq`).all() as Array<{
        hash: string;
        seq: number;
      }>;
      db.exec(`CREATE TEMP TABLE kept AS SELECT ${EVENT_COLUMNS} FROM audit_event; DROP TABLE audit_event; ${V1_EVENTS_SQLITE}
               INSERT INTO audit_event (${EVENT_COLUMNS}) SELECT ${EVENT_COLUMNS} FROM kept; DROP TABLE kept;
               UPDATE berth_schema SET version = 1 WHERE component = 'audit';`);
      db.close();
      db = openDatabase(path);
      const again = Chain.open(db, KEY, "node", () => CLOCK);
      expect(db.prepare("SELECT COUNT(*) AS n FROM pragma_index_list('audit_event')").get()).toEqual({ n: 2 });
      expect(db.prepare(`SELECT ${EVENT_COLUMNS} FROM audit_event ORDER BY seq`).all()).toEqual(before);
      expect(again.verifyStored().ok).toBe(true);
      for (const row of before) expect(again.byHash(row.hash)?.seq).toBe(row.seq);
      expect(again.byHash(before[2]!.hash, 2)?.seq).toBe(2);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
