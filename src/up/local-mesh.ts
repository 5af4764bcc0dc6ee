/**
 * `berth up` (issue 8, first part): a whole berth on one laptop, on embedded defaults. It prepares a berth home
 * (controller key, a package signer key, policy files), starts three local node daemons as separate OS processes with
 * different boards and labels, builds and signs the sample agents shipped in `samples/agents/`, and deploys them with
 * `berth deploy` — so a second `berth up` is idempotent exactly the way `berth deploy` is.
 *
 * Everything past the first-run files goes through berth's own CLI in child processes (`nodes add`, `deploy`,
 * `agents`, `agent stop`): `up` holds no decision of its own, and what it shows is what a user would get by typing
 * those commands.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { archOfNode } from "../core/packages/manifest.js";
import { firstClosedDirectory } from "../kit/home.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { initNodeDataDir } from "../mesh/node/init.js";
import { buildPackage, initPackage, signPackage } from "../mesh/packages/dir.js";
import { startDaemon, type UpAgents, type UpLogFormat, upAgents } from "./node-daemons.js";
import { runVerb } from "./run-verb.js";
import { stopLocalMesh } from "./stop-local-mesh.js";
import { identityOf, liveDaemons, liveForegroundUp, readUpState, type UpState, writeUpState } from "./up-state.js";

/** The three local nodes: different boards and labels, so placement has something to choose between. */
export const LOCAL_NODES = [
  { name: "pi-kitchen", board: "pi5", labels: ["room=kitchen", "role=edge"] },
  { name: "pi-garage", board: "pi4", labels: ["room=garage", "role=edge"] },
  { name: "homelab", board: "server", labels: ["room=closet", "role=compute"] },
] as const;

/** Governance is default-deny; the local mesh permits the sample agents' kind and nothing else. */
const SAMPLE_PERMIT = {
  id: "berth-up-samples",
  actions: ["workload.*"],
  kinds: ["agent"],
  max_network: "egress" as const,
};

export interface UpOptions {
  readonly home: string;
  readonly samplesDir: string;
  /** The berth entry point (dist/src/cli/entry/berth.cjs, or main.js) to run verbs and node daemons with. */
  readonly berthMain: string;
  readonly log: (line: string) => void;
  /** `berth up --detach`: nothing stays in the foreground; `berth down` stops it all. */
  readonly detached: boolean;
  /** Issue 33 item 11: `berth up --allow-root-agents`, the only way a root `berth up` runs its agents as root. */
  readonly allowRootAgents?: boolean;
  /** `--log-format`, passed on to the node daemons it starts. */
  readonly logFormat?: UpLogFormat;
}

/**
 * Issue 33 item 11: an agent user must pass through every directory above its instance. The home and berth up's own
 * directories are made passable (search only, never listing: 0711; the files in them keep 0600); a directory above
 * the home is not berth's to change, so one the agent user cannot pass is refused, naming it and the two ways out.
 */
function letAgentUserThrough(home: string, upDir: string, agents: UpAgents): void {
  if (agents.kind !== "user") return;
  const closed = firstClosedDirectory(dirname(realpathSync(home)));
  if (closed !== null) {
    throw new Error(
      `berth up runs as root, so its agents run as ${agents.user}, who cannot pass through ${closed.dir} (mode ${closed.mode.toString(8).padStart(4, "0")}): give berth up a home others may pass through (BERTH_HOME=/var/lib/berth or --data-dir DIR), or run berth up --allow-root-agents to run the agents as root`,
    );
  }
  for (const dir of [home, upDir, join(upDir, "nodes")]) {
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, (statSync(dir).mode & 0o7777) | 0o711);
  }
}

/** The line berth up prints about who its agents run as (issue 33 item 11: said on its own output, not in a log). */
export function describeUpAgents(agents: UpAgents): string | null {
  switch (agents.kind) {
    case "invoker":
      return null;
    case "user":
      return `agents      run as ${agents.user}, not root (berth up runs as root; --allow-root-agents runs them as root)`;
    case "root":
      return "agents      run as ROOT (--allow-root-agents): every agent can do anything on this machine";
    default: {
      const never: never = agents;
      return never;
    }
  }
}

