/**
 * The network world (issue 37): three `berth node serve` daemons, each in its own network namespace with its own
 * address on a bridge the world owns, each data directory on its own small tmpfs; one to three `berth serve`
 * controllers on one PostgreSQL store (or on one SQLite home), in the host's namespace, reaching the nodes over the
 * bridge; the user's CLI verbs beside them on the same store. Node 0 is reached through the test TCP proxy as well
 * (the fault only it can make: drop exactly the answer to one `place`); node 2 runs with a lease; node 1's clock can
 * be moved (libfaketime, per process, through a timestamp file it rereads every second).
 *
 * Everything the world made — namespaces, veths, the bridge, mounts, processes, directories — is named by its tag
 * and removed by `close()`; `leftovers(tag)` (netns.ts) judges that from outside.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../../../src/keys/key-file.js";
import { initNodeDataDir } from "../../../src/mesh/node/init.js";
import { MAIN, requireBuild } from "../../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../../mesh-controller/support/package.js";
import { startPostgres, type TestPostgres } from "../../support/postgres.js";
import { closeOpenSlots, dropDatabase, type PostgresSlot, postgresTree } from "./postgres-slot.js";
import { runNode, type Spawned, spawnNode } from "../../support/process.js";
import { TcpProxy } from "../../support/tcp-proxy.js";
import { type CliResult, WorldSetupError } from "../world.js";
import { leftovers, makeNet, mountTmpfs, type Net, nsInode, removeNet } from "./netns.js";

const run = promisify(execFile);

/**
 * The agent: a group leader waiting on two workers, one of which clears its environment (`env -i`): the judge must
 * find it by its process group, its cgroup or its ancestry, not by what it carries.
 */
export const NET_AGENT_SCRIPT = "#!/bin/sh\necho agent-up\nsleep 3600 &\nenv -i /bin/sleep 3601 &\nwait\n";
export const NODE_PORT = 7000;
/**
 * The `berth` executable as installed (package.json `bin`): the CLI's and the daemon's CommonJS bundles when the build
 * made them fresh (scripts/prepack, scripts/campaign), else dist/src/cli/entry/main.js, as run directly. What a user
 * runs, and half the CPU of a CLI process's start on the ES module loader (0.18 s against 0.35 s, measured at load 25).
 */
const BERTH_BIN = join(dirname(MAIN), "berth.cjs");
/** Above the leader's fixed 10 s renewal tick on main (issue 37 F1), so an unfaulted leader keeps it. */
export const NET_LEASE_MS = 15_000;
export const LEADER_TTL_MS = 3_000;
export const LEASED_NODE = 2;
export const SKEWED_NODE = 1;
/** Debian's libfaketime, wherever its multiarch directory is (null: not installed). */
export function faketimeLib(): string | null {
  try {
    for (const d of readdirSync("/usr/lib")) {
      const lib = join("/usr/lib", d, "faketime", "libfaketime.so.1");
      if (existsSync(lib)) return lib;
    }
  } catch {
    // no /usr/lib
  }
  return null;
}

export interface NetNodeProc {
  readonly index: number;
  readonly dataDir: string;
  readonly nodeId: string;
  readonly publicKey: string;
  readonly ns: string;
  readonly ip: string;
  /** The inode of its network namespace (/proc/PID/ns/net): how the judge knows a process is on this node. */
  readonly nsInode: string;
  /** The address controllers know it by (the proxy's for node 0). */
  address: string;
  proc: ChildProcess | null;
  /** The faketime offset file (node 1), or null. */
  readonly clockFile: string | null;
  readonly leaseMs: number | null;
  /** The end of what its daemons wrote on stderr (warnings and errors), every generation: for a violation's notes. */
  stderrTail: string;
}

export interface Ctl {
  readonly index: number;
  readonly home: string;
  proc: Spawned | null;
}

