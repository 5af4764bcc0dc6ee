/**
 * The transport under `HttpCluster`'s watches (spec/kubernetes.md §8.4) and the parser of their event lines.
 *
 * Why HTTP/2 (issue 19): a watch is a response that never ends on its own, so closing it early — as every deploy call
 * does once its pod has started — closes an HTTP/1.1 connection with it. Over the keep-alive pool that meant one new
 * TLS handshake per fresh deploy (client and apiserver both pay it; 100 deploys opened ~100 connections). Over one
 * HTTP/2 session per connection a watch is a stream, and closing it (RST_STREAM) leaves the session for the next one.
 * The apiserver speaks HTTP/2 over TLS as client-go does by default; a server that does not negotiate `h2` (ALPN) gets
 * HTTP/1.1 watches for the rest of the connection's life, which is what every watch used before.
 */
import http2 from "node:http2";
import type { Readable } from "node:stream";
import type { ConnectionOptions } from "node:tls";
import type { WatchHandlers } from "./cluster.js";

/** The slice of a watch event's object this adapter reads: its name and resourceVersion, never more. */
export type WatchObject = { metadata?: { name?: string; resourceVersion?: string } };

export type WatchEndReason = Parameters<WatchHandlers["onEnd"]>[0];

/** What a transport reports about one watch response. `status` answers whether the body should be read. */
export interface WatchSink {
  status(code: number): boolean;
  data(chunk: string): void;
  end(): void;
  error(): void;
}

/** The ending a non-200 watch answer means (§8.4: 403 disables watching, 410 restarts it from a fresh GET). */
export function watchEndOf(status: number): WatchEndReason {
  return status === 403
    ? "forbidden"
    : status === 404 || status === 405
      ? "unsupported"
      : status === 410
        ? "gone"
        : "error";
}

/**
 * Splits a watch body into event lines. Each event yields a wake carrying the pod's name and the event's
 * resourceVersion — nothing else of the object leaves this function (I-4); a bookmark only moves the resourceVersion
 * a reconnect resumes from; an ERROR event ends the watch (410 → gone).
 */
export function watchLines(
  nameOf: (object: WatchObject | undefined) => string,
  handlers: WatchHandlers,
  end: (why: WatchEndReason) => void,
): (chunk: string) => void {
  let buffer = "";
  return (chunk) => {
    buffer += chunk;
    for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line === "") continue;
      let event: { type?: string; object?: WatchObject & { code?: number } };
      try {
        event = JSON.parse(line) as typeof event;
      } catch {
        continue;
      }
      if (event.type === "ERROR") {
        end(event.object?.code === 410 ? "gone" : "error");
        return;
      }
      const rv = event.object?.metadata?.resourceVersion;
      if (event.type === "BOOKMARK") {
        if (typeof rv === "string") handlers.onBookmark?.(rv);
        continue;
      }
      // The object is dropped here on purpose: a watch only ever wakes the loop (I-4).
      if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
        handlers.onWake({
          podName: nameOf(event.object),
          kind: event.type === "ADDED" ? "added" : event.type === "DELETED" ? "deleted" : "modified",
          ...(typeof rv === "string" ? { resourceVersion: rv } : {}),
        });
      }
    }
  };
}

/** Headers HTTP/2 forbids (connection-specific); everything else travels lower-cased. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"]);

/**
 * Hands a watch response's body to `sink` once `sink` accepts its status; a refused status only drains the body.
 * The same for an HTTP/1.1 response and an HTTP/2 stream, so both transports end a watch the same way.
 */
export function feedWatchBody(status: number, body: Readable, sink: WatchSink): void {
  if (!sink.status(status)) {
    body.resume();
    return;
  }
  body.setEncoding("utf8");
  body.on("data", (chunk: string) => sink.data(chunk));
  body.on("end", () => sink.end());
}

/** Why an HTTP/2 session could not be had: the server does not speak it (ALPN), or the connection failed. */
export type NoSession = "http/1.1" | "failed";

/** One HTTP/2 session per `HttpCluster`, opened on the first watch and re-opened after it closes. */
export class H2Watches {
  private session: http2.ClientHttp2Session | undefined;
  private connecting: Promise<http2.ClientHttp2Session | NoSession> | undefined;
  /** The server refused `h2` in ALPN: watches stay on HTTP/1.1 from then on. */
  private refused = false;
  private closed = false;

  constructor(
    private readonly origin: string,
    private readonly tls: ConnectionOptions,
  ) {}

  /** The live session, a new one once it is connected, or why watches must go over HTTP/1.1 or fail this time. */
  ready(): Promise<http2.ClientHttp2Session | NoSession> {
    if (this.refused) return Promise.resolve("http/1.1");
    if (this.closed) return Promise.resolve("failed");
    const live = this.session;
    if (live && !live.closed && !live.destroyed) return Promise.resolve(live);
    if (this.connecting) return this.connecting;
    const s = http2.connect(this.origin, this.tls);
    // The session alone never keeps a process alive: a waiting deploy always holds its own resync timer.
    s.unref();
    s.on("close", () => {
      if (this.session === s) this.session = undefined;
    });
    this.connecting = new Promise<http2.ClientHttp2Session | NoSession>((resolve) => {
      s.once("connect", () => {
        if (s.alpnProtocol !== "h2") {
          this.refused = true;
          s.destroy();
          resolve("http/1.1");
          return;
        }
        this.session = s;
        resolve(s);
      });
      // Later session errors end the session only; its streams report their own.
      s.on("error", (e: NodeJS.ErrnoException) => {
        if (/NO_APPLICATION_PROTOCOL/.test(e.code ?? "")) this.refused = true;
        resolve(this.refused ? "http/1.1" : "failed");
      });
    }).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Opens one watch stream on `session`; the returned function cancels it (RST_STREAM), leaving the session open. */
  open(session: http2.ClientHttp2Session, path: string, headers: Record<string, string>, sink: WatchSink): () => void {
    const out: http2.OutgoingHttpHeaders = { ":method": "GET", ":path": path };
    for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k.toLowerCase())) out[k.toLowerCase()] = v;
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(out, { endStream: true });
    } catch {
      queueMicrotask(() => sink.error());
      return () => undefined;
    }
    stream.on("response", (h) => feedWatchBody(Number(h[":status"] ?? 0), stream, sink));
    stream.on("error", () => sink.error());
    // A stream the server resets or that closes before a response is an error, never a silent hang.
    stream.on("close", () => sink.error());
    return () => {
      if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    };
  }

  close(): void {
    this.closed = true;
    this.session?.destroy();
    this.session = undefined;
  }
}
