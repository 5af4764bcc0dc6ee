/**
 * Real node daemons on loopback for the mesh tests: each `NodeProcess` is `node dist/src/cli/entry/main.js node serve`
 * with its own data directory, key and config. Every daemon and every instance process group a test starts is
 * killed by `cleanup()` (call it in afterEach/afterAll). No fixed sleeps: everything waits on a condition.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findEvents, verifyStoredChain } from "../../src/chain/chain.js";
import type { SealedEvent } from "../../src/core/chain/event.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import type { PermitRuleInput } from "../../src/core/governance/policy.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../../src/keys/key-file.js";
import { type CallResult, NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { buildPackage, initPackage, type SourceManifest, signPackage } from "../../src/mesh/packages/dir.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { removeNodeCgroups } from "./confinement-cgroups.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { processesWithEnv } from "../support/live-agents.js";

export const MAIN = resolve("dist/src/cli/entry/main.js");

export function requireBuild(): void {
  if (!existsSync(MAIN))
    throw new Error(`${MAIN} is missing: run \`npx tsc -p .\` (scripts/test builds it) before the mesh tests`);
}

const tempDirs: string[] = [];
export function tempDir(prefix = "berth-mesh-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

/**
 * Waits on a condition with a deadline. 30 s by default: most conditions here sit behind a process start, a cgroup
 * write or a TLS connect, which on a machine at load 30 (CI's slow moments) take well over 10 s.
 */
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  deadlineMs = 30_000,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Permit everything the tests place (kind `probe`, egress), like the seed's fixture. */
export const ALLOW_ALL: PermitRuleInput[] = [
  { id: "test-agent", actions: ["workload.*"], kinds: ["probe"], max_network: "egress" },
];
/** The seed's "no start" governance: load, unload and stop only. */
export const NO_START: PermitRuleInput[] = [
  {
    id: "no-start",
    actions: ["workload.load", "workload.unload", "workload.stop"],
    kinds: ["probe"],
    max_network: "egress",
  },
];

export interface NodeSpec {
  controllers: string[];
  signers: string[];
  permits?: PermitRuleInput[] | string;
  revocations?: JsonObject | string;
  board?: string;
  extraArgs?: string[];
  /** node.json `limits` members to set (e.g. a longer first-bytes deadline for a test that holds a request). */
  limits?: JsonObject;
  /** Other node.json members to set (issue 15: `agent_user`, `confinement`; issue 16: `lease_ms`). */
  config?: JsonObject;
  /** `false`: serve without `--allow-root-agents` (the tests run as root; see `start`). */
  allowRootAgents?: boolean;
}

const running = new Set<NodeProcess>();

export class NodeProcess {
  proc: ChildProcess | undefined;
  address = "";
  nodeId = "";
  publicKey = "";
  bootId = "";
  recovery: JsonObject = {};
  stderr = "";

  constructor(
    readonly dataDir: string,
    readonly spec: NodeSpec,
  ) {}

  static async create(spec: NodeSpec): Promise<NodeProcess> {
    const dataDir = join(tempDir(), "node");
    const out = JSON.parse(
      execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", dataDir, "--json"], { encoding: "utf8" }),
    ) as {
      node_id: string;
      public_key: string;
    };
    const n = new NodeProcess(dataDir, spec);
    n.nodeId = out.node_id;
    n.publicKey = out.public_key;
    if (spec.limits !== undefined) {
      const config = JSON.parse(readFileSync(join(dataDir, "node.json"), "utf8")) as JsonObject;
      writeFileSync(
        join(dataDir, "node.json"),
        JSON.stringify({ ...config, limits: { ...((config.limits as JsonObject | undefined) ?? {}), ...spec.limits } }),
      );
    }
    if (spec.config !== undefined) {
      const config = JSON.parse(readFileSync(join(dataDir, "node.json"), "utf8")) as JsonObject;
      writeFileSync(join(dataDir, "node.json"), JSON.stringify({ ...config, ...spec.config }));
    }
    if (spec.permits !== undefined) n.writePolicy("permits.json", spec.permits);
    if (spec.revocations !== undefined) n.writePolicy("revocations.json", spec.revocations);
    await n.start("127.0.0.1:0");
    return n;
  }