export interface NetWorld {
  readonly tag: string;
  readonly net: Net;
  readonly root: string;
  readonly home: string;
  readonly engine: "postgres" | "sqlite";
  readonly pg: TestPostgres | null;
  readonly databaseUrl: string | null;
  readonly nodes: NetNodeProc[];
  readonly controllers: Ctl[];
  readonly proxy: TcpProxy;
  readonly prefix: string;
  readonly pkgDir: string;
  /** Exits of daemons and servers the campaign did not ask for (kill-daemon, kill-controller, power loss mark theirs). */
  readonly crashes: Array<{ what: string; pid: number; how: string }>;
  /** Pids the campaign is about to kill or has killed: their exit is not a crash. */
  readonly expectedExits: Set<number>;
  /** Every daemon process started, every generation (node, pid, start): the judge's "not an agent". */
  readonly daemons: Array<{ node: number; pid: number; start: number }>;
  /** The set-up's wall time by phase (ms): where a world's fixed cost goes (`setup:net`, `setup:postgres`, …). */
  readonly setupPhases: Record<string, number>;
  agentName(seed: number, i: number): string;
  specFile(seed: number, i: number): string;
  writeAgents(seed: number, count: number): void;
  berth(...args: string[]): Promise<CliResult>;
  spawnBerth(...args: string[]): Spawned;
  startNode(i: number): Promise<void>;
  startController(i: number): Promise<void>;
  pgPids(): number[];
  close(): Promise<void>;
}

/** A process's start time (clock ticks since boot): with its pid, its identity. */
export function startOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
  } catch {
    return -1;
  }
}

let worlds = 0;
const open = new Set<() => Promise<void>>();
/** Set on a signal: no new world is made, and one being made is torn down as soon as it exists. */
let closing = false;
export const netWorldsClosing = () => closing;
export async function closeOpenNetWorlds(): Promise<void> {
  closing = true;
  while (open.size > 0) for (const t of [...open]) await t().catch(() => undefined);
  await closeOpenSlots();
}

/**
 * What a world of a dead process left (its claim taken over): every process in its namespaces, the namespaces, links,
 * mounts and directories of its tag. Its PostgreSQL, if any, is not found this way (its data directory holds no tag).
 */
async function purgeTag(tag: string): Promise<void> {
  for (const ns of (await leftovers(tag)).namespaces) {
    const pids = await run("ip", ["netns", "pids", ns])
      .then((r) => r.stdout.split("\n").filter(Boolean).map(Number))
      .catch(() => [] as number[]);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
  await removeNet(tag);
  const shm = existsSync("/dev/shm") ? "/dev/shm" : "/tmp";
  for (const d of readdirSync(shm))
    if (d.startsWith(`berth-net-${tag}-`)) rmSync(join(shm, d), { recursive: true, force: true });
}

const CLAIMS = "/run/berth-net";

/**
 * A subnet and tag no other world on this machine uses (worlds of other processes run side by side): a claim file
 * per octet, made exclusively, holding the claimant's pid (a claim whose process is gone is taken over), and never an
 * octet some interface already carries. The tag names everything the world makes; it is free while the claim is held.
 */
async function claimSubnet(): Promise<{ tag: string; octet: number; release: () => void }> {
  mkdirSync(CLAIMS, { recursive: true });
  const used =
    (
      await run("ip", ["-o", "-4", "addr", "show"])
        .then((r) => r.stdout)
        .catch(() => "")
    ).match(/inet 10\.(\d+)\.0\./g) ?? [];
  const taken = new Set(used.map((m) => Number(/10\.(\d+)/.exec(m)?.[1])));
  const offset = (process.pid * 7 + worlds++ * 13) % 200;
  for (let k = 0; k < 200; k++) {
    const octet = 40 + ((offset + k) % 200);
    if (taken.has(octet)) continue;
    const file = join(CLAIMS, String(octet));
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
    } catch {
      const holder = Number(readFileSync(file, "utf8").trim() || "0");
      let gone = true;
      try {
        if (holder > 0) process.kill(holder, 0);
        gone = holder <= 0;
      } catch {
        gone = true;
      }
      if (!gone) continue;
      await purgeTag(`o${octet}`);
      rmSync(file, { force: true });
      try {
        writeFileSync(file, String(process.pid), { flag: "wx" });
      } catch {
        continue;
      }
    }
    return { tag: `o${octet}`, octet, release: () => rmSync(file, { force: true }) };
  }
  throw new WorldSetupError("no free subnet for a network world (10.40.0.0–10.239.0.0 all claimed)");
}

