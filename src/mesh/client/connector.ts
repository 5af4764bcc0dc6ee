/**
 * The controller's connector (spec/mesh.md §4.11, issue 17): TLS 1.3 bound to the identity keys to every node, and
 * plaintext only to the nodes the controller's home opts in explicitly in `transport.json`, the migration window for
 * nodes of an older berth. There is no fallback: a TLS connection that fails is a failed connection, never a retry
 * in clear, so a man in the middle cannot downgrade a node by breaking its handshake. A node must opt in on its side
 * too (`berth node serve --transport plaintext` or node.json `transport`), so plaintext needs both ends configured.
 *
 *   transport.json   { "plaintext_nodes": ["192.168.1.20:7400"] }   ("*" opts in every node)
 *
 * Every process that opens a controller on a home (CLI verbs, `berth serve`, `berth up`) builds its connector here,
 * warns on stderr when the opt-in is not empty, and chains `transport.plaintext` when the opt-in changed.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { SigningKey } from "../../core/crypto/ed25519.js";
import { describeIssues } from "../../core/protocol/messages.js";
import type { ConnectOptions, Connector, FrameStream, SocketFrameStream } from "../transport/frames.js";
import { parseAddr, TcpConnector } from "../transport/tcp.js";

export const TRANSPORT_FILE = "transport.json";

const Addr = z.string().refine(
  (a) => {
    try {
      parseAddr(a);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be a node address host:port (as `berth nodes add` took it) or "*" for every node' },
);

const TransportFileSchema = z.strictObject({
  plaintext_nodes: z
    .array(z.union([z.literal("*"), Addr]))
    .max(4096)
    .default([]),
});

/** Which node addresses the controller reaches in plaintext; empty by default (every node over TLS). */
export interface PlaintextOptIn {
  readonly all: boolean;
  readonly nodes: readonly string[];
}

export const NO_PLAINTEXT: PlaintextOptIn = { all: false, nodes: [] };

export class TransportConfigError extends Error {
  override name = "TransportConfigError";
}

/** Reads `<home>/transport.json`; missing means TLS everywhere. An invalid file refuses to start (names the field). */
export function loadPlaintextOptIn(home: string): PlaintextOptIn {
  const path = join(home, TRANSPORT_FILE);
  if (!existsSync(path)) return NO_PLAINTEXT;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new TransportConfigError(
      `${path} is not valid JSON; fix it or remove it (without it every node is reached over TLS)`,
    );
  }
  const parsed = TransportFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new TransportConfigError(`${describeIssues(path, parsed.error.issues)}; fix the file and start again`);
  const list = parsed.data.plaintext_nodes;
  return { all: list.includes("*"), nodes: [...new Set(list.filter((a) => a !== "*"))].sort() };
}

export function isPlaintext(optIn: PlaintextOptIn, addr: string): boolean {
  return optIn.all || optIn.nodes.includes(addr);
}

/** The warning every start prints while an opt-in is configured, `null` without one. */
export function plaintextWarning(optIn: PlaintextOptIn, home: string): string | null {
  if (!optIn.all && optIn.nodes.length === 0) return null;
  const which = optIn.all ? "every node" : optIn.nodes.join(", ");
  return `warning: plaintext transport to ${which} (${join(home, TRANSPORT_FILE)}): control messages, agent environments and output to them cross the network unencrypted; chained as transport.plaintext. Remove the entries once those nodes serve TLS.`;
}

/** The chained record of an opt-in: what it names, never why a node needs it (the operator knows). */
export function plaintextRecord(optIn: PlaintextOptIn, via: string): JsonObject {
  return { all: optIn.all, nodes: [...optIn.nodes], via };
}

/** How long a warm connection waits for its next call: well inside the node's 60 s idle cut (spec/mesh.md §4.3). */
export const WARM_IDLE_MS = 10_000;
const WARM_PER_NODE = 4;

interface Warm {
  readonly stream: SocketFrameStream;
  readonly since: number;
}

/**
 * The connector: TLS with the controller's key as its certificate for every node not opted in (tls.ts, loaded on
 * the first connection so a CLI verb that contacts no node does not load node:tls), TCP for the others.
 *
 * It keeps connections warm (issue 17): a stream the node client releases after a complete exchange waits up to
 * WARM_IDLE_MS (unref'd, so it never holds a process open) and carries the next call to that node that accepts
 * one (`reuseIdleMs`), so a describe and the place after it, or the server's status ticks, share one handshake.
 * §4.3 allows one request in flight per connection, and a node serves the next request on the same connection.
 */
