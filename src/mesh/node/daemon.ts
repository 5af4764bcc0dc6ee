/**
 * The node daemon (spec/mesh.md §14.3): opens node.db and the node chain, recovers every instance it held before
 * (re-adopting processes that are still the same ones, never restarting them), chains `node.boot`, and serves the
 * control protocol on TCP. A node never forgets an instance silently: each row either stays (running, exited, lost)
 * or leaves with a departed record and a chain event.
 */
import { mkdirSync } from "node:fs";
import type { Server } from "node:net";
import { join } from "node:path";
import { Chain } from "../../chain/chain.js";
import { checkpointPolicyFromEnv, checkpointPollMs } from "../../chain/checkpoint-policy.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { nodeIdOf, type PublicKeyHex, type SigningKey } from "../../core/crypto/ed25519.js";
import { LEASE_CHECK_MS } from "../../core/mesh/lease.js";
import { loadKeyFile } from "../../keys/key-file.js";
import { type Db, openDatabase } from "../../store/sqlite.js";
import { REQUEST_FRAME_BYTES } from "../transport/frames.js";
import { type ListenLimits, listenFrames } from "../transport/tcp.js";
import { FILES, loadNodeConfig, type NodeConfig } from "./config.js";
import { Confinement } from "./confine.js";
import { ContentStore } from "./content.js";
import { DiskReserve, RESERVE_FILE } from "./disk-reserve.js";
import { measureSha256, probeBoard } from "./facts.js";
import { type NodeLog, type NodeLogLevel, nodeLogger } from "./log.js";
import { NativeRuntime } from "./runtime.js";
import { identityOf, NodeService, newBootId } from "./service.js";
import { type InstanceRow, NodeStore } from "./store.js";

export interface NodeDaemonOptions {
  readonly dataDir: string;
  /** host:port to serve on; `null` serves no TCP (an in-process node reached through `service.serve(stream)`). */
  readonly listen: string | null;
  readonly controllers?: readonly string[];
  readonly signers?: readonly string[];
  /** Overrides of node.json, e.g. to simulate a pi5 in tests. */
  readonly board?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly name?: string;
  readonly version: string;
  readonly clock?: () => number;
  /** How often re-adopted instances are probed (ms). */
  readonly pollMs?: number;
  /** How often revocations are swept (ms, §11.4 says 60 s). */
  readonly sweepMs?: number;
  /**
   * spec/mesh.md §4.11 (issue 17): `tls` serves TLS 1.3 bound to the identity keys; `plaintext` is the explicit
   * migration window (chained as `transport.plaintext` at every start). Unset: node.json's `transport` (default tls).
   */
  readonly transport?: "tls" | "plaintext";
  /** Issue 15: a root daemon may run agents as root although node.json names no agent_user (`--allow-root-agents`). */
  readonly allowRootAgents?: boolean;
  /** Issue 33 item 11: the agent user for this run (`--agent-user`, what `berth up` as root passes), over node.json. */
  readonly agentUser?: string;
  /** pino level of the diagnostics on stderr (issue 13); unset: none (an in-process node in tests). */
  readonly logLevel?: NodeLogLevel;
  /** Issue 36: one line for people per record (stderr is a terminal), instead of JSON lines. */
  readonly humanLogs?: boolean;
}

export interface RecoveryReport {
  readopted: string[];
  exited: string[];
  lost: string[];
  interrupted: string[];
  departed: string[];
}

export class NodeDaemon {
  private timers: NodeJS.Timeout[] = [];

  private constructor(
    readonly service: NodeService,
    readonly nodeId: string,
    readonly bootId: string,
    readonly address: string,
    readonly recovery: RecoveryReport,
    /** Why this node refuses to start agents (a root daemon with no agent user), or null. */
    readonly agentRefusal: string | null,
    private readonly server: Server | null,
    private readonly db: Db,
    private readonly chain: Chain,
    /** What the listener speaks (spec/mesh.md §4.11). */
    readonly transport: "tls" | "plaintext",
  ) {}