  /** The node's identity key (node.key), for a test proxy that must end the TLS session as the node (tcp-proxy.ts). */
  identity(): SigningKey {
    return loadKeyFile(join(this.dataDir, "node.key"));
  }

  writePolicy(file: string, value: unknown): void {
    writeFileSync(join(this.dataDir, file), typeof value === "string" ? value : JSON.stringify(value));
  }

  async start(listen = this.address): Promise<void> {
    // The tests run as root here: agents run as root, explicitly (issue 15), unless a test names an agent user.
    const args = [MAIN, "node", "serve", "--listen", listen, "--data-dir", this.dataDir, "--poll-ms", "50"];
    if (this.spec.allowRootAgents !== false) args.push("--allow-root-agents");
    for (const c of this.spec.controllers) args.push("--controller", c);
    for (const s of this.spec.signers) args.push("--signer", s);
    args.push("--board", this.spec.board ?? "pi5", ...(this.spec.extraArgs ?? []));
    const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    running.add(this);
    let out = "";
    proc.stderr?.on("data", (c: Buffer) => {
      this.stderr += c.toString();
    });
    const ready = await new Promise<JsonObject>((resolveReady, reject) => {
      proc.stdout?.on("data", (c: Buffer) => {
        out += c.toString();
        const line = out.split("\n").find((l) => l.startsWith("{"));
        if (line && out.includes("\n")) resolveReady(JSON.parse(line) as JsonObject);
      });
      proc.once("exit", (code) => reject(new Error(`node serve exited with ${code}: ${this.stderr}`)));
    });
    this.address = ready.address as string;
    this.bootId = ready.boot_id as string;
    this.recovery = ready.recovery as JsonObject;
  }

  /** SIGKILL the daemon (instances keep running) and wait until it is gone. */
  async kill9(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await gone;
  }

  /** SIGKILL the daemon and every process it started (each instance's group, and anything carrying its node id). */
  async killWithInstances(): Promise<void> {
    const pids = this.instancePids();
    await this.kill9();
    for (const pid of pids) signalQuietly(-pid);
    for (const pid of processesWithEnv(`BERTH_NODE_ID=${this.nodeId}`)) signalQuietly(pid);
  }

  get alive(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  target(bootId: string | null = this.bootId): TargetRef {
    return { addr: this.address, nodeId: this.nodeId, key: this.publicKey, bootId };
  }

  /** Events of the node's own chain, read from node.db (read-only) while the daemon runs. */
  events(q: { source?: string; kind?: string; phase?: string } = {}): SealedEvent[] {
    const db = openDatabase(join(this.dataDir, "node.db"), { readonly: true });
    try {
      const own = db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string };
      return [...findEvents(db, own.chain_id, q)];
    } finally {
      db.close();
    }
  }

  /** Verifies the node's chain as stored, under the node's own key (spec/audit-chain.md §8). */
  verifyChain(): { ok: boolean; events: number; failure?: unknown } {
    const db = openDatabase(join(this.dataDir, "node.db"), { readonly: true });
    try {
      const own = db.prepare("SELECT chain_id FROM audit_chain WHERE own = 1").get() as { chain_id: string };
      return verifyStoredChain(db, own.chain_id, { key: this.publicKey });
    } finally {
      db.close();
    }
  }

  /** Process group ids the node's instance table records (to clean up whatever a test left). */
  instancePids(): number[] {
    const path = join(this.dataDir, "node.db");
    if (!existsSync(path)) return [];
    const db = openDatabase(path, { readonly: true });
    try {
      return (db.prepare("SELECT pid FROM node_instance WHERE pid IS NOT NULL").all() as Array<{ pid: number }>).map(
        (r) => r.pid,
      );
    } catch {
      return [];
    } finally {
      db.close();
    }
  }
}

/** Pids of live processes whose environment holds `needle`: the OS-level truth (test/support/live-agents.ts). */
export { processesWithEnv };

/** Kills every daemon and instance group the test started, then checks every node chain still verifies. */
function signalQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

