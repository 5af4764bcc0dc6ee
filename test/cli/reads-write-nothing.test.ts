/**
 * Issue 35: the list verbs (`berth instances`, `berth agents`, `berth nodes list`) read the controller's store as it
 * is and write nothing: judged from outside by the bytes and times of every file in the home, and by two readers
 * answering while a third process holds the store's write lock (they used to wait for it and fail with "another berth
 * process is writing this database").
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { AgentRegistry } from "../../src/agents/index.js";
import { nodeIdOf } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { berthBin } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";

const scratch = mkdtempSync(join(tmpdir(), "berth-reads-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => killAll());

const LISTS = [
  ["instances", "--json"],
  ["agents", "--json"],
  ["nodes", "list", "--json"],
] as const;

/** A home with a controller store holding one node and one mesh agent (no daemon runs: nothing is asked of it). */
async function home(labelled: Readonly<Record<string, string>> = {}): Promise<string> {
  const dir = mkdtempSync(join(scratch, "home-"));
  const key = generateSigningKey();
  saveKeyFile(join(dir, "keys", "controller.key"), key);
  const controller = await MeshController.open({
    dataDir: dir,
    key,
    connector: new ControllerConnector({ identity: key }),
  });
  try {
    const node = generateSigningKey();
    await controller.store.learnTarget(
      {
        addr: "127.0.0.1:9",
        node_id: nodeIdOf(node.publicKey),
        key: node.publicKey,
        tier: "paired",
        tier_source: "api",
        learned_ms: Date.now(),
      },
      {
        source: "trust",
        kind: "peer.add",
        payload: {
          node: nodeIdOf(node.publicKey),
          addr: "127.0.0.1:9",
          key: node.publicKey,
          tier: "paired",
          how: "listed_key",
        },
      },
    );
    const spec =
      "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n";
    await new AgentRegistry(controller.store).remember({
      name: "scout",
      target: "mesh",
      spec_path: join(dir, "scout.yaml"),
      spec_text: spec,
      intent: "i".repeat(64),
      deployed_ms: Date.now(),
    });
    for (const [name, team] of Object.entries(labelled)) {
      const text = `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ${name}, labels: { team: ${team} } }\nspec:\n  target: mesh\n  package: ./pkg\n`;
      await new AgentRegistry(controller.store).remember({
        name,
        target: "mesh",
        spec_path: join(dir, `${name}.yaml`),
        spec_text: text,
        intent: "i".repeat(64),
        deployed_ms: Date.now(),
      });
    }
  } finally {
    await controller.close();
  }
  return dir;
}

/** Every file under the home: its bytes' hash, size and modification time. */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else
        out[path.slice(dir.length)] =
          `${createHash("sha256").update(readFileSync(path)).digest("hex")} ${st.size} ${st.mtimeMs}`;
    }
  };
  walk(dir);
  return out;
}

const env = (dir: string) => ({ BERTH_HOME: dir, BERTH_ADDR: "", BERTH_CONTEXT: "", KUBECONFIG: "/nonexistent" });

describe("the list verbs on this home's files", () => {
  it("answer from the store and leave every file of the home as it was, byte for byte and by time", async () => {
    const dir = await home();
    const before = fingerprint(dir);
    for (const args of LISTS) {
      const r = await runNode([berthBin(), ...args, "--local"], { env: env(dir) });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    // SQLite's shared-memory index (-shm) is where every reader of a WAL database takes its read mark, through a
    // mapping of the file; on the first read after a clean close SQLite makes it, and an empty -wal beside it. Neither
    // holds data: the database and every byte of its log are judged.
    const after = fingerprint(dir);
    const { "/controller.db-shm": _shm, ...kept } = after;
    if (before["/controller.db-wal"] === undefined && kept["/controller.db-wal"] !== undefined) {
      expect(statSync(join(dir, "controller.db-wal")).size, "a write-ahead log made by a reader is empty").toBe(0);
      delete kept["/controller.db-wal"];
    }
    const { "/controller.db-shm": _before, ...was } = before;
    expect(kept).toEqual(was);
    const agents = JSON.parse((await runNode([berthBin(), "agents", "--json"], { env: env(dir) })).stdout) as {
      agents: Array<{ name: string; state: string }>;
    };
    expect(agents.agents.map((a) => [a.name, a.state])).toEqual([["scout", "not placed"]]);
    const nodes = JSON.parse((await runNode([berthBin(), "nodes", "list", "--json"], { env: env(dir) })).stdout) as {
      targets: Array<{ addr: string; tier: string }>;
    };
    expect(nodes.targets.map((t) => [t.addr, t.tier])).toEqual([["127.0.0.1:9", "paired"]]);
  });

  it("answer, two at once, while another process holds the store's write lock", async () => {
    const dir = await home();
    // A writer in the middle of a transaction (a deploy, a serve's pass): it holds SQLite's write lock until told.
    const writer = spawnNode([
      "-e",
      `const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))});
       const db = new Database(${JSON.stringify(join(dir, "controller.db"))});
       db.pragma("busy_timeout = 10000");
       db.exec("BEGIN IMMEDIATE");
       db.exec("CREATE TABLE IF NOT EXISTS reads_probe (x INTEGER)");
       db.prepare("INSERT INTO reads_probe (x) VALUES (1)").run();
       process.stdout.write("holding\\n");
       process.stdin.on("end", () => { db.exec("COMMIT"); db.close(); process.stdout.write("committed\\n"); });
       process.stdin.resume();`,
    ]);
    await writer.waitForOutput("holding");
    try {
      for (const args of LISTS) {
        const both = await Promise.all([0, 1].map(() => runNode([berthBin(), ...args, "--local"], { env: env(dir) })));
        for (const r of both) {
          expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
          expect(JSON.parse(r.stdout)).toBeTypeOf("object");
        }
      }
    } finally {
      writer.child.stdin?.end();
    }
    await writer.waitForOutput("committed");
    expect((await writer.exited()).code).toBe(0);
  });

  it("select agents by label from the store as the live list does, and refuse a bad selector with the same words", async () => {
    const dir = await home({ alpha: "a", beta: "b" });
    const names = async (...args: string[]) => {
      const r = await runNode([berthBin(), "agents", "--json", ...args], { env: env(dir) });
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { agents: Array<{ name: string }> }).agents.map((a) => a.name);
    };
    expect(await names()).toEqual(["alpha", "beta", "scout"]);
    expect(await names("-l", "team=a")).toEqual(["alpha"]);
    expect(await names("-l", "team,team!=a")).toEqual(["beta"]);
    expect(await names("-l", "!team")).toEqual(["scout"]);
    const bad = await runNode([berthBin(), "agents", "-l", "team=a b"], { env: env(dir) });
    const badLive = await runNode([berthBin(), "agents", "--refresh", "-l", "team=a b"], { env: env(dir) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("-l: ");
    expect(badLive.stderr).toBe(bad.stderr);
  });

  it("make no controller store in a home that has none", async () => {
    const dir = mkdtempSync(join(scratch, "bare-"));
    saveKeyFile(join(dir, "keys", "controller.key"), generateSigningKey());
    for (const args of LISTS) {
      const r = await runNode([berthBin(), ...args, "--local"], { env: env(dir) });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    expect(existsSync(join(dir, "controller.db"))).toBe(false);
  });
});