  static async start(o: NodeDaemonOptions): Promise<NodeDaemon> {
    const clock = o.clock ?? Date.now;
    mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
    const key: SigningKey = loadKeyFile(join(o.dataDir, FILES.key));
    const base = loadNodeConfig(o.dataDir);
    const config: NodeConfig = {
      ...base,
      board: o.board ?? base.board ?? probeBoard(),
      labels: { ...base.labels, ...(o.labels ?? {}) },
      name: o.name ?? base.name,
      allow_root_agents: base.allow_root_agents || o.allowRootAgents === true,
      agent_user: o.agentUser ?? base.agent_user,
    };
    const dbPath = join(o.dataDir, FILES.db);
    const db = openDatabase(dbPath); // created 0600, with its -wal and -shm (store/sqlite.ts)
    // 1. a new boot id; the chain must pass its start-up check (from the newest valid checkpoint, spec/audit-chain.md §7)
    // before anything is served. Chain.open throws, naming the seq, when it does not.
    let chain: Chain;
    try {
      chain = Chain.open(db, key, "node", clock, checkpointPolicyFromEnv());
    } catch (error) {
      db.close();
      throw new Error(`the node chain in ${dbPath}: ${(error as Error).message}`);
    }
    const bootId = newBootId();
    const store = new NodeStore(db, chain);
    // Issue 37 finding B: room kept aside so what happens to running instances is recorded when the disk fills.
    const reserve = new DiskReserve(join(o.dataDir, RESERVE_FILE));
    reserve.restore();
    store.reserve = reserve;
    const nodeId = nodeIdOf(key.publicKey);
    const log: NodeLog | undefined = o.logLevel
      ? nodeLogger(o.logLevel, nodeId, 2, Date.now, o.humanLogs === true)
      : undefined;
    // Issue 15: how instances are launched and contained here, probed once (docs/concepts.md "Confinement").
    const confinement = Confinement.probe(config, nodeId, o.dataDir);
    const runtime = new NativeRuntime(join(o.dataDir, "instances"), confinement);
    const content = new ContentStore(join(o.dataDir, "store"));
    const perf: JsonObject[] = [measureSha256(clock())];
    const transport = o.transport ?? config.transport;
    const service = new NodeService({
      dataDir: o.dataDir,
      key,
      config,
      bootId,
      store,
      runtime,
      content,
      clock,
      version: o.version,
      extraControllers: o.controllers ?? [],
      extraSigners: o.signers ?? [],
      perf,
      ...(log ? { log } : {}),
      // Requests reach an in-process node (listen null) by other means than the TLS listener.
      transport: o.listen === null ? "plaintext" : transport,
    });
    log?.info({ containment: confinement.facts() }, "containment probed");
    if (confinement.agent.kind === "refused") log?.warn({ reason: confinement.agent.reason }, "agents will be refused");
    const recovery = recover(store, runtime, clock);
    store.append({
      source: "node",
      kind: "node.boot",
      payload: {
        boot_id: bootId,
        version: o.version,
        readopted: recovery.readopted.length,
        exited: recovery.exited.length,
        lost: recovery.lost.length,
        interrupted: recovery.interrupted.length,
      },
    });
    service.policy();
    if (transport === "plaintext") {
      const by = o.transport === "plaintext" ? "--transport plaintext" : `${FILES.config} transport`;
      store.append({
        source: "node",
        kind: "transport.plaintext",
        payload: { boot_id: bootId, listen: o.listen, reason: `configured explicitly (${by})` },
      });
    }
    const authorised = new Set([...config.controllers.map((c) => c.key), ...(o.controllers ?? [])]);
    // Loaded only when asked for (node:tls and the certificate), so a CLI start that serves nothing does not load them.
    const tls =
      transport === "tls" && o.listen !== null
        ? (await import("../transport/tls.js")).listenTls({
            identity: key,
            authorised: () => authorised,
            onRefused: refusedPeerRecorder(store, nodeIdOf(key.publicKey)),
          })
        : undefined;
    const { server, address } =
      o.listen === null
        ? { server: null, address: "" }
        : await listenFrames(o.listen, (stream) => void service.serve(stream), {
            limits: listenLimits(config.limits),
            ...(tls ? { tls } : {}),
          });
    const daemon = new NodeDaemon(
      service,
      nodeId,
      bootId,
      address,
      recovery,
      confinement.agent.kind === "refused" ? confinement.agent.reason : null,
      server,
      db,
      chain,
      transport,
    );
    // spec/audit-chain.md §10: a checkpoint T (default 600 s) after the previous one when events were appended since
    // (checked each minute, or each T when shorter), and one at clean shutdown (close()); the every-N-events
    // checkpoint is written by append itself (src/chain/checkpoint-policy.ts).
    // Issue 37 finding B: a checkpoint that cannot be written (a full disk) is written at a later minute; it never
    // ends the daemon from its timer.
    daemon.timers.push(
      setInterval(() => guarded(log, "checkpoint", () => chain.checkpointIfDue()), checkpointPollMs(chain.policy)),
    );
    daemon.timers.push(setInterval(() => guarded(log, "poll", () => service.pollAdopted()), o.pollMs ?? 500));
    // Issue 15: after recovery, so exits recorded while the daemon was down are decided per their restart policy.
    service.supervisor.start();
    // The log trim frees room; the disk reserve is written back once there is room for it (disk-reserve.ts).
    daemon.timers.push(
      setInterval(() => {
        guarded(log, "log trim", () => service.trimAllLogs());
        if (reserve.full) reserve.restore();
      }, 10_000),
    );
    // Issue 16: a lease that ran out while no daemon ran is enforced at once, then every second.
    const leases = () => void service.checkLeases().catch(() => undefined);
    leases();
    daemon.timers.push(setInterval(leases, LEASE_CHECK_MS));
    const sweep = () => void service.sweepRevoked().catch(() => undefined);
    sweep();
    daemon.timers.push(setInterval(sweep, o.sweepMs ?? 60_000));
    return daemon;
  }