/** A `berth up` (detached, or in another terminal) still runs in this home: starting a second would collide with it. */
export class AlreadyUp extends Error {
  constructor(home: string, what: string) {
    super(`berth is already up in ${home} (${what}); \`berth down\` stops it, \`berth agents\` shows what runs`);
    this.name = "AlreadyUp";
  }
}

export interface RunningUp {
  readonly nodes: ReadonlyArray<{ name: string; address: string; nodeId: string; pid: number }>;
  readonly agents: readonly string[];
  /** Stops the agents through berth, then the node daemons (stop-local-mesh.ts); resolves when every process is gone. */
  shutdown(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function ensureKey(path: string): string {
  if (existsSync(path)) return loadKeyFile(path).publicKey;
  const key = generateSigningKey();
  saveKeyFile(path, key);
  return key.publicKey;
}

function writeJsonOnce(path: string, value: unknown): void {
  if (!existsSync(path)) writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

/** Copies a sample into the berth home and builds + signs it there, only when its files changed. */
function stagePackage(sampleDir: string, stageDir: string, signerKeyPath: string): string {
  mkdirSync(stageDir, { recursive: true });
  const files = readdirSync(sampleDir).filter((f) => !f.startsWith("."));
  let changed = !existsSync(join(stageDir, "berth-package.json"));
  for (const f of files) {
    const src = readFileSync(join(sampleDir, f));
    const dst = join(stageDir, f);
    if (!existsSync(dst) || !readFileSync(dst).equals(src)) {
      copyFileSync(join(sampleDir, f), dst);
      chmodSync(dst, 0o755);
      changed = true;
    }
  }
  if (!changed) return stageDir;
  const arch = archOfNode(process.arch);
  if (arch === null) throw new Error(`berth up: this machine's architecture ${process.arch} has no package variant`);
  const os = process.platform === "darwin" ? "darwin" : "linux";
  const srcManifest = join(stageDir, "berth-package.src.json");
  if (!existsSync(srcManifest)) {
    initPackage(stageDir, {
      name: sampleDir.split("/").pop() as string,
      kind: "agent",
      files,
      network: "egress",
      variants: [{ id: `${arch}-${os}`, arch, os, entry: { program: "run.sh", args: [] }, requires: [] }],
    });
  }
  buildPackage(stageDir);
  signPackage(stageDir, loadKeyFile(signerKeyPath));
  return stageDir;
}

function agentSpec(
  name: string,
  packageDir: string,
  extra: { prefer?: string[]; env?: Record<string, string>; args?: string[] },
): string {
  const doc = {
    apiVersion: "berth/v1",
    kind: "Agent",
    metadata: { name },
    spec: {
      target: "mesh",
      package: packageDir,
      config: { args: extra.args ?? [], env: extra.env ?? {} },
      mesh: { prefer: extra.prefer ?? [] },
    },
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export async function up(o: UpOptions): Promise<RunningUp> {
  const home = resolve(o.home);
  const upDir = join(home, "up");
  mkdirSync(join(home, "keys"), { recursive: true, mode: 0o700 });
  mkdirSync(upDir, { recursive: true });
  o.log(`berth home ${home}`);
  const agents = upAgents(process.getuid?.() ?? -1, o.allowRootAgents === true);
  letAgentUserThrough(home, upDir, agents);
  const who = describeUpAgents(agents);
  if (who) o.log(who);

  // First run: identities and policy. The controller trusts the local signer; nodes trust it and the controller.
  const controllerKey = ensureKey(join(home, "keys", "controller.key"));
  const signerKeyPath = join(home, "keys", "signer.key");
  const signerKey = ensureKey(signerKeyPath);
  writeJsonOnce(join(home, "signers.json"), [{ key: signerKey, name: "berth-up-samples" }]);
  writeJsonOnce(join(home, "permits.json"), [SAMPLE_PERMIT]);

  const previous = readUpState(home);
  if (previous) {
    const foreground = liveForegroundUp(previous);
    const daemons = liveDaemons(previous);
    if (foreground) throw new AlreadyUp(home, `berth up runs in another terminal, pid ${foreground.pid}`);
    if (daemons.length > 0)
      throw new AlreadyUp(
        home,
        `${previous.detached ? "detached; " : ""}node daemons running, pids ${daemons.map((n) => n.daemon?.pid).join(", ")}`,
      );
  }
  const self = identityOf(process.pid);
  // Written after every step, so whatever set-up reached is found again by the stop below or by `berth down`.
  // Nodes not started yet keep their recorded port, so an interrupted set-up does not move them.
  const state: UpState = {
    nodes: (previous?.nodes ?? []).map((n) => ({ ...n, daemon: null })),
    agents: [],
    up: o.detached || !self ? null : self,
    detached: o.detached,
  };
  const running: Array<{ name: string; address: string; nodeId: string; pid: number }> = [];
  const stopAll = () => stopLocalMesh({ home, berthMain: o.berthMain, log: o.log });

  try {
    writeUpState(home, state);
    for (const spec of LOCAL_NODES) {
      const dir = join(upDir, "nodes", spec.name);
      const known = previous?.nodes.find((n) => n.name === spec.name);
      const init = initNodeDataDir(dir, {
        name: spec.name,
        controllers: [controllerKey],
        signers: [signerKey],
        board: spec.board,
        permits: [SAMPLE_PERMIT],
      });
      // A node keeps its port across runs, so the controller finds it at the address it trusted on first use.
      const port = known?.port ?? (await freePort());
      const started = await startDaemon(o.berthMain, dir, port, spec.labels, agents, o.logFormat);
      state.nodes = [
        ...state.nodes.filter((n) => n.name !== spec.name),
        { name: spec.name, dir, port, node_id: init.nodeId, daemon: started.identity },
      ];
      writeUpState(home, state);
      running.push({ name: spec.name, address: started.address, nodeId: started.nodeId, pid: started.identity.pid });
      o.log(`node ${spec.name.padEnd(11)} ${spec.board.padEnd(7)} ${started.address}  ${started.nodeId}`);
    }

    const listed = await runVerb(o.berthMain, home, ["nodes", "list", "--json"]);
    const knownAddrs = new Set<string>();
    if (listed.code === 0) {
      for (const t of (JSON.parse(listed.stdout) as { targets?: Array<{ addr?: string; address?: string }> }).targets ??
        []) {
        const addr = t.addr ?? t.address;
        if (addr) knownAddrs.add(addr);
      }
    }
    for (const n of running) {
      if (knownAddrs.has(n.address)) continue;
      const added = await runVerb(o.berthMain, home, ["nodes", "add", n.address, "--tier", "paired", "--json"]);
      if (added.code !== 0)
        throw new Error(`berth nodes add ${n.address} failed: ${(added.stderr || added.stdout).trim()}`);
    }

    const pi5 = running.find((n) => n.name === "pi-kitchen");
    // The agent that prefers a node is deployed first, so the spread of what is placed (issue 16) puts the others
    // beside it on the other nodes instead of where its preference will go.
    const prefersANode = (name: string) => (name === "scout" ? 0 : 1);
    const samples = readdirSync(join(o.samplesDir, "agents"), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort((a, b) => prefersANode(a) - prefersANode(b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const name of samples) {
      const packageDir = stagePackage(join(o.samplesDir, "agents", name), join(upDir, "packages", name), signerKeyPath);
      const specPath = join(upDir, "agents", `${name}.json`);
      mkdirSync(join(upDir, "agents"), { recursive: true });
      const extra =
        name === "scout"
          ? { prefer: pi5 ? [pi5.nodeId] : [], env: { LOG_LEVEL: "info" }, args: ["--watch", "inbox"] }
          : {};
      writeFileSync(specPath, agentSpec(name, packageDir, extra));
      // Recorded before the deploy: one interrupted half-way is still stopped by name.
      state.agents.push(name);
      writeUpState(home, state);
      const deployed = await runVerb(o.berthMain, home, ["deploy", specPath, "--json"]);
      let summary: string;
      try {
        const doc = JSON.parse(deployed.stdout) as {
          state?: string;
          row?: string;
          instance?: unknown;
          message?: string;
          error?: string;
        };
        summary = doc.message ?? doc.error ?? doc.row ?? doc.state ?? deployed.stdout.trim();
      } catch {
        summary = (deployed.stderr || deployed.stdout).trim();
      }
      if (deployed.code !== 0) throw new Error(`berth deploy ${name} failed: ${summary}`);
      o.log(`agent ${name.padEnd(10)} ${summary.startsWith(`${name}: `) ? summary.slice(name.length + 2) : summary}`);
    }

    return {
      nodes: running,
      agents: [...state.agents],
      async shutdown() {
        await stopAll();
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
