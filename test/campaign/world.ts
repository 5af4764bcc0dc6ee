/**
 * The campaign's world: three `berth node serve` daemons (OS processes, each with its own data dir and key), each
 * behind a test TCP proxy, and a `$BERTH_HOME` whose controller key, signed sample package, signers and permits are
 * written here and whose nodes are added with the CLI. One node (`leaseNode`) runs with a lease (`lease_ms` in its
 * node.json, issue 16), the others without.
 *
 * A world is made once and runs a chunk of schedules one after another (run.ts), each with its own agent names
 * (`<world prefix>s<seed>a<i>`), so the daemons' start-up and the home's set-up are paid once per chunk, not once per
 * schedule. Its directories live on /dev/shm when there is one (the judge reads processes and stores, never needs a
 * disk's durability, and a shared machine's disk is slow).
 *
 * The sample package forks: its group leader (`sh`) waits on a worker child (`sleep`), both carrying the node's
 * BERTH_NAME / BERTH_INSTANCE_ID / BERTH_NODE_ID environment, so the campaign can kill either and judge liveness
 * from /proc.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
export const AGENT_SCRIPT = "#!/bin/sh\necho agent-up\nsleep 3600 &\nwait\n";

/** The leased node's `lease_ms`: short, so a schedule sees leases run out, and above the 3 s floor. */
export const LEASE_MS = 5_000;

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
  /** The node running with a lease (index into nodes/proxies; null: none), and its lease. */
  readonly leaseNode: number | null;
  readonly leaseMs: number;
  /** Names of one schedule (`seed`) of this world. */
  agentName(seed: number, i: number): string;
  workloadName(seed: number, i: number): string;
  /** The seed whose schedule a name of this world belongs to (null: not one of this world's names). */
  seedOf(name: string): number | null;
  /** Writes agent spec files for a schedule's agents; returns their paths. */
  writeAgents(seed: number, count: number): string[];
  specFile(seed: number, i: number): string;
  pkgDir: string;
  berth(...args: string[]): Promise<CliResult>;
  spawnBerth(...args: string[]): Spawned;
  close(): Promise<void>;
}

/** Where worlds live: /dev/shm when it is there (see the header), else the temp dir. */
function worldRoot(): string {
  const shm = "/dev/shm";
  return existsSync(shm) ? shm : tmpdir();
}

