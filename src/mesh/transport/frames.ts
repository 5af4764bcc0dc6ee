/**
 * Length-prefixed framing (spec/mesh.md §4.1) and the stream/connector seam (§4.10). A frame is a 4-byte big-endian
 * length N (1 ≤ N ≤ 16 MiB) followed by N bytes. A zero or oversized length is a protocol error: the stream is
 * destroyed without reading further, so a peer can never make us buffer more than one frame's worth.
 *
 * "Oversized" depends on the side (issue 12): a node's listener takes request-sized frames only
 * (REQUEST_FRAME_BYTES), and a larger one only as the answer to a fetch it sent itself (`allowFrame`); the length
 * prefix is checked as soon as its 4 bytes arrive, before the body is buffered.
 */
import type { Socket } from "node:net";
import { LIMITS } from "../../core/protocol/messages.js";
import { type FrameWaiter, type RecvLimit, waitForFrame } from "./recv-limit.js";

export { FrameTimeout, type RecvLimit } from "./recv-limit.js";

export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * The largest `request` message frame: the signed payload (≤ 256 KiB, §4.9) is a JSON string inside the frame's JSON,
 * and escaping at most doubles a JSON text (each `"` or backslash gains one backslash), plus the envelope (type, key, sig).
 */
export const REQUEST_FRAME_BYTES = 2 * LIMITS.requestPayloadBytes + 4096;

/** recv() rejects with this at end of stream or after close(). */
export class StreamClosed extends Error {
  override name = "StreamClosed";
  constructor(message = "stream closed") {
    super(message);
  }
}

/**
 * The peer's transport key is not the one expected (spec/mesh.md §4.11): the connection is refused before any frame.
 * Here rather than in tls.ts so that the client can recognise it without loading tls.ts and node:tls.
 */
export class PeerKeyMismatch extends StreamClosed {
  override name = "PeerKeyMismatch";
  constructor(
    readonly addr: string,
    readonly expected: string,
    readonly presented: string | null,
  ) {
    super(
      `the node at ${addr} presented key ${presented ?? "(none)"} in the TLS handshake, not the expected ${expected}: refused before sending anything`,
    );
  }
}

/** A framing violation by the peer; the stream is closed when it is raised. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

export interface FrameStream {
  send(frame: Uint8Array): Promise<void>;
  /**
   * The next frame; rejects with StreamClosed at end of stream, ProtocolError on a bad frame, the signal's reason, or
   * FrameTimeout when a limit in milliseconds passes (recv-limit.ts).
   */
  recv(limit?: RecvLimit): Promise<Uint8Array>;
  close(): void;
  readonly remote: string;
  /** Listener side: the service verified this peer's request, so the connection keeps its slot (admission.ts). */
  markAuthenticated?(): void;
  /** Listener side: the next frame longer than the usual cap may be up to `bytes` (the node asked for that much). */
  allowFrame?(bytes: number): void;
  /**
   * Client side over TLS (tls.ts): the Ed25519 key (64 hex) the peer proved in the handshake. Absent on a plaintext
   * stream: the caller then has only the signatures above the stream (spec/mesh.md §4.11).
   */
  readonly peerKey?: string;
  /**
   * Client side, from a connector that keeps connections warm (client/connector.ts): hand the stream back after a
   * complete exchange instead of closing it. Absent: the caller closes.
   */
  release?(): void;
  /** The stream was taken from the warm pool: the node may have closed it just before (see node-client.ts). */
  readonly reused?: boolean;
}

export interface ConnectOptions {
  /** A warm connection to `addr` idle for at most this long may be reused (0 or absent: a fresh connection). */
  readonly reuseIdleMs?: number;
}

export interface Connector {
  connect(addr: string, signal?: AbortSignal, opts?: ConnectOptions): Promise<FrameStream>;
}

export function encodeFrame(frame: Uint8Array): Buffer {
  if (frame.length < 1 || frame.length > MAX_FRAME_BYTES)
    throw new ProtocolError(`frame of ${frame.length} bytes is outside 1…${MAX_FRAME_BYTES}`);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(frame.length, 0);
  return Buffer.concat([header, frame]);
}