export async function makeNetWorld(opts: {
  controllers: number;
  engine: "postgres" | "sqlite";
  postgres?: PostgresSlot;
}): Promise<NetWorld> {
  requireBuild();
  if (closing) throw new WorldSetupError("the campaign is closing: no new world");
  const setupPhases: Record<string, number> = {};
  let lapFrom = Date.now();
  const lap = (phase: string) => {
    const now = Date.now();
    setupPhases[`setup:${phase}`] = (setupPhases[`setup:${phase}`] ?? 0) + now - lapFrom;
    lapFrom = now;
  };
  const { tag, octet, release } = await claimSubnet();
  const root = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : "/tmp", `berth-net-${tag}-`));
  const home = join(root, "home");
  const controllerKey = generateSigningKey();
  saveKeyFile(join(home, "keys", "controller.key"), controllerKey);
  const signer = generateSigningKey();
  const pkgDir = join(home, "pkg");
  probePackage(pkgDir, signer, { script: NET_AGENT_SCRIPT });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "campaign" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  let pg: TestPostgres | null = null;
  let databaseUrl: string | null = null;
  const daemons: NetWorld["daemons"] = [];
  const crashes: NetWorld["crashes"] = [];
  const expectedExits = new Set<number>();
  let closed = false;
  const nodes: NetNodeProc[] = [];
  const controllers: Ctl[] = [];
  let proxy: TcpProxy | null = null;
  let net: Net | null = null;
  const env = (h: string): NodeJS.ProcessEnv => ({
    BERTH_HOME: h,
    BERTH_LEADER_TTL_MS: String(LEADER_TTL_MS),
    ...(databaseUrl ? { BERTH_DATABASE_URL: databaseUrl } : {}),
  });

  const stopProc = async (p: ChildProcess | null | undefined) => {
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once("exit", r));
    p.kill("SIGCONT");
    p.kill("SIGKILL");
    await gone;
  };
  let tornDown: Promise<void> | null = null;
  const teardown = () => {
    tornDown ??= tearDownOnce();
    return tornDown;
  };
  const tearDownOnce = async () => {
    closed = true;
    // Everything at once: the processes first (every server and daemon killed together), then every process left in
    // a node's namespace (its agents, whatever they forked), then the database, the mounts and the links together.
    await Promise.all([
      ...controllers.map((c) => stopProc(c.proc?.child)),
      ...nodes.map((n) => stopProc(n.proc)),
      proxy?.close(),
    ]);
    await Promise.all(
      nodes.map(async (n) => {
        const pids = await run("ip", ["netns", "pids", n.ns])
          .then((r) => r.stdout.split("\n").filter(Boolean).map(Number))
          .catch(() => [] as number[]);
        for (const pid of pids) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // gone
          }
        }
      }),
    );
    await Promise.all([
      pg && opts.postgres && databaseUrl
        ? dropDatabase(pg, databaseUrl)
        : pg
          ? pg.stop().catch(() => undefined)
          : undefined,
      (async () => {
        await Promise.all(nodes.map((n) => run("umount", ["-l", n.dataDir]).catch(() => undefined)));
        await removeNet(tag);
      })(),
    ]);
    rmSync(root, { recursive: true, force: true });
    release();
    open.delete(teardown);
  };
  open.add(teardown);

  const world: NetWorld = {
    tag,
    get net() {
      return net as Net;
    },
    root,
    home,
    engine: opts.engine,
    get pg() {
      return pg;
    },
    get databaseUrl() {
      return databaseUrl;
    },
    nodes,
    controllers,
    get proxy() {
      return proxy as TcpProxy;
    },
    prefix: `nw${tag}`,
    pkgDir,
    daemons,
    crashes,
    expectedExits,
    setupPhases,
    agentName: (seed, i) => `nw${tag}s${seed}a${i}`,
    specFile: (seed, i) => join(home, `agent-${seed}-${i}.json`),
    writeAgents(seed, count) {
      for (let i = 0; i < count; i++) {
        writeFileSync(
          world.specFile(seed, i),
          JSON.stringify({
            apiVersion: "berth/v1",
            kind: "Agent",
            metadata: { name: world.agentName(seed, i) },
            spec: { target: "mesh", package: "./pkg" },
          }),
        );
      }
    },
    berth: (...args) => runNode([BERTH_BIN, ...args], { env: env(home) }),
    spawnBerth: (...args) => spawnNode([BERTH_BIN, ...args], { env: env(home) }),
    async startNode(i) {
      const n = nodes[i];
      if (!n || (n.proc && n.proc.exitCode === null && n.proc.signalCode === null)) return;
      const args = [
        "netns",
        "exec",
        n.ns,
        process.execPath,
        BERTH_BIN,
        "node",
        "serve",
        "--listen",
        `${n.ip}:${NODE_PORT}`,
        "--data-dir",
        n.dataDir,
        "--poll-ms",
        "100",
        "--allow-root-agents",
        "--board",
        "pi5",
        "--log-level",
        "warn",
        "--controller",
        controllerKey.publicKey,
        "--signer",
        signer.publicKey,
      ];
      const childEnv: NodeJS.ProcessEnv = { ...process.env };
      const lib = faketimeLib();
      if (n.clockFile && lib)
        Object.assign(childEnv, {
          LD_PRELOAD: lib,
          FAKETIME_TIMESTAMP_FILE: n.clockFile,
          FAKETIME_CACHE_DURATION: "1",
          FAKETIME_DONT_FAKE_MONOTONIC: "1",
        });
      // `ip netns exec` execs the daemon: the pid the campaign holds is the daemon's.
      const proc = spawn("ip", args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
      n.proc = proc;
      let out = "";
      let err = "";
      proc.stderr?.on("data", (c: Buffer) => {
        err = (err + c.toString()).slice(-4000);
        n.stderrTail = (n.stderrTail + c.toString()).slice(-6000);
      });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`node ${i} did not listen within 60 s: ${err}`)), 60_000);
        proc.stdout?.on("data", (c: Buffer) => {
          out += c.toString();
          if (out.includes("\n")) {
            clearTimeout(timer);
            resolve();
          }
        });
        proc.once("exit", (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`node ${i} exited (${code ?? signal}) before listening: ${err}`));
        });
      });
      proc.stdout?.resume();
      proc.once("exit", (code, sig) => {
        if (!closed && !expectedExits.has(proc.pid as number))
          crashes.push({
            what: `node ${i}'s daemon`,
            pid: proc.pid as number,
            how: `${code ?? sig}: ${err.slice(-600).replace(/\s+/g, " ")}`,
          });
      });
      daemons.push({ node: i, pid: proc.pid as number, start: startOf(proc.pid as number) });
    },
    async startController(i) {
      const c = controllers[i];
      if (!c || (c.proc && c.proc.child.exitCode === null && c.proc.child.signalCode === null)) return;
      const proc = spawnNode(
        [BERTH_BIN, "serve", "--port", "0", "--data-dir", c.home, "--json", "--log-level", "warn"],
        { env: env(c.home) },
      );
      c.proc = proc;
      void proc.exited().then(({ code, signal: sig }) => {
        if (!closed && !expectedExits.has(proc.child.pid as number))
          crashes.push({
            what: `berth serve ${i}`,
            pid: proc.child.pid as number,
            how: `${code ?? sig}: ${proc.errors().slice(-600).replace(/\s+/g, " ")}`,
          });
      });
      await proc.waitForOutput(/\n/, 60_000);
    },
    pgPids() {
      return postgresTree(pg);
    },
    close: teardown,
  };

  try {
    lap("claim");
    net = await makeNet(tag, octet, 3);
    lap("net");
    if (opts.engine === "postgres") {
      pg = opts.postgres ? await opts.postgres.take() : await startPostgres();
      databaseUrl = await pg.database();
    }
    lap("postgres");
    for (let i = 0; i < 3; i++) {
      if (closed) throw new WorldSetupError("the campaign is closing: no new world");
      const dataDir = join(root, `node-${i}`);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      await mountTmpfs(dataDir, 48);
      const leaseMs = i === LEASED_NODE ? NET_LEASE_MS : null;
      // What `berth node init --data-dir DIR` writes, made in this process (three CLI processes less per world); the
      // daemon is told its controller and signer by flags.
      const made = initNodeDataDir(dataDir, { permits: [TEST_PERMIT], config: leaseMs ? { lease_ms: leaseMs } : {} });
      const id = { node_id: made.nodeId, public_key: made.publicKey };
      const clockFile = i === SKEWED_NODE ? join(root, `clock-${i}`) : null;
      if (clockFile) writeFileSync(clockFile, "+0\n");
      const nn = net.nodes[i];
      if (!nn) throw new Error("net has fewer nodes than asked");
      nodes.push({
        index: i,
        dataDir,
        nodeId: id.node_id,
        publicKey: id.public_key,
        ns: nn.ns,
        ip: nn.ip,
        nsInode: await nsInode(nn.ns),
        address: `${nn.ip}:${NODE_PORT}`,
        proc: null,
        clockFile,
        leaseMs,
        stderrTail: "",
      });
    }
    lap("nodes-init");
    await Promise.all(nodes.map((n) => world.startNode(n.index)));
    lap("nodes-start");
    const n0 = nodes[0] as NetNodeProc;
    proxy = await TcpProxy.start(n0.address, {
      tls: { node: loadKeyFile(join(n0.dataDir, "node.key")), controller: controllerKey },
    });
    n0.address = proxy.address;
    const addNode = async (n: NetNodeProc) => {
      for (let attempt = 1; ; attempt++) {
        const a = await world.berth("nodes", "add", n.address, "--tier", "paired", "--json");
        if (a.code === 0) break;
        if (attempt === 6) throw new WorldSetupError(`berth nodes add ${n.address} failed: ${a.stdout} ${a.stderr}`);
        await new Promise((r) => setTimeout(r, 1_000 * attempt));
      }
    };
    // The first makes the store's schema alone; the others then add theirs side by side.
    const [firstNode, ...otherNodes] = nodes;
    if (firstNode) await addNode(firstNode);
    await Promise.all(otherNodes.map(addNode));
    lap("nodes-add");
    const prepareController = (i: number) => {
      // On PostgreSQL each controller has its own home (as on its own machine); on SQLite they share one.
      const h = opts.engine === "sqlite" || i === 0 ? home : join(root, `home-${i}`);
      if (h !== home) {
        mkdirSync(join(h, "keys"), { recursive: true, mode: 0o700 });
        copyFileSync(join(home, "keys", "controller.key"), join(h, "keys", "controller.key"));
        // One API token for every server (an operator copies it, as the keys): a CLI sent on from a follower to the
        // leader presents its home's token there. With a token per machine, such a write is refused "not this server's".
        for (const f of ["signers.json", "permits.json", "api.token"])
          if (existsSync(join(home, f))) copyFileSync(join(home, f), join(h, f));
        cpSync(pkgDir, join(h, "pkg"), { recursive: true });
      }
      controllers.push({ index: i, home: h, proc: null });
    };
    // The first serve alone (it writes the home's api.token, which the others' homes copy), then the others side by
    // side: each start is a process at load 30 (seconds), and who leads is theirs to settle.
    for (let i = 0; i < opts.controllers; i++) {
      // A signal tore the world down meanwhile: make nothing more of it (a home made now would outlive the teardown).
      if (closed) throw new WorldSetupError("the campaign is closing: no new world");
      prepareController(i);
      if (i === 0) await world.startController(0);
    }
    await Promise.all(controllers.slice(1).map((c) => world.startController(c.index)));
    lap("controllers");
  } catch (e) {
    await teardown();
    throw e instanceof WorldSetupError ? e : new WorldSetupError(e instanceof Error ? e.message : String(e));
  }
  if (closing) {
    await teardown();
    throw new WorldSetupError("the campaign is closing: no new world");
  }
  return world;
}