  /** Stops serving. Instances keep running: they belong to the node, not to this process. */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.service.supervisor.close();
    this.service.closeAll();
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.chain.checkpointIfDue(true);
    this.db.close();
  }
}

/** Runs a timer's step; what it throws is logged, never thrown out of the timer (which would end the daemon). */
function guarded(log: NodeLog | undefined, what: string, step: () => void): void {
  try {
    step();
  } catch (error) {
    log?.warn(
      { err: (error as Error).message, code: (error as { code?: unknown }).code },
      `${what} failed; tried again at its next round`,
    );
  }
}

/** node.json's limits as the listener takes them (issue 12: connection admission and the request frame cap). */
export function listenLimits(l: NodeConfig["limits"]): ListenLimits {
  return {
    maxConnections: l.max_connections,
    maxUnauthenticated: l.max_unauthenticated,
    maxUnauthenticatedPerAddress: l.max_unauthenticated_per_address,
    graceMs: l.unauthenticated_grace_ms,
    firstBytesMs: l.first_bytes_ms,
    maxFrameBytes: REQUEST_FRAME_BYTES,
  };
}

/**
 * A TLS client whose certificate key this node does not authorise is refused with the code of §4.6 check 12
 * (`unauthorized`), chained once per key per boot (at most 256 keys; the rest are counted on the next record).
 */
function refusedPeerRecorder(store: NodeStore, nodeId: string): (presented: string | null, remote: string) => void {
  const seen = new Set<string>();
  let suppressed = 0;
  return (presented, remote) => {
    const k = presented ?? "(no Ed25519 certificate)";
    if (seen.has(k) || seen.size >= 256) {
      if (!seen.has(k)) suppressed++;
      return;
    }
    seen.add(k);
    store.append({
      source: "node",
      kind: "workload.refuse",
      payload: {
        phase: "transport",
        node: nodeId,
        code: "unauthorized",
        reason: `TLS client key ${k} from ${remote} is not an authorised controller`,
        method: "",
        requester: presented ? nodeIdOf(presented as PublicKeyHex) : null,
        decision_id: null,
        suppressed,
      },
    });
    suppressed = 0;
  };
}

/** §14.3 steps 2–3. */
export function recover(store: NodeStore, runtime: NativeRuntime, clock: () => number): RecoveryReport {
  const report: RecoveryReport = { readopted: [], exited: [], lost: [], interrupted: [], departed: [] };
  for (const inflight of store.inflights()) {
    const held = store.instanceByDecision(inflight.decision_id);
    store.commit((tx) => {
      store.deleteInflight(tx, inflight.decision_id);
      return {
        result: null,
        events: held
          ? []
          : [
              {
                source: "node",
                kind: "workload.refuse",
                payload: {
                  phase: "interrupted",
                  decision_id: inflight.decision_id,
                  method: inflight.method,
                  requester: inflight.requester,
                  reason: "node restarted while handling the request",
                },
              },
            ],
      };
    });
    if (!held) report.interrupted.push(inflight.decision_id);
  }
  const lifecycle = (row: InstanceRow, to: string, reason: string) => ({
    source: "node",
    kind: "workload.lifecycle",
    payload: { phase: "node_restart", instance_id: row.instance_id, from: row.state, to, reason },
  });
  for (const row of store.instances()) {
    switch (row.state) {
      case "loading": {
        runtime.remove(row.instance_id);
        store.commit((tx) => {
          store.removeInstance(tx, row.instance_id, row.decision_id, "load interrupted by node restart", clock());
          return { result: null, events: [lifecycle(row, "departed", "load interrupted by node restart")] };
        });
        report.departed.push(row.instance_id);
        break;
      }
      case "running":
      case "unhealthy": {
        const probe = runtime.probe(row.instance_id, identityOf(row));
        if (probe.state === "running") {
          report.readopted.push(row.instance_id);
          break;
        }
        const state = probe.state === "lost" ? "lost" : probe.state === "exited" ? "exited" : "unknown";
        const exitCode = probe.state === "exited" ? probe.exit_code : null;
        const signal = probe.state === "exited" ? probe.signal : null;
        store.commit((tx) => {
          store.updateInstance(tx, row.instance_id, {
            state,
            exit_code: exitCode,
            signal,
            detail: `${probe.detail} while the node daemon was down`,
          });
          return { result: null, events: [lifecycle(row, state, probe.detail)] };
        });
        (state === "lost" ? report.lost : report.exited).push(row.instance_id);
        break;
      }
      case "starting": {
        const found = runtime.findByInstanceEnv(row.instance_id);
        const to = found ? "running" : "loaded";
        store.commit((tx) => {
          store.updateInstance(
            tx,
            row.instance_id,
            found
              ? { state: "running", pid: found.pid, host_boot_id: found.host_boot_id, start_marker: found.start_marker }
              : { state: "loaded" },
          );
          return {
            result: null,
            events: [lifecycle(row, to, found ? "process found by its instance id" : "no process was started")],
          };
        });
        if (found) report.readopted.push(row.instance_id);
        break;
      }
      default:
        break;
    }
  }
  return report;
}
