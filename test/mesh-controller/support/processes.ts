/**
 * The seed fixture with real processes (spec/mesh.md §18.2): two `berth node serve` daemons on loopback, each with its
 * own data directory, key and config; the controller in the test process over TCP; the preferred node reached
 * through a TCP proxy the test controls. Daemons and instance process groups are killed by `cleanupProcesses()`.
 */
import { databaseOption, testDatabaseFor } from "../../support/test-database.js";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { JsonObject } from "../../../src/core/crypto/canonical.js";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import type { PermitRuleInput } from "../../../src/core/governance/policy.js";
import { generateSigningKey } from "../../../src/keys/key-file.js";
import { NodeClient } from "../../../src/mesh/client/node-client.js";
import { type ControllerOptions, MeshController } from "../../../src/mesh/controller/controller.js";
import { TlsConnector } from "../../../src/mesh/transport/tls.js";
import { processStartTime } from "../../../src/store/lease.js";
import { cleanup, NodeProcess, requireBuild, tempDir } from "../../mesh/harness.js";
import { TcpProxy } from "../../support/tcp-proxy.js";
import { probePackage, TEST_PERMIT, writeJson } from "./package.js";

export interface ProcessFixture {
  readonly key: SigningKey;
  readonly signer: SigningKey;
  readonly pkgDir: string;
  readonly controllerDir: string;
  /** The controller's store when it is not the SQLite file in controllerDir (BERTH_TEST_DATABASE=postgres). */
  readonly database: string | undefined;
  readonly first: NodeProcess;
  readonly second: NodeProcess;
  readonly proxy: TcpProxy;
  controller: MeshController;
  reopen(extra?: Partial<ControllerOptions>): Promise<MeshController>;
  /** Instance rows the node lists, through a signed status straight to the daemon (not through the proxy). */
  instances(node: NodeProcess): Promise<JsonObject[]>;
}

const proxies = new Set<TcpProxy>();
const controllers = new Set<MeshController>();

export const TIMEOUTS = { callMs: 5_000, placeMs: 15_000, describeMs: 3_000 };

export async function processFixture(
  opts: {
    permits?: [PermitRuleInput[], PermitRuleInput[]];
    config?: [JsonObject?, JsonObject?];
    script?: string;
    network?: "none" | "lan" | "egress";
  } = {},
): Promise<ProcessFixture> {
  requireBuild();
  const root = tempDir("berth-mesh-ctl-");
  const key = generateSigningKey();
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  probePackage(pkgDir, signer, {
    ...(opts.script === undefined ? {} : { script: opts.script }),
    ...(opts.network === undefined ? {} : { network: opts.network }),
  });
  const spec = (permits: PermitRuleInput[], config: JsonObject | undefined) => ({
    controllers: [key.publicKey],
    signers: [signer.publicKey],
    permits,
    ...(config ? { config } : {}),
  });
  const [first, second] = await Promise.all([
    NodeProcess.create(spec(opts.permits?.[0] ?? [TEST_PERMIT], opts.config?.[0])),
    NodeProcess.create(spec(opts.permits?.[1] ?? [TEST_PERMIT], opts.config?.[1])),
  ]);
  const proxy = await TcpProxy.start(first.address, { tls: { node: first.identity(), controller: key } });
  proxies.add(proxy);
  const controllerDir = join(root, "controller");
  // BERTH_TEST_DATABASE=postgres: the controller's store is a fresh PostgreSQL database (test/support/test-database.ts).
  const database = await testDatabaseFor(controllerDir);
  const open = async (extra: Partial<ControllerOptions> = {}) => {
    const c = await MeshController.open({
      dataDir: controllerDir,
      ...databaseOption(database),
      key,
      connector: new TlsConnector({ identity: key, connectTimeoutMs: 2_000 }),
      timeouts: TIMEOUTS,
      ...extra,
    });
    controllers.add(c);
    return c;
  };
  const controller = await open();
  // The PostgreSQL tier must really be on PostgreSQL: no SQLite store appears in the home.
  if (database && existsSync(join(controllerDir, "controller.db")))
    throw new Error("BERTH_TEST_DATABASE=postgres, yet the controller opened controller.db");
  writeJson(join(controllerDir, "signers.json"), [{ key: signer.publicKey, name: "test-signer" }]);
  writeJson(join(controllerDir, "permits.json"), [TEST_PERMIT]);
  const observer = new NodeClient({
    key,
    connector: new TlsConnector({ identity: key, connectTimeoutMs: 2_000 }),
    timeoutMs: 5_000,
  });
  const fx: ProcessFixture = {
    key,
    signer,
    pkgDir,
    controllerDir,
    database,
    first,
    second,
    proxy,
    controller,
    async reopen(extra) {
      await fx.controller.close();
      controllers.delete(fx.controller);
      fx.controller = await open(extra);
      return fx.controller;
    },
    async instances(node) {
      const r = await observer.call(node.target(), "status", { instance_id: null, include_departed: false });
      if (r.kind !== "ok") throw new Error(`status of ${node.nodeId} failed: ${JSON.stringify(r)}`);
      return (r.result.rows as JsonObject[]).filter(
        (row) => typeof row.instance_id === "string" && !("departed" in row),
      );
    },
  };
  return fx;
}

export async function cleanupProcesses(): Promise<void> {
  for (const c of controllers) await c.close();
  controllers.clear();
  for (const p of proxies) await p.close();
  proxies.clear();
  await cleanup();
}

/** The start-time field of /proc/<pid>/stat: with the pid, the identity of a process (Linux). */
export const startMarker = processStartTime;
