/**
 * In-process streams: the same frames without TCP, for tests and embedding (spec/mesh.md §4.10 MemoryConnector).
 * `mem://<name>` reaches a service registered under that name.
 */
import { type Connector, encodeFrame, type FrameStream, StreamClosed } from "./frames.js";
import { type FrameWaiter, type RecvLimit, waitForFrame } from "./recv-limit.js";

class MemoryEnd implements FrameStream {
  peer: MemoryEnd | undefined;
  private readonly frames: Uint8Array[] = [];
  private readonly waiters: FrameWaiter[] = [];
  private closed = false;

  constructor(readonly remote: string) {}

  deliver(frame: Uint8Array): void {
    const w = this.waiters.shift();
    if (w) w.resolve(frame);
    else this.frames.push(frame);
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(new StreamClosed("end of stream"));
  }

  async send(frame: Uint8Array): Promise<void> {
    if (this.closed || !this.peer || this.peer.closed) throw new StreamClosed("stream closed");
    encodeFrame(frame); // same limits as on the wire
    this.peer.deliver(new Uint8Array(frame));
  }

  recv(limit?: RecvLimit): Promise<Uint8Array> {
    const f = this.frames.shift();
    if (f) return Promise.resolve(f);
    if (this.closed) return Promise.reject(new StreamClosed("end of stream"));
    return waitForFrame(this.waiters, limit);
  }

  close(): void {
    this.end();
    this.peer?.end();
  }
}

export function memoryPair(name = "mem"): [FrameStream, FrameStream] {
  const a = new MemoryEnd(`${name}:client`);
  const b = new MemoryEnd(`${name}:server`);
  a.peer = b;
  b.peer = a;
  return [a, b];
}

export class MemoryConnector implements Connector {
  private readonly services = new Map<string, (stream: FrameStream) => void>();

  /** Registers a service (e.g. `node.serve`) and returns its address `mem://<name>`. */
  register(name: string, serve: (stream: FrameStream) => void): string {
    this.services.set(name, serve);
    return `mem://${name}`;
  }

  async connect(addr: string): Promise<FrameStream> {
    const serve = this.services.get(addr.replace(/^mem:\/\//, ""));
    if (!serve) throw new StreamClosed(`no service at ${addr}`);
    const [client, server] = memoryPair(addr);
    serve(server);
    return client;
  }
}
