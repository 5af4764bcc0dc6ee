/** The production connector and listener: TCP with the framing of frames.ts. */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { Admission, type AdmissionLimits, peerAddress } from "./admission.js";
import { type Connector, type FrameStream, SocketFrameStream, StreamClosed } from "./frames.js";

export function parseAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65_535)) throw new Error(`address ${JSON.stringify(addr)} is not host:port`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/**
 * Whether a listen address is reachable from this machine only: 127.0.0.0/8, ::1 (and its IPv4-mapped form) or
 * `localhost`. Anything else, the wildcards 0.0.0.0 and :: included, is reachable beyond the machine.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

export class TcpConnector implements Connector {
  constructor(private readonly connectTimeoutMs = 5000) {}

  connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    const { host, port } = parseAddr(addr);
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host, port });
      const timer = setTimeout(() => fail(new StreamClosed(`connect to ${addr} timed out`)), this.connectTimeoutMs);
      const onAbort = () => fail(signal?.reason instanceof Error ? signal.reason : new StreamClosed("connect aborted"));
      const fail = (error: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        socket.destroy();
        reject(error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      socket.once("error", (error) => fail(new StreamClosed(`cannot connect to ${addr}: ${error.message}`)));
      socket.once("connect", () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        socket.removeAllListeners("error");
        resolve(new SocketFrameStream(socket));
      });
    });
  }
}

export interface ListenLimits extends AdmissionLimits {
  /** A connection that has sent no byte after this long is closed (a silent socket holds no slot for long). */
  readonly firstBytesMs: number;
  /** The cap on incoming frames (REQUEST_FRAME_BYTES for a node). */
  readonly maxFrameBytes: number;
}

/** What a listener did with its connections, for tests and benchmarks. */
export interface ListenerCounters {
  accepted: number;
  evicted: number;
  refused: number;
  silent: number;
}

/**
 * Listens on `addr` and hands every admitted connection to `onStream`; resolves with the bound address. With
 * `limits`, connections are admitted by admission.ts and closed after `firstBytesMs` of silence.
 */
export async function listenFrames(
  addr: string,
  onStream: (stream: SocketFrameStream) => void,
  opts: { limits?: ListenLimits } = {},
): Promise<{ server: Server; address: string; counters: ListenerCounters }> {
  const { host, port } = parseAddr(addr);
  const counters: ListenerCounters = { accepted: 0, evicted: 0, refused: 0, silent: 0 };
  const limits = opts.limits;
  const admission = limits ? new Admission<Socket>(limits) : null;
  const server = createServer((socket) => {
    if (!limits || !admission) {
      onStream(new SocketFrameStream(socket));
      return;
    }
    const verdict = admission.admit(socket, peerAddress(socket.remoteAddress), performance.now());
    if (verdict.kind === "refuse") {
      counters.refused++;
      socket.destroy();
      return;
    }
    counters.accepted++;
    for (const victim of verdict.evict) {
      counters.evicted++;
      victim.destroy();
    }
    const silent = setTimeout(() => {
      counters.silent++;
      socket.destroy();
    }, limits.firstBytesMs);
    socket.once("data", () => clearTimeout(silent));
    socket.once("close", () => {
      clearTimeout(silent);
      admission.release(socket);
    });
    onStream(new SocketFrameStream(socket, { maxFrame: limits.maxFrameBytes, onAuthenticated: () => admission.authenticate(socket) }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  const address = bound && typeof bound === "object" ? `${bound.family === "IPv6" ? `[${bound.address}]` : bound.address}:${bound.port}` : addr;
  return { server, address, counters };
}
