/**
 * The seed fixture in one process (spec/mesh.md §18.1): one controller key; two node daemons with `pi5` facts, a native
 * route for the host architecture, `self_tier: paired`, the controller key authorised, their own chains and the
 * `test-agent` permit; a signed `probe` package trusted by all three; connections through the in-process
 * connector, wrapped by a fault-injecting one.
 */
import { databaseOption, testDatabaseFor } from "../../support/test-database.js";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verifyStoredChain } from "../../../src/chain/chain.js";
import type { JsonObject } from "../../../src/core/crypto/canonical.js";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import type { Authority } from "../../../src/core/protocol/messages.js";
import { generateSigningKey, saveKeyFile } from "../../../src/keys/key-file.js";
import { NodeClient } from "../../../src/mesh/client/node-client.js";
import { MeshController } from "../../../src/mesh/controller/index.js";
import type { ControllerOptions } from "../../../src/mesh/controller/controller.js";
import { NodeDaemon } from "../../../src/mesh/node/daemon.js";
import { MemoryConnector } from "../../../src/mesh/transport/memory.js";
import { openDatabase } from "../../../src/store/sqlite.js";
import { FaultConnector } from "./fault-connector.js";
import { probePackage, TEST_PERMIT, writeJson } from "./package.js";

export interface HostNode {
  readonly name: string;
  readonly dataDir: string;
  readonly addr: string;
  daemon: NodeDaemon;
  readonly id: string;
}

export interface SeedFixture {
  readonly root: string;
  readonly key: SigningKey;
  readonly signer: SigningKey;
  readonly pkgDir: string;
  readonly packageId: string;
  readonly memory: MemoryConnector;
  readonly faults: FaultConnector;
  readonly nodes: HostNode[];
  controller: MeshController;
  readonly controllerDir: string;
  /** The controller's store when it is not the SQLite file in controllerDir (BERTH_TEST_DATABASE=postgres). */
  readonly database: string | undefined;
  /** Re-opens the controller on the same database (a restart). */
  reopen(extra?: Partial<ControllerOptions>): Promise<MeshController>;
  close(): Promise<void>;
}

export async function startNode(
  root: string,
  name: string,
  controllerKey: string,
  signerKey: string,
  permits: unknown[],
  memory: MemoryConnector,
): Promise<HostNode> {
  const dataDir = join(root, name);
  saveKeyFile(join(dataDir, "node.key"), generateSigningKey());
  writeJson(join(dataDir, "node.json"), {
    name,
    controllers: [{ key: controllerKey }],
    self_tier: "paired",
    board: "pi5",
  });
  writeJson(join(dataDir, "signers.json"), [{ key: signerKey, name: "test-signer" }]);
  writeJson(join(dataDir, "permits.json"), permits);
  const daemon = await NodeDaemon.start({
    dataDir,
    listen: "127.0.0.1:0",
    version: "test",
    allowRootAgents: true,
    pollMs: 50,
  });
  const node: HostNode = { name, dataDir, addr: `mem://${name}`, daemon, id: daemon.nodeId };
  memory.register(name, (stream) => void node.daemon.service.serve(stream));
  return node;
}

