/** The production connector and listener: TCP with the framing of frames.ts. */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { type SecureContext, TLSSocket } from "node:tls";
import { Admission, type AdmissionLimits, peerAddress } from "./admission.js";
import { type Connector, type FrameStream, MAX_FRAME_BYTES, SocketFrameStream, StreamClosed } from "./frames.js";

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

/**
 * Waits for a client socket to reach `readyEvent` within the timeout and the signal; `ready` turns it into a stream
 * or an error (a TLS peer with the wrong key). Shared by the TCP and TLS connectors.
 */
export function settleConnect<S extends Socket, T>(
  socket: S,
  o: {
    addr: string;
    readyEvent: string;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    what: string | (() => string);
  },
  ready: (socket: S) => T | StreamClosed,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new StreamClosed(`connect to ${o.addr} timed out`)), o.timeoutMs);
    const onAbort = () =>
      fail(o.signal?.reason instanceof Error ? o.signal.reason : new StreamClosed("connect aborted"));
    const done = () => {
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
    };
    const fail = (error: Error) => {
      done();
      socket.destroy();
      reject(error);
    };
    o.signal?.addEventListener("abort", onAbort, { once: true });
    const onConnectError = (error: Error) =>
      fail(
        new StreamClosed(
          `cannot connect to ${o.addr}${typeof o.what === "string" ? o.what : o.what()}: ${error.message}`,
        ),
      );
    socket.once("error", onConnectError);
    socket.once(o.readyEvent, () => {
      // Only the connect-time handler goes: the stream `ready` builds adds its own, and without it a later reset
      // (a node killed mid-describe) would be an uncaught exception that takes the whole process down.
      socket.removeListener("error", onConnectError);
      const made = ready(socket);
      if (made instanceof StreamClosed) return fail(made);
      done();
      resolve(made);
    });
  });
}

export class TcpConnector implements Connector {
  constructor(private readonly connectTimeoutMs = 5000) {}

  connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    const { host, port } = parseAddr(addr);
    const socket = createConnection({ host, port });
    return settleConnect(
      socket,
      { addr, readyEvent: "connect", timeoutMs: this.connectTimeoutMs, signal, what: "" },
      (s) => new SocketFrameStream(s),
    );
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
 * TLS on a listener (tls.ts builds it): every admitted connection must complete a TLS 1.3 handshake with a client
 * certificate whose key is authorised; until then (and for at most `firstBytesMs`) it is unauthenticated.
 */
export interface ListenTls {
  readonly context: SecureContext;
  readonly authorised: () => ReadonlySet<string>;
  readonly peerKeyOf: (socket: TLSSocket) => string | null;
  readonly onRefused?: (presented: string | null, remote: string) => void;
}

/**
 * Listens on `addr` and hands every admitted connection to `onStream`; resolves with the bound address. With
 * `limits`, connections are admitted by admission.ts and closed after `firstBytesMs` of silence (with `tls`: without
 * a completed handshake). With `tls`, the streams are TLS 1.3 sessions of authorised controllers only.
 */
export async function listenFrames(
  addr: string,
  onStream: (stream: SocketFrameStream) => void,
  opts: { limits?: ListenLimits; tls?: ListenTls } = {},
): Promise<{ server: Server; address: string; counters: ListenerCounters }> {
  const { host, port } = parseAddr(addr);
  const counters: ListenerCounters = { accepted: 0, evicted: 0, refused: 0, silent: 0 };
  const limits = opts.limits;
  const tls = opts.tls;
  const admission = limits ? new Admission<Socket>(limits) : null;
  const server = createServer((raw) => {
    if (admission && limits) {
      const verdict = admission.admit(raw, peerAddress(raw.remoteAddress), performance.now());
      if (verdict.kind === "refuse") {
        counters.refused++;
        raw.destroy();
        return;
      }
      counters.accepted++;
      for (const victim of verdict.evict) {
        counters.evicted++;
        victim.destroy();
      }
    }
    const remote = `${raw.remoteAddress ?? "?"}:${raw.remotePort ?? "?"}`;
    const socket: Socket = tls
      ? new TLSSocket(raw, { isServer: true, secureContext: tls.context, requestCert: true, rejectUnauthorized: false })
      : raw;
    const silent = limits
      ? setTimeout(() => {
          counters.silent++;
          socket.destroy();
          raw.destroy();
        }, limits.firstBytesMs)
      : undefined;
    socket.once("close", () => {
      clearTimeout(silent);
      admission?.release(raw);
    });
    const frames = (authenticated: boolean) => {
      const stream = new SocketFrameStream(socket, {
        maxFrame: limits?.maxFrameBytes ?? MAX_FRAME_BYTES,
        onAuthenticated: () => admission?.authenticate(raw),
      });
      if (authenticated) stream.markAuthenticated();
      onStream(stream);
    };
    if (!tls) {
      socket.once("data", () => clearTimeout(silent));
      frames(false);
      return;
    }
    socket.on("error", () => socket.destroy());
    socket.once("secure", () => {
      clearTimeout(silent);
      const presented = tls.peerKeyOf(socket as TLSSocket);
      if (presented === null || !tls.authorised().has(presented)) {
        tls.onRefused?.(presented, remote);
        socket.destroy();
        return;
      }
      socket.removeAllListeners("error");
      frames(true); // the handshake proved an authorised controller key: it holds its slot (admission.ts)
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  const address =
    bound && typeof bound === "object"
      ? `${bound.family === "IPv6" ? `[${bound.address}]` : bound.address}:${bound.port}`
      : addr;
  return { server, address, counters };
}