/** NodeProcess.create without its synchronous `node init`, so three daemons come up side by side. */
async function startNode(root: string, i: number, spec: NodeSpec): Promise<NodeProcess> {
  const dataDir = join(root, `node-${i}`);
  const { stdout } = await run(process.execPath, [MAIN, "node", "init", "--data-dir", dataDir, "--json"], {
    encoding: "utf8",
  });
  const out = JSON.parse(stdout) as { node_id: string; public_key: string };
  const n = new NodeProcess(dataDir, spec);
  n.nodeId = out.node_id;
  n.publicKey = out.public_key;
  if (spec.config !== undefined) {
    const config = JSON.parse(readFileSync(join(dataDir, "node.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dataDir, "node.json"), JSON.stringify({ ...config, ...spec.config }));
  }
  if (spec.permits !== undefined) n.writePolicy("permits.json", spec.permits);
  await n.start("127.0.0.1:0");
  return n;
}

/** A world that could not be set up (not a finding about berth: its seeds are run again in another world). */
export class WorldSetupError extends Error {}

let worlds = 0;
/** Teardowns of the worlds still open in this process (closeOpenWorlds, on a signal). */
const open = new Set<() => Promise<void>>();

/** Tears down every world still open in this process: its daemons and their agents, its directories. */
export async function closeOpenWorlds(): Promise<void> {
  for (const teardown of [...open]) await teardown().catch(() => undefined);
}

export async function makeWorld(
  nodes: number,
  opts: { leaseNode?: number | null; leaseMs?: number; onProxy?: (i: number, p: TcpProxy) => void } = {},
): Promise<World> {
  requireBuild();
  const root = mkdtempSync(join(worldRoot(), "berth-campaign-"));
  const home = join(root, "home");
  const controller = generateSigningKey();
  saveKeyFile(join(home, "keys", "controller.key"), controller);
  const signer = generateSigningKey();
  const pkgDir = join(home, "pkg");
  probePackage(pkgDir, signer, { script: AGENT_SCRIPT });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "campaign" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  const env = { BERTH_HOME: home };
  const berth = (...args: string[]) => runNode([MAIN, ...args], { env });
  const leaseNode = opts.leaseNode === undefined ? nodes - 1 : opts.leaseNode;
  const leaseMs = opts.leaseMs ?? LEASE_MS;
  const base: NodeSpec = { controllers: [controller.publicKey], signers: [signer.publicKey], permits: [TEST_PERMIT] };
  const daemons = await Promise.all(
    Array.from({ length: nodes }, (_, i) =>
      startNode(root, i, i === leaseNode ? { ...base, config: { lease_ms: leaseMs } } : base),
    ),
  );
  const proxies = await Promise.all(
    daemons.map((d) => TcpProxy.start(d.address, { tls: { node: d.identity(), controller } })),
  );
  const teardown = async () => {
    open.delete(teardown);
    for (const p of proxies) await p.close();
    for (const n of daemons) await n.killWithInstances();
    rmSync(root, { recursive: true, force: true });
  };
  open.add(teardown);
  try {
    for (const [i, p] of proxies.entries()) opts.onProxy?.(i, p);
    // One after another: `nodes add` writes the store, and three at once only contend for it. A loaded machine may
    // miss the CLI's connect deadline: setting up is not judged, so it is tried again.
    for (const p of proxies) {
      for (let attempt = 1; ; attempt++) {
        const a = await berth("nodes", "add", p.address, "--tier", "paired", "--json");
        if (a.code === 0) break;
        if (attempt === 8)
          throw new WorldSetupError(`berth nodes add failed ${attempt} times: ${a.stdout} ${a.stderr}`);
        await new Promise((r) => setTimeout(r, 1_000 * attempt));
      }
    }
  } catch (error) {
    await teardown();
    throw error;
  }
  worlds++;
  const prefix = `cmp${process.pid}w${worlds}`;
  const agentName = (seed: number, i: number) => `${prefix}s${seed}a${i}`;
  const specFile = (seed: number, i: number) => join(home, `agent-${seed}-${i}.json`);
  return {
    home,
    nodes: daemons,
    proxies,
    prefix,
    leaseNode,
    leaseMs,
    agentName,
    workloadName: (seed, i) => `${prefix}s${seed}w${i}`,
    specFile,
    seedOf(name) {
      const m = new RegExp(`^${prefix}s(\\d+)[aw]\\d+$`).exec(name);
      return m ? Number(m[1]) : null;
    },
    writeAgents(seed, count) {
      return Array.from({ length: count }, (_, i) => {
        const file = specFile(seed, i);
        writeFileSync(
          file,
          JSON.stringify({
            apiVersion: "berth/v1",
            kind: "Agent",
            metadata: { name: agentName(seed, i) },
            spec: { target: "mesh", package: "./pkg" },
          }),
        );
        return file;
      });
    },
    pkgDir,
    berth,
    spawnBerth: (...args) => spawnNode([MAIN, ...args], { env }),
    /**
     * Tears this world down alone (worlds run side by side, so the harness's global cleanup is not used): its
     * proxies, its daemons, every process its nodes started (by BERTH_NODE_ID), then its directories.
     */
    async close() {
      if (process.env.BERTH_CAMPAIGN_CPU === "1") {
        const ticks = daemons.map((d) => {
          try {
            const f = readFileSync(`/proc/${d.proc?.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
            return Number(f[11]) + Number(f[12]);
          } catch {
            return -1;
          }
        });
        const self = process.cpuUsage();
        process.stderr.write(
          `cpu: daemons ${ticks.map((t) => t * 10).join("/")} ms (since their last start), campaign process ${((self.user + self.system) / 1000).toFixed(0)} ms\n`,
        );
      }
      await teardown();
    },
  };
}