export async function seedFixture(
  opts: { permits?: Array<unknown[]>; controllerOptions?: Partial<ControllerOptions> } = {},
): Promise<SeedFixture> {
  const root = mkdtempSync(join(tmpdir(), "berth-mesh-ctl-"));
  const key = generateSigningKey();
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  const packageId = probePackage(pkgDir, signer);
  const memory = new MemoryConnector();
  const faults = new FaultConnector(memory);
  const nodes: HostNode[] = [];
  for (const [i, name] of ["first", "second"].entries()) {
    nodes.push(
      await startNode(root, name, key.publicKey, signer.publicKey, opts.permits?.[i] ?? [TEST_PERMIT], memory),
    );
  }
  const controllerDir = join(root, "controller");
  // BERTH_TEST_DATABASE=postgres: the controller's store is a fresh PostgreSQL database (test/support/test-database.ts).
  const database = await testDatabaseFor(controllerDir);
  const options = (extra: Partial<ControllerOptions> = {}): ControllerOptions => ({
    dataDir: controllerDir,
    ...databaseOption(database),
    key,
    connector: faults,
    timeouts: { callMs: 5_000, placeMs: 10_000, describeMs: 2_000 },
    ...opts.controllerOptions,
    ...extra,
  });
  const open = (extra?: Partial<ControllerOptions>) => MeshController.open(options(extra));
  // The controller trusts the same signer and carries the same permit.
  const controller = await (async () => {
    const c = await open();
    // The PostgreSQL tier must really be on PostgreSQL: no SQLite store appears in the home.
    if (database && existsSync(join(controllerDir, "controller.db")))
      throw new Error("BERTH_TEST_DATABASE=postgres, yet the controller opened controller.db");
    writeJson(join(controllerDir, "signers.json"), [{ key: signer.publicKey, name: "test-signer" }]);
    writeJson(join(controllerDir, "permits.json"), [TEST_PERMIT]);
    return c;
  })();
  const fixture: SeedFixture = {
    root,
    key,
    signer,
    pkgDir,
    packageId,
    memory,
    faults,
    nodes,
    controller,
    controllerDir,
    database,
    async reopen(extra) {
      await fixture.controller.close();
      fixture.controller = await open(extra);
      return fixture.controller;
    },
    async close() {
      // The nodes serve the controller's store (issue 20): the cleanup speaks for it.
      let authority: Authority | undefined;
      try {
        authority = await fixture.controller.authority.current();
        await fixture.controller.close();
      } catch {
        // already closed
      }
      for (const n of nodes) {
        if (authority) await unloadEverything(n, key, authority);
        await n.daemon.close();
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** A client with the controller's key that bypasses the fault connector: the test's own eyes. */
export function observer(key: SigningKey, memory: MemoryConnector, authority?: Authority): NodeClient {
  return new NodeClient({
    key,
    connector: memory,
    timeoutMs: 5_000,
    ...(authority ? { authority: () => authority } : {}),
  });
}

/** The node's instance rows, read through a signed status call. */
export async function instancesOn(node: HostNode, key: SigningKey, connector: MemoryConnector): Promise<JsonObject[]> {
  const r = await observer(key, connector).call(
    { addr: node.addr, nodeId: node.id, key: nodeKeyOf(node), bootId: node.daemon.bootId },
    "status",
    {
      instance_id: null,
      include_departed: false,
    },
  );
  if (r.kind !== "ok") throw new Error(`status of ${node.name} failed: ${JSON.stringify(r)}`);
  return (r.result.rows as JsonObject[]).filter((row) => typeof row.instance_id === "string" && !("departed" in row));
}

const nodeKeys = new Map<string, string>();
export function nodeKeyOf(node: HostNode): string {
  const cached = nodeKeys.get(node.dataDir);
  if (cached) return cached;
  const db = openDatabase(join(node.dataDir, "node.db"), { readonly: true });
  try {
    const row = db.prepare("SELECT owner_key FROM audit_chain WHERE own = 1").get() as { owner_key: string };
    nodeKeys.set(node.dataDir, row.owner_key);
    return row.owner_key;
  } finally {
    db.close();
  }
}

/** Events of a node's own chain, read from its database. */
export function nodeEvents(node: HostNode, kind: string): Array<{ source: string; payload: JsonObject }> {
  const db = openDatabase(join(node.dataDir, "node.db"), { readonly: true });
  try {
    return (
      db
        .prepare(
          "SELECT e.source, e.payload FROM audit_event e JOIN audit_chain c ON c.chain_id = e.chain_id AND c.own = 1 WHERE e.kind = ? ORDER BY e.seq",
        )
        .all(kind) as Array<{
        source: string;
        payload: string;
      }>
    ).map((r) => ({ source: r.source, payload: JSON.parse(r.payload) as JsonObject }));
  } finally {
    db.close();
  }
}

/** Events of the controller chain. */
export function controllerEvents(controller: MeshController, kind: string): Promise<JsonObject[]> {
  return controller.store.events({ kind });
}

/** Verifies a node's chain as stored (every test that writes chains ends by verifying them). */
export function verifyNodeChain(node: HostNode): boolean {
  const db = openDatabase(join(node.dataDir, "node.db"), { readonly: true });
  try {
    const own = db.prepare("SELECT chain_id, owner_key FROM audit_chain WHERE own = 1").get() as {
      chain_id: string;
      owner_key: string;
    };
    return verifyStoredChain(db, own.chain_id, { key: own.owner_key }).ok;
  } finally {
    db.close();
  }
}

async function unloadEverything(node: HostNode, key: SigningKey, authority: Authority): Promise<void> {
  const memory = new MemoryConnector();
  memory.register(node.name, (stream) => void node.daemon.service.serve(stream));
  const client = observer(key, memory, authority);
  const ref = { addr: node.addr, nodeId: node.id, key: nodeKeyOf(node), bootId: node.daemon.bootId };
  const r = await client.call(ref, "status", { instance_id: null, include_departed: false });
  if (r.kind !== "ok") return;
  for (const row of r.result.rows as JsonObject[]) {
    if (typeof row.instance_id !== "string" || "departed" in row) continue;
    await client.call(ref, "unload", { instance_id: row.instance_id }, { decisionId: "f".repeat(64) });
  }
}

/** Whether any process of the group `pgid` is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return true;
}

/**
 * Waits on a condition with a deadline (never a fixed sleep): 30 s by default, since the conditions sit behind process
 * starts, PostgreSQL and TLS connects, which on a machine at load 30 (CI's slow moments) take well over 10 s.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
