import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { engineHarness } from "../../../test/support/engines.js";
import { EngineChain } from "../../chain/engine-chain.js";
import type { AgentRecord } from "../../core/agents/registry.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import type { EngineKind, StoreEngine } from "../../store/engine.js";
import { openDatabase } from "../../store/sqlite.js";
import { ControllerStore } from "./store.js";
import { AGENTS_DB, agentRecord, agentRecords, importAgentsDb, rememberAgent } from "./store-agents.js";

/** Issue 20: the agent registry is the controller store's, on both engines (PostgreSQL never skips). */
const harness = engineHarness();
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(7));
const clock = () => 1_767_225_600_000;
const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
});

const record = (name: string, over: Partial<AgentRecord> = {}): AgentRecord => ({
  name,
  target: "mesh",
  spec_path: `/specs/${name}.yaml`,
  spec_text: `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ${name} }\n`,
  intent: `intent-${name}`,
  deployed_ms: 1_767_225_000_000,
  ...over,
});

/** A home with an agents.db as berth wrote it before issue 20 (component `agents`, version 1). */
function legacyHome(records: readonly AgentRecord[]): string {
  const home = mkdtempSync(join(tmpdir(), "berth-registry-"));
  homes.push(home);
  const db = openDatabase(join(home, AGENTS_DB));
  db.exec(`CREATE TABLE berth_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
           INSERT INTO berth_schema VALUES ('agents', 1);
           CREATE TABLE agents (name TEXT PRIMARY KEY, target TEXT NOT NULL, spec_path TEXT NOT NULL,
                                spec_text TEXT NOT NULL, intent TEXT NOT NULL, deployed_ms INTEGER NOT NULL)`);
  const insert = db.prepare("INSERT INTO agents VALUES (?,?,?,?,?,?)");
  for (const r of records) insert.run(r.name, r.target, r.spec_path, r.spec_text, r.intent, r.deployed_ms);
  db.close();
  return home;
}

async function storeOn(engine: StoreEngine) {
  const chain = await EngineChain.open(engine, KEY, "controller", clock);
  return { chain, store: await ControllerStore.open(engine, chain, clock) };
}

describe.each(["sqlite", "postgres"] as const)(
  "the agent registry in the controller store on %s (issue 20)",
  { timeout: 60_000 },
  (kind: EngineKind) => {
    it("a remembered spec and its agent.remember event commit together, and another connection to the store reads it", async () => {
      const engine = await harness.open(kind);
      const { store, chain } = await storeOn(engine);
      const event = await rememberAgent(store, record("scout"));
      expect(event).toMatchObject({
        kind: "agent.remember",
        payload: { agent: "scout", target: "mesh", intent: "intent-scout", spec_path: "/specs/scout.yaml" },
      });
      expect(JSON.stringify(event.payload), "the spec text is named by digest, not chained").not.toContain(
        "apiVersion",
      );
      // A second deploy of the name replaces its record, one event each.
      await rememberAgent(store, record("scout", { intent: "intent-2", deployed_ms: 1_767_225_100_000 }));
      const other = await harness.reopen(engine);
      expect(await other.read((q) => agentRecord(q, "scout"))).toEqual(
        record("scout", { intent: "intent-2", deployed_ms: 1_767_225_100_000 }),
      );
      expect(await other.read((q) => agentRecord(q, "nobody"))).toBeNull();
      expect((await chain.find({ kind: "agent.remember" })).map((e) => e.payload.intent)).toEqual([
        "intent-scout",
        "intent-2",
      ]);
      expect((await chain.verifyStored()).ok).toBe(true);
    });

    it("a home's agents.db is taken in once, chained, and set aside; the store wins over a name it already knows", async () => {
      const engine = await harness.open(kind);
      const { store, chain } = await storeOn(engine);
      await rememberAgent(store, record("beacon", { intent: "deployed-through-another-server" }));
      const home = legacyHome([
        record("scout", { target: "kubernetes" }),
        record("beacon", { intent: "older-in-this-home" }),
      ]);

      const first = await importAgentsDb(store, home, clock);
      expect(first?.plan.insert.map((r) => r.name)).toEqual(["scout"]);
      expect(first?.plan.kept).toEqual([
        { name: "beacon", file_intent: "older-in-this-home", store_intent: "deployed-through-another-server" },
      ]);
      expect(first?.event).toMatchObject({
        kind: "agent.registry.import",
        payload: { imported: [{ agent: "scout", target: "kubernetes" }], kept: [{ agent: "beacon" }], same: [] },
      });
      expect((await engine.read((q) => agentRecords(q))).map((r) => [r.name, r.target, r.intent])).toEqual([
        ["beacon", "mesh", "deployed-through-another-server"],
        ["scout", "kubernetes", "intent-scout"],
      ]);
      expect(existsSync(join(home, AGENTS_DB))).toBe(false);
      expect(
        readdirSync(home).filter((f) => f.startsWith(`${AGENTS_DB}.imported-`) && !/-(wal|shm)$/.test(f)),
      ).toHaveLength(1);
      // Once: the file is gone, so the next open imports nothing.
      expect(await importAgentsDb(store, home, clock)).toBeNull();
      expect((await chain.verifyStored()).ok).toBe(true);
    });

    it("a second process that read the same agents.db before it was set aside finds every row there and chains nothing", async () => {
      const engine = await harness.open(kind);
      const { store, chain } = await storeOn(engine);
      const rows = [record("scout"), record("tern")];
      await importAgentsDb(store, legacyHome(rows), clock);
      const again = await importAgentsDb(store, legacyHome(rows), clock);
      expect(again?.plan).toEqual({ insert: [], kept: [], same: ["scout", "tern"] });
      expect(again?.event).toBeNull();
      expect(await chain.find({ kind: "agent.registry.import" })).toHaveLength(1);
    });

    it("an agents.db a newer berth wrote is refused, naming the file, and nothing is taken in", async () => {
      const engine = await harness.open(kind);
      const { store } = await storeOn(engine);
      const home = legacyHome([record("scout")]);
      const db = openDatabase(join(home, AGENTS_DB));
      db.exec("UPDATE berth_schema SET version = 2 WHERE component = 'agents'");
      db.close();
      await expect(importAgentsDb(store, home, clock)).rejects.toThrow(
        /agents\.db is agent registry schema version 2, newer than this berth reads \(1\).*Move the file aside/,
      );
      expect(await engine.read((q) => agentRecords(q))).toEqual([]);
      expect(existsSync(join(home, AGENTS_DB))).toBe(true);
    });
  },
);
