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
import {
  AGENTS_DB,
  agentRecord,
  agentRecords,
  importAgentsDb,
  recoverAgentRecords,
  rememberAgent,
} from "./store-agents.js";
import type { StoredOrder } from "./move-records.js";

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

/** A placement as dispatch records it, with its decision's stored order; `spec` absent: a raw `berth place`. */
async function placed(engine: StoreEngine, name: string, n: number, spec?: StoredOrder["agent_spec"]): Promise<string> {
  const decision = String(n).repeat(64).slice(0, 64);
  const order: StoredOrder = {
    package_id: "p".repeat(64),
    name,
    config: { mode: "service", args: [], env: {} },
    env_from: {},
    pin: null,
    prefer: [],
    avoid: [],
    allow_emulated: false,
    strategy: "spread",
    restart: "always",
    start: true,
    agent: spec === undefined ? null : name,
    intent: spec === undefined ? null : `intent-${name}`,
    ...(spec === undefined ? {} : { agent_spec: spec }),
  };
  await engine.transaction(async (tx) => {
    await tx.run(
      "INSERT INTO mesh_placements (instance_id, name, node_id, decision_id, variant, route, package_id, placed_ms, adopted, pending, workload) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
      [
        `${name}-000000000000`,
        name,
        "n".repeat(32),
        decision,
        "v",
        "native",
        "p".repeat(64),
        1_767_225_300_000,
        0,
        null,
        "{}",
      ],
    );
    await tx.run("INSERT INTO mesh_orders (decision_id, order_json) VALUES (?, ?)", [decision, JSON.stringify(order)]);
  });
  return decision;
}

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

    it("a placement whose deploy ended before its record gets the record back from its stored spec, once, chained with its decision; nothing else is invented", async () => {
      const engine = await harness.open(kind);
      const { store, chain } = await storeOn(engine);
      const spec = { spec_path: "/specs/scout.yaml", spec_text: "apiVersion: berth/v1\nkind: Agent\n" };
      const decision = await placed(engine, "scout", 1, spec);
      await placed(engine, "by-hand", 2);
      await rememberAgent(store, record("kept", { intent: "intent-kept" }));
      await placed(engine, "kept", 3, { spec_path: "/specs/other.yaml", spec_text: "other" });
      const before = (await chain.find({})).length;

      // Two processes at once: one record, one event.
      const [a, b] = await Promise.all([recoverAgentRecords(store, null), recoverAgentRecords(store, null)]);
      expect([...a, ...b].map((r) => r.name)).toEqual(["scout"]);
      const scout = await engine.read((q) => agentRecord(q, "scout"));
      expect(scout).toMatchObject({ target: "mesh", ...spec, intent: "intent-scout", last_outcome: "started" });
      expect(scout?.last_message).toContain("the store held no record of the agent");
      expect(await engine.read((q) => agentRecord(q, "by-hand")), "a raw place has no deploy to recover").toBeNull();
      expect((await engine.read((q) => agentRecord(q, "kept")))?.intent, "a record is never replaced").toBe(
        "intent-kept",
      );
      const events = await chain.find({ kind: "agent.remember" });
      expect(events.map((e) => [e.payload.agent, e.payload.recovered_from ?? null])).toEqual([
        ["kept", null],
        ["scout", decision],
      ]);

      // Nothing missing: nothing written.
      expect(await recoverAgentRecords(store, null)).toEqual([]);
      expect(await recoverAgentRecords(store, "by-hand")).toEqual([]);
      expect((await chain.find({})).length).toBe(before + 1);
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