export class ControllerConnector implements Connector {
  private tls: Promise<Connector> | null = null;
  private readonly tcp: TcpConnector;
  private readonly warm = new Map<string, Warm[]>();

  constructor(
    private readonly o: {
      readonly identity: SigningKey;
      readonly plaintext?: PlaintextOptIn;
      readonly connectTimeoutMs?: number;
      readonly clock?: () => number;
    },
  ) {
    this.tcp = new TcpConnector(o.connectTimeoutMs ?? 5000);
  }

  async connect(addr: string, signal?: AbortSignal, opts: ConnectOptions = {}): Promise<FrameStream> {
    const now = (this.o.clock ?? Date.now)();
    const idle = this.warm.get(addr) ?? [];
    // Newest first. One the node closed is dropped; one idle longer than this call accepts (a place takes only one
    // used in the last two seconds) stays for a read that may take it (issue 35: a place closed them all, and the
    // tick's describes and statuses then paid a fresh TLS handshake each).
    for (let i = idle.length - 1; i >= 0; i--) {
      const w = idle[i] as Warm;
      if (!w.stream.quiet) {
        idle.splice(i, 1);
        w.stream.close();
        continue;
      }
      if (now - w.since > (opts.reuseIdleMs ?? 0)) break;
      idle.splice(i, 1);
      w.stream.ref();
      return this.lend(addr, w.stream, true);
    }
    return this.lend(addr, (await this.open(addr, signal)) as SocketFrameStream, false);
  }

  /** Closes every warm connection (a long-lived process shutting down). */
  closeWarm(): void {
    for (const list of this.warm.values()) for (const w of list.splice(0)) w.stream.close();
  }

  private async open(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    if (isPlaintext(this.o.plaintext ?? NO_PLAINTEXT, addr)) return this.tcp.connect(addr, signal);
    // One TLS connector (and so one secure context) per connector: made by the first connection, and awaited by every
    // connection that starts while the module loads (issue 35: a pass's 64 first connections each made their own).
    this.tls ??= import("../transport/tls.js").then(
      ({ TlsConnector }) =>
        new TlsConnector({ identity: this.o.identity, connectTimeoutMs: this.o.connectTimeoutMs ?? 5000 }),
    );
    return (await this.tls).connect(addr, signal);
  }

  private lend(addr: string, stream: SocketFrameStream, reused: boolean): FrameStream {
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      const list = this.warm.get(addr) ?? [];
      if (!stream.quiet || list.length >= WARM_PER_NODE) return stream.close();
      stream.unref();
      list.push({ stream, since: (this.o.clock ?? Date.now)() });
      this.warm.set(addr, list);
      setTimeout(() => {
        const i = list.findIndex((w) => w.stream === stream);
        if (i >= 0) list.splice(i, 1)[0]?.stream.close();
      }, WARM_IDLE_MS).unref();
    };
    const peerKey = (stream as FrameStream).peerKey;
    return {
      remote: stream.remote,
      ...(peerKey !== undefined ? { peerKey } : {}),
      reused,
      send: (frame) => stream.send(frame),
      recv: (signal) => stream.recv(signal),
      close: () => {
        done = true;
        stream.close();
      },
      release,
    };
  }
}

/** The part of the controller store the announcement needs (the store is above this folder). */
export interface PlaintextChain {
  events(q: { kind: string }): readonly JsonObject[] | Promise<readonly JsonObject[]>;
  appendAll(drafts: ReadonlyArray<{ source: string; kind: string; payload: JsonObject }>): unknown;
}

/**
 * Says so when an opt-in is configured: the warning on every start, and `transport.plaintext` on the controller
 * chain — at every start of a long-lived controller (`always`: `berth serve`, `berth up`), and for a CLI verb when
 * the opt-in differs from the last one chained (a verb per minute must not bury the chain in copies).
 */
export async function announcePlaintext(o: {
  readonly optIn: PlaintextOptIn;
  readonly home: string;
  readonly chain: PlaintextChain;
  readonly via: string;
  readonly always: boolean;
  readonly warn: (line: string) => void;
}): Promise<void> {
  const warning = plaintextWarning(o.optIn, o.home);
  if (warning === null) return;
  o.warn(warning);
  const record = plaintextRecord(o.optIn, o.via);
  if (!o.always) {
    const last = (await o.chain.events({ kind: "transport.plaintext" })).at(-1);
    if (last !== undefined && last.all === record.all && JSON.stringify(last.nodes) === JSON.stringify(record.nodes))
      return;
  }
  await o.chain.appendAll([{ source: "trust", kind: "transport.plaintext", payload: record }]);
}
