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
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { z } from "zod";
import { archOfNode } from "../core/packages/manifest.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { initNodeDataDir } from "../mesh/node/init.js";
import { buildPackage, initPackage, signPackage } from "../mesh/packages/dir.js";
import { runVerb } from "./run-verb.js";

/** The three local nodes: different boards and labels, so placement has something to choose between. */
export const LOCAL_NODES = [
  { name: "pi-kitchen", board: "pi5", labels: ["room=kitchen", "role=edge"] },
  { name: "pi-garage", board: "pi4", labels: ["room=garage", "role=edge"] },
  { name: "homelab", board: "server", labels: ["room=closet", "role=compute"] },
] as const;

/** Governance is default-deny; the local mesh permits the sample agents' kind and nothing else. */
const SAMPLE_PERMIT = { id: "berth-up-samples", actions: ["workload.*"], kinds: ["agent"], max_network: "egress" as const };

const UpStateSchema = z.object({
  nodes: z.array(z.object({ name: z.string(), dir: z.string(), port: z.number().int().min(1).max(65535), node_id: z.string() })),
});
type UpState = z.infer<typeof UpStateSchema>;

export interface UpOptions {
  readonly home: string;
  readonly samplesDir: string;
  /** The berth entry point (dist/src/cli/main.js) to run verbs with. */
  readonly berthMain: string;
  readonly log: (line: string) => void;
}

export interface RunningUp {
  readonly nodes: ReadonlyArray<{ name: string; address: string; nodeId: string; pid: number | undefined }>;
  readonly agents: readonly string[];
  /** Stops the sample agents through berth, then the node daemons; resolves when every process is gone. */
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

function agentSpec(name: string, packageDir: string, extra: { prefer?: string[]; env?: Record<string, string>; args?: string[] }): string {
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

function startNode(berthMain: string, dir: string, port: number, labels: readonly string[]): Promise<{ child: ChildProcess; address: string; nodeId: string }> {
  return new Promise((resolveNode, reject) => {
    const args = [berthMain, "node", "serve", "--listen", `127.0.0.1:${port}`, "--data-dir", dir, ...labels.flatMap((l) => ["--label", l])];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const fail = (why: string) => reject(new Error(`node daemon in ${dir} ${why}${err ? `: ${err.trim().split("\n").slice(-3).join(" / ")}` : ""}`));
    child.stderr?.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        try {
          const ev = JSON.parse(line) as { event?: string; address?: string; node_id?: string };
          if (ev.event === "listening" && ev.address && ev.node_id) resolveNode({ child, address: ev.address, nodeId: ev.node_id });
        } catch {
          fail("printed something other than its listening line");
        }
      }
    });
    child.once("exit", (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    const timer = setTimeout(() => fail("did not start listening within 30 s"), 30_000);
    child.once("exit", () => clearTimeout(timer));
    child.stdout?.once("data", () => clearTimeout(timer));
  });
}

export async function up(o: UpOptions): Promise<RunningUp> {
  const home = resolve(o.home);
  const upDir = join(home, "up");
  mkdirSync(join(home, "keys"), { recursive: true, mode: 0o700 });
  mkdirSync(upDir, { recursive: true });
  o.log(`berth home ${home}`);

  // First run: identities and policy. The controller trusts the local signer; nodes trust it and the controller.
  const controllerKey = ensureKey(join(home, "keys", "controller.key"));
  const signerKeyPath = join(home, "keys", "signer.key");
  const signerKey = ensureKey(signerKeyPath);
  writeJsonOnce(join(home, "signers.json"), [{ key: signerKey, name: "berth-up-samples" }]);
  writeJsonOnce(join(home, "permits.json"), [SAMPLE_PERMIT]);

  const statePath = join(upDir, "up.json");
  const previous: UpState | undefined = existsSync(statePath) ? UpStateSchema.parse(JSON.parse(readFileSync(statePath, "utf8"))) : undefined;
  const state: UpState = { nodes: [] };
  const children: ChildProcess[] = [];
  const running: Array<{ name: string; address: string; nodeId: string; pid: number | undefined }> = [];
  const stopDaemons = async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((done) => {
            if (c.exitCode !== null || c.signalCode !== null) return done();
            c.once("exit", () => done());
            c.kill("SIGTERM");
            setTimeout(() => c.kill("SIGKILL"), 10_000).unref();
          }),
      ),
    );
  };

  try {
    for (const spec of LOCAL_NODES) {
      const dir = join(upDir, "nodes", spec.name);
      const known = previous?.nodes.find((n) => n.name === spec.name);
      const init = initNodeDataDir(dir, { name: spec.name, controllers: [controllerKey], signers: [signerKey], board: spec.board, permits: [SAMPLE_PERMIT] });
      // A node keeps its port across runs, so the controller finds it at the address it trusted on first use.
      const port = known?.port ?? (await freePort());
      const started = await startNode(o.berthMain, dir, port, spec.labels);
      children.push(started.child);
      state.nodes.push({ name: spec.name, dir, port, node_id: init.nodeId });
      running.push({ name: spec.name, address: started.address, nodeId: started.nodeId, pid: started.child.pid });
      o.log(`node ${spec.name.padEnd(11)} ${spec.board.padEnd(7)} ${started.address}  ${started.nodeId}`);
    }
    writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`);

    const listed = await runVerb(o.berthMain, home, ["nodes", "list", "--json"]);
    const knownAddrs = new Set<string>();
    if (listed.code === 0) {
      for (const t of (JSON.parse(listed.stdout) as { targets?: Array<{ addr?: string; address?: string }> }).targets ?? []) {
        const addr = t.addr ?? t.address;
        if (addr) knownAddrs.add(addr);
      }
    }
    for (const n of running) {
      if (knownAddrs.has(n.address)) continue;
      const added = await runVerb(o.berthMain, home, ["nodes", "add", n.address, "--tier", "paired", "--json"]);
      if (added.code !== 0) throw new Error(`berth nodes add ${n.address} failed: ${(added.stderr || added.stdout).trim()}`);
    }

    const agents: string[] = [];
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
      const extra = name === "scout" ? { prefer: pi5 ? [pi5.nodeId] : [], env: { LOG_LEVEL: "info" }, args: ["--watch", "inbox"] } : {};
      writeFileSync(specPath, agentSpec(name, packageDir, extra));
      const deployed = await runVerb(o.berthMain, home, ["deploy", specPath, "--json"]);
      let summary: string;
      try {
        const doc = JSON.parse(deployed.stdout) as { state?: string; row?: string; instance?: unknown; message?: string; error?: string };
        summary = doc.message ?? doc.error ?? doc.row ?? doc.state ?? deployed.stdout.trim();
      } catch {
        summary = (deployed.stderr || deployed.stdout).trim();
      }
      if (deployed.code !== 0) throw new Error(`berth deploy ${name} failed: ${summary}`);
      o.log(`agent ${name.padEnd(10)} ${summary.startsWith(`${name}: `) ? summary.slice(name.length + 2) : summary}`);
      agents.push(name);
    }

    return {
      nodes: running,
      agents,
      async shutdown() {
        for (const name of agents) {
          const stopped = await runVerb(o.berthMain, home, ["agent", "stop", name, "--json"]);
          o.log(`stopped agent ${name}${stopped.code === 0 ? "" : ` (berth agent stop: ${(stopped.stderr || stopped.stdout).trim()})`}`);
        }
        await stopDaemons();
      },
    };
  } catch (error) {
    await stopDaemons();
    throw error;
  }
}
