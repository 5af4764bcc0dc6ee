/**
 * The campaign's world, made fresh for every seed so a seed replays alone: three `berth node serve` daemons (OS
 * processes, each with its own data dir and key), each behind a test TCP proxy, and a `$BERTH_HOME` whose controller
 * key, signed sample package, signers and permits are written here and whose nodes are added with the CLI.
 *
 * The sample package forks: its group leader (`sh`) waits on a worker child (`sleep`), both carrying the node's
 * BERTH_NAME / BERTH_INSTANCE_ID environment, so the campaign can kill either and judge liveness from /proc.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { MAIN, NodeProcess, type NodeSpec, requireBuild } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode, type Spawned, spawnNode } from "../support/process.js";
import { TcpProxy } from "../support/tcp-proxy.js";

const run = promisify(execFile);

/** Leader waits on a worker: a kill of either is a distinct fault (issue 21's process-group liveness). */
export const AGENT_SCRIPT = "#!/bin/sh\necho agent-up\nsleep 600 &\nwait\n";

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface World {
  readonly home: string;
  readonly nodes: NodeProcess[];
  readonly proxies: TcpProxy[];
  /** Prefix of every agent and workload name of this world: the marker /proc samples are filtered on. */
  readonly prefix: string;
  agentName(i: number): string;
  workloadName(i: number): string;
  specFile(i: number): string;
  pkgDir: string;
  berth(...args: string[]): Promise<CliResult>;
  spawnBerth(...args: string[]): Spawned;
  close(): Promise<void>;
}

/** NodeProcess.create without its synchronous `node init`, so three daemons come up side by side. */
async function startNode(spec: NodeSpec, dirs: string[]): Promise<NodeProcess> {
  const root = mkdtempSync(join(tmpdir(), "berth-campaign-node-"));
  dirs.push(root);
  const dataDir = join(root, "node");
  const { stdout } = await run(process.execPath, [MAIN, "node", "init", "--data-dir", dataDir, "--json"], { encoding: "utf8" });
  const out = JSON.parse(stdout) as { node_id: string; public_key: string };
  const n = new NodeProcess(dataDir, spec);
  n.nodeId = out.node_id;
  n.publicKey = out.public_key;
  if (spec.permits !== undefined) n.writePolicy("permits.json", spec.permits);
  await n.start("127.0.0.1:0");
  return n;
}

export async function makeWorld(seed: number, agents: number, nodes: number): Promise<World> {
  requireBuild();
  const home = mkdtempSync(join(tmpdir(), "berth-campaign-"));
  const dirs = [home];
  const controller = generateSigningKey();
  saveKeyFile(join(home, "keys", "controller.key"), controller);
  const signer = generateSigningKey();
  const pkgDir = join(home, "pkg");
  probePackage(pkgDir, signer, { script: AGENT_SCRIPT });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "campaign" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  const env = { BERTH_HOME: home };
  const berth = (...args: string[]) => runNode([MAIN, ...args], { env });
  const daemons = await Promise.all(Array.from({ length: nodes }, () => startNode({ controllers: [controller.publicKey], signers: [signer.publicKey], permits: [TEST_PERMIT] }, dirs)));
  const proxies = await Promise.all(daemons.map((d) => TcpProxy.start(d.address, { tls: { node: d.identity(), controller } })));
  const added = await Promise.all(proxies.map((p) => berth("nodes", "add", p.address, "--tier", "paired", "--json")));
  for (const a of added) if (a.code !== 0) throw new Error(`berth nodes add failed: ${a.stdout} ${a.stderr}`);
  const prefix = `cmp${process.pid}s${seed}`;
  const agentName = (i: number) => `${prefix}a${i}`;
  for (let i = 0; i < agents; i++) {
    writeFileSync(
      join(home, `agent-${i}.json`),
      JSON.stringify({ apiVersion: "berth/v1", kind: "Agent", metadata: { name: agentName(i) }, spec: { target: "mesh", package: "./pkg" } }),
    );
  }
  return {
    home,
    nodes: daemons,
    proxies,
    prefix,
    agentName,
    workloadName: (i) => `${prefix}w${i}`,
    specFile: (i) => join(home, `agent-${i}.json`),
    pkgDir,
    berth,
    spawnBerth: (...args) => spawnNode([MAIN, ...args], { env }),
    /**
     * Tears this world down alone (seeds may run side by side, so the harness's global cleanup is not used): its
     * proxies, its daemons, every process its nodes started (by BERTH_NODE_ID), then its directories.
     */
    async close() {
      for (const p of proxies) await p.close();
      for (const n of daemons) {
        await n.killWithInstances();
      }
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