/**
 * Incremental decoder: feed chunks, take whole frames. Keeps chunks in a list so a large frame is copied once. The
 * caller calls `next()` after every `push`, so a bad length is refused with at most one socket read (≤ 64 KiB)
 * buffered, never the body it announces.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private allowance = 0;

  constructor(private readonly maxFrame: number = MAX_FRAME_BYTES) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** Bytes held that are not yet a whole frame (for the property tests' memory bound). */
  get pending(): number {
    return this.buffered;
  }

  /** One frame above the usual cap, up to `bytes` (never above 16 MiB), may follow; used up by that frame. */
  allow(bytes: number): void {
    this.allowance = Math.min(MAX_FRAME_BYTES, Math.max(this.allowance, bytes));
  }

  /** The next whole frame, `undefined` if more bytes are needed; throws ProtocolError on a bad length. */
  next(): Buffer | undefined {
    if (this.buffered < 4) return undefined;
    const head = this.peek(4);
    const length = head.readUInt32BE(0);
    const limit = Math.max(this.maxFrame, this.allowance);
    if (length === 0 || length > limit) throw new ProtocolError(`frame length ${length} is outside 1…${limit}`);
    if (this.buffered < 4 + length) return undefined;
    if (length > this.maxFrame) this.allowance = 0;
    const all = this.take(4 + length);
    return all.subarray(4);
  }

  private peek(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    if (first.length >= n) return first.subarray(0, n);
    this.chunks = [Buffer.concat(this.chunks)];
    return (this.chunks[0] as Buffer).subarray(0, n);
  }

  private take(n: number): Buffer {
    const joined = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    const out = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}

/** A FrameStream over a TCP socket. */
export class SocketFrameStream implements FrameStream {
  private readonly frames: Uint8Array[] = [];
  private readonly waiters: FrameWaiter[] = [];
  private ended: Error | undefined;
  readonly remote: string;
  private readonly decoder: FrameDecoder;
  private readonly onAuthenticated: (() => void) | undefined;
  private corked = false;

  /** `maxFrame`: the cap on incoming frames (a listener passes REQUEST_FRAME_BYTES); `onAuthenticated`: see markAuthenticated. */
  constructor(
    private readonly socket: Socket,
    opts: { maxFrame?: number; onAuthenticated?: () => void } = {},
  ) {
    this.decoder = new FrameDecoder(opts.maxFrame ?? MAX_FRAME_BYTES);
    this.onAuthenticated = opts.onAuthenticated;
    this.remote = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? "?"}`;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("end", () => this.fail(new StreamClosed("end of stream")));
    socket.on("close", () => this.fail(new StreamClosed("connection closed")));
    socket.on("error", (error) => this.fail(new StreamClosed(`connection error: ${error.message}`)));
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    this.decoder.push(chunk);
    try {
      for (let frame = this.decoder.next(); frame; frame = this.decoder.next()) {
        const waiter = this.waiters.shift();
        if (waiter) waiter.resolve(frame);
        else this.frames.push(frame);
      }
    } catch (error) {
      this.fail(error as Error);
      this.socket.destroy();
    }
  }

  private fail(error: Error): void {
    if (this.ended) return;
    this.ended = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  send(frame: Uint8Array): Promise<void> {
    if (this.ended) return Promise.reject(this.ended);
    const bytes = encodeFrame(frame);
    // Issue 19: frames sent in the same tick leave in one write (one TLS record, one wake-up of the peer), such as the
    // answer to a node's fetch and the data frame that follows it (client/node-client.ts).
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    return new Promise((resolve, reject) => {
      this.socket.write(bytes, (error) =>
        error ? reject(new StreamClosed(`send failed: ${error.message}`)) : resolve(),
      );
    });
  }

  recv(limit?: RecvLimit): Promise<Uint8Array> {
    const ready = this.frames.shift();
    if (ready) return Promise.resolve(ready);
    if (this.ended) return Promise.reject(this.ended);
    return waitForFrame(this.waiters, limit);
  }

  close(): void {
    this.fail(new StreamClosed("closed locally"));
    this.socket.destroy();
  }

  /** Open, with nothing buffered and nobody waiting: a connection that may carry the next exchange. */
  get quiet(): boolean {
    return this.ended === undefined && !this.socket.destroyed && this.frames.length === 0 && this.waiters.length === 0;
  }

  /** While idle in a pool, a connection must not keep a CLI process alive; `ref()` when it carries a call again. */
  unref(): void {
    this.socket.unref();
  }

  ref(): void {
    this.socket.ref();
  }

  markAuthenticated(): void {
    this.onAuthenticated?.();
  }

  allowFrame(bytes: number): void {
    this.decoder.allow(bytes);
  }

  /** Writes raw bytes without framing: only for tests that send malformed frames. */
  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Half-closes the sending side (the peer sees end of stream); for tests. */
  endWrite(): void {
    this.socket.end();
  }
}
