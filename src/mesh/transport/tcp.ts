/** The production connector and listener: TCP with the framing of frames.ts. */
import { createConnection, createServer, type Server } from "node:net";
import { type Connector, type FrameStream, SocketFrameStream, StreamClosed } from "./frames.js";

export function parseAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65_535)) throw new Error(`address ${JSON.stringify(addr)} is not host:port`);
  return { host: (m[1] ?? m[2]) as string, port };
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

/** Listens on `addr` and hands every accepted connection to `onStream`; resolves with the bound address. */
export async function listenFrames(
  addr: string,
  onStream: (stream: SocketFrameStream) => void,
  opts: { maxConnections?: number } = {},
): Promise<{ server: Server; address: string }> {
  const { host, port } = parseAddr(addr);
  const server = createServer((socket) => onStream(new SocketFrameStream(socket)));
  if (opts.maxConnections !== undefined) server.maxConnections = opts.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  const address = bound && typeof bound === "object" ? `${bound.family === "IPv6" ? `[${bound.address}]` : bound.address}:${bound.port}` : addr;
  return { server, address };
}
