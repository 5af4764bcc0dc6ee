/**
 * The node simulator as the benchmarks and the campaign use it (issue 35): `NodeSim.start({nodes})` forks host
 * processes (host.ts), each serving its share of simulated nodes on loopback ports over TLS 1.3 with their own
 * identity keys, and returns their addresses and keys. The controller side talks to them through its real
 * connector, client, store and chain; nothing of the controller is simulated.
 *
 *   const sim = await NodeSim.start({ nodes: 1000, controllers: [key.publicKey], signers: [signer.publicKey] });
 *   for (const n of sim.nodes) await controller.addTarget(n.addr, "paired", n.key);
 *   ...
 *   await sim.close();
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SimInstance } from "./node.js";
import type { Census, HostReply, HostRequest, SimNodeInfo } from "./protocol.js";

export type { Census, SimNodeInfo } from "./protocol.js";
export type { SimInstance } from "./node.js";

const HOST = fileURLToPath(new URL("./host.js", import.meta.url));

class HostProcess {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly ready: Promise<void>;

  constructor(readonly child: ChildProcess) {
    let ready!: () => void;
    this.ready = new Promise((resolve) => {
      ready = resolve;
    });
    child.on("message", (raw) => {
      const reply = raw as HostReply;
      if (reply.id === 0) return ready();
      const w = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) w?.resolve(reply.result);
      else w?.reject(new Error(`node simulator: ${reply.error}`));
    });
    child.on("exit", (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`node simulator exited (${code})`));
      this.waiting.clear();
    });
  }

  async ask<T>(req: HostRequest): Promise<T> {
    await this.ready;
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...req, id });
    });
  }
}

export interface NodeSimOptions {
  readonly nodes: number;
  /** Controller keys every node serves. */
  readonly controllers: readonly string[];
  /** Package signer keys every node trusts. */
  readonly signers: readonly string[];
  /** Host processes to spread the nodes over (default 1). */
  readonly processes?: number;
  readonly leaseMs?: number | null;
  readonly board?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly prefix?: string;
}

export class NodeSim {
  private readonly hostOf = new Map<string, HostProcess>();

  private constructor(
    private readonly hosts: readonly HostProcess[],
    readonly nodes: readonly SimNodeInfo[],
    owners: ReadonlyArray<HostProcess>,
  ) {
    for (const [i, n] of nodes.entries()) this.hostOf.set(n.node_id, owners[i] as HostProcess);
  }

  static async start(o: NodeSimOptions): Promise<NodeSim> {
    const count = Math.max(1, o.processes ?? 1);
    const hosts = Array.from(
      { length: count },
      () => new HostProcess(fork(HOST, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] })),
    );
    const per = Math.ceil(o.nodes / count);
    const parts = await Promise.all(
      hosts.map((h, i) =>
        h.ask<SimNodeInfo[]>({
          op: "start",
          count: Math.max(0, Math.min(per, o.nodes - i * per)),
          prefix: o.prefix ?? "sim-",
          first: i * per,
          controllers: o.controllers,
          signers: o.signers,
          leaseMs: o.leaseMs ?? null,
          board: o.board ?? "pi5",
          labels: o.labels ?? {},
        }),
      ),
    );
    const nodes: SimNodeInfo[] = [];
    const owners: HostProcess[] = [];
    for (const [i, list] of parts.entries()) {
      for (const n of list) {
        nodes.push(n);
        owners.push(hosts[i] as HostProcess);
      }
    }
    return new NodeSim(hosts, nodes, owners);
  }

  /** The host processes' pids (their CPU and memory are the simulator's, not the controller's). */
  get pids(): number[] {
    return this.hosts.map((h) => h.child.pid ?? -1);
  }

  /** Holds instances on their nodes as if placed there (the benchmarks' fill). */
  async hold(rows: ReadonlyArray<SimInstance & { readonly node_id: string }>): Promise<void> {
    await Promise.all(this.split(rows, (r) => r.node_id).map(([h, part]) => h.ask({ op: "hold", rows: part })));
  }

  crash(nodeIds: readonly string[]): Promise<void> {
    return this.each("crash", nodeIds);
  }

  /** Gone like `crash`, but each address still takes connections and answers nothing (calls wait for their timeout). */
  hang(nodeIds: readonly string[]): Promise<void> {
    return this.each("hang", nodeIds);
  }

  cut(nodeIds: readonly string[]): Promise<void> {
    return this.each("cut", nodeIds);
  }

  heal(nodeIds: readonly string[]): Promise<void> {
    return this.each("heal", nodeIds);
  }

  /** What every host holds, summed. */
  async census(): Promise<Census> {
    const all = await Promise.all(this.hosts.map((h) => h.ask<Census>({ op: "census" })));
    const live: Record<string, number> = {};
    const served: Record<string, number> = {};
    for (const c of all) {
      for (const [k, v] of Object.entries(c.live)) live[k] = (live[k] ?? 0) + v;
      for (const [k, v] of Object.entries(c.served)) served[k] = (served[k] ?? 0) + v;
    }
    return {
      live,
      served,
      instances: all.reduce((s, c) => s + c.instances, 0),
      handshakes: all.reduce((s, c) => s + c.handshakes, 0),
      rss_mb: all.reduce((s, c) => s + c.rss_mb, 0),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.ask({ op: "close" }).catch(() => undefined)));
  }

  private async each(op: "crash" | "hang" | "cut" | "heal", nodeIds: readonly string[]): Promise<void> {
    await Promise.all(this.split(nodeIds, (id) => id).map(([h, part]) => h.ask({ op, node_ids: part })));
  }

  private split<T>(items: readonly T[], nodeOf: (t: T) => string): Array<[HostProcess, T[]]> {
    const by = new Map<HostProcess, T[]>();
    for (const item of items) {
      const h = this.hostOf.get(nodeOf(item));
      if (!h) throw new Error(`no simulated node ${nodeOf(item)}`);
      const list = by.get(h);
      if (list) list.push(item);
      else by.set(h, [item]);
    }
    return [...by];
  }
}