export async function cleanup(): Promise<void> {
  const broken: string[] = [];
  for (const n of running) {
    await n.killWithInstances();
    removeNodeCgroups(n.nodeId);
    if (existsSync(join(n.dataDir, "node.db"))) {
      const v = n.verifyChain();
      if (!v.ok) broken.push(`${n.nodeId}: ${JSON.stringify(v.failure)}`);
    }
    running.delete(n);
  }
  for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
  if (broken.length > 0) throw new Error(`node chains do not verify: ${broken.join("; ")}`);
}

export const PROBE_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 30\n";

/** A signed package `probe` (kind probe, network egress) whose single variant runs `script`. */
export function makePackage(
  signer: SigningKey | null,
  opts: {
    script?: string;
    name?: string;
    config?: SourceManifest["config"];
    network?: "none" | "lan" | "egress";
    memoryMb?: number;
  } = {},
): { dir: string; packageId: string } {
  const dir = tempDir("berth-pkg-");
  writeFileSync(join(dir, "run.sh"), opts.script ?? PROBE_SCRIPT);
  chmodSync(join(dir, "run.sh"), 0o755);
  initPackage(dir, {
    name: opts.name ?? "probe",
    kind: "probe",
    files: ["run.sh"],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
    network: opts.network ?? "egress",
    ...(opts.memoryMb !== undefined ? { resources: { memory_mb: opts.memoryMb, cpu_millis: 0 } } : {}),
    ...(opts.config ? { config: opts.config } : {}),
  });
  const { packageId } = buildPackage(dir);
  if (signer) signPackage(dir, signer);
  return { dir, packageId };
}

export function keyFile(key: SigningKey): string {
  const path = join(tempDir(), "signer.key");
  saveKeyFile(path, key);
  return path;
}

export class TestController {
  readonly key = generateSigningKey();
  /** Issue 20: the store this test controller speaks for (every request names it; epoch 0, no leader). */
  readonly storeId = randomBytes(16).toString("hex");
  readonly client = new NodeClient({
    key: this.key,
    // 10 s to connect: a daemon at load 30 can be slow to accept; no test here expects a connect to time out.
    connector: new TlsConnector({ identity: this.key, connectTimeoutMs: 10_000 }),
    timeoutMs: 15_000,
    authority: () => ({ store_id: this.storeId, epoch: 0 }),
  });
  private decisions = 0;

  decisionId(): string {
    this.decisions++;
    return `${Date.now().toString(16).padStart(16, "0")}${this.decisions.toString(16).padStart(8, "0")}`.padEnd(
      64,
      "a",
    );
  }

  place(
    node: NodeProcess,
    pkgDir: string,
    opts: {
      method?: "place" | "load";
      decisionId?: string;
      unchecked?: boolean;
      name?: string;
      env?: Record<string, string>;
      args?: string[];
    } = {},
  ): Promise<CallResult> {
    const source = new PackageDirSource(pkgDir, { unchecked: opts.unchecked ?? false });
    return this.client.call(
      node.target(),
      opts.method ?? "place",
      {
        package_id: source.packageId,
        name: opts.name ?? "probe",
        variant: "any-linux",
        config: { mode: "service", args: opts.args ?? [], env: opts.env ?? {} },
      },
      { decisionId: opts.decisionId ?? this.decisionId(), package: source },
    );
  }

  status(node: NodeProcess, instanceId: string | null = null, includeDeparted = false): Promise<CallResult> {
    return this.client.call(node.target(), "status", { instance_id: instanceId, include_departed: includeDeparted });
  }

  verb(node: NodeProcess, method: "start" | "stop" | "unload" | "logs", body: JsonObject): Promise<CallResult> {
    return this.client.call(node.target(), method, body, { decisionId: method === "logs" ? null : this.decisionId() });
  }
}

export function ok(r: CallResult): JsonObject {
  if (r.kind !== "ok") throw new Error(`expected ok, got ${JSON.stringify(r)}`);
  return r.result;
}

export function rowsOf(r: CallResult): JsonObject[] {
  return ok(r).rows as JsonObject[];
}
