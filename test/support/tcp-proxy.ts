/**
 * A TCP proxy a test controls, standing between the controller and one node daemon (spec/mesh.md §18.2). It forwards
 * bytes both ways and decodes the frames coming back from the node, so it can:
 * - `dropNextPlaceAnswer()`: discard the next `response` whose payload method is `place` (the node has carried the
 *   place out by then) and destroy both sockets: the controller sees a lost answer;
 * - `holdNextPlaceAnswer()`: keep that answer back until the controller gives up (an answer after the timeout);
 * - `corruptNextPlaceAnswer()`: flip one character of that answer's signature (a tampered answer);
 * - `delayNextAnswer(method)`: keep the next answer to `method` (and what follows it on that connection) back until
 *   `releaseDelayed()`, then deliver it: the node answered at once, the controller hears it late;
 * - `cut()`: close the listener and destroy open sockets, so new connections are refused; `heal()`: listen again on
 *   the same port;
 * - `holdNextRequest(method)`: keep back the next *request* for that method (and every byte after it on that
 *   connection) before the node sees it, until the test `release()`s it (delivered late) or `reset()`s the link
 *   (never delivered: both sockets destroyed). `arrived` resolves when the request reached the proxy;
 * - `resetConnections()`: destroy open sockets, keep listening; `disarm()`: forget faults armed but not struck;
 * - `holdAllRequests()`: keep back every request from now on, on every connection (new ones too), and deliver them
 *   all at `release()` — even those whose sender has given up and closed (the node side stays open to answer): a
 *   network that holds a node's lease renewals past the lease;
 * - `isolateAfterNextAnswer(method, pick)`: once the next answer to `method` has gone to the controller, the node is cut
 *   off — every connection is reset as it is accepted, before a TLS byte, so the controller knows nothing left (a
 *   failed connect) — except the one connection `pick` chooses: its requests reach the node, the node's answers never
 *   reach the controller, and it is held open until the controller closes it (a link that carries requests and loses
 *   answers, once);
 * - `observer`: told every request as it is written to the node (method, nonce, issued_at_ms, when) and every answer
 *   as the node sends it (whether or not a fault then keeps it from the controller), for a judge that checks the
 *   node's lease from outside.
 *
 * The control channel is TLS 1.3 bound to the identity keys (spec/mesh.md §4.11), so a proxy that reads frames must
 * end the session on each side: it holds the node's key (the certificate the controller checks against the pinned
 * key) and the controller's (the certificate the node authorises) — a man in the middle the test itself put there.
 * Without `tls` it forwards a plaintext channel (both ends opted in to plaintext).
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { createSecureContext, connect as tlsConnect, TLSSocket } from "node:tls";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import { encodeFrame, FrameDecoder } from "../../src/mesh/transport/frames.js";
import { tlsIdentity } from "../../src/mesh/transport/tls.js";

/** The keys a frame-reading proxy needs to end both TLS sessions. */
export interface ProxyTls {
  /** The key of the node behind the proxy (from its node.key): what the controller expects to see. */
  readonly node: SigningKey;
  /** A controller key the node authorises: what the node expects to see. */
  readonly controller: SigningKey;
}

const TLS13 = { minVersion: "TLSv1.3", maxVersion: "TLSv1.3" } as const;

/** The method a `request` frame asks for, or a `response` frame answers; null for any other frame. */
function methodOf(frame: Buffer, type: "request" | "response"): string | null {
  try {
    const msg = JSON.parse(frame.toString("utf8")) as { type?: string; signed?: { payload?: string } };
    if (msg.type !== type || typeof msg.signed?.payload !== "string") return null;
    const payload = JSON.parse(msg.signed.payload) as { method?: unknown };
    return typeof payload.method === "string" ? payload.method : null;
  } catch {
    return null;
  }
}

/** A request the proxy holds back (see `holdNextRequest`). */
export interface HeldRequest {
  /** Resolves when the request reached the proxy (and was kept back). */
  readonly arrived: Promise<void>;
  /** Delivers the request and everything after it, then forwards as usual. */
  release(): void;
  /** Destroys both sockets: the node never sees the request, the controller sees its connection reset. */
  reset(): void;
}

/** What `observer` is told: a request as written to the node, an answer as the node sent it. */
export interface ProxyObserver {
  request(r: {
    readonly nonce: string;
    readonly method: string;
    readonly issuedAtMs: number;
    readonly deliveredMs: number;
  }): void;
  answer(a: {
    readonly nonce: string;
    readonly method: string;
    readonly status: string;
    readonly code: string | null;
    readonly atMs: number;
  }): void;
}

/** Parses what an observer needs from a request or response frame; null for anything else. */
function observed(
  frame: Buffer,
):
  | { type: "request"; nonce: string; method: string; issuedAtMs: number }
  | { type: "response"; nonce: string; method: string; status: string; code: string | null }
  | null {
  try {
    const msg = JSON.parse(frame.toString("utf8")) as { type?: string; signed?: { payload?: string } };
    if (typeof msg.signed?.payload !== "string") return null;
    const p = JSON.parse(msg.signed.payload) as {
      method?: string;
      nonce?: string;
      issued_at_ms?: number;
      request_nonce?: string;
      outcome?: { status?: string; code?: string };
    };
    if (msg.type === "request" && typeof p.nonce === "string" && typeof p.issued_at_ms === "number") {
      return { type: "request", nonce: p.nonce, method: String(p.method), issuedAtMs: p.issued_at_ms };
    }
    if (msg.type === "response" && typeof p.request_nonce === "string") {
      return {
        type: "response",
        nonce: p.request_nonce,
        method: String(p.method),
        status: String(p.outcome?.status),
        code: p.outcome?.code ?? null,
      };
    }
    return null;
  } catch {
    return null;
  }
}

/** A request `isolateAfterNextAnswer` let through, as written to the node. */
export interface LetThrough {
  readonly method: string;
  readonly nonce: string;
  readonly issuedAtMs: number;
  readonly deliveredMs: number;
}

/** What became of an isolation (see `isolateAfterNextAnswer`). */
export interface Isolation {
  /** Resolves with when the cut began: the answer it waited for had just gone to the controller. */
  readonly began: Promise<number>;
  /** Resolves with the one request let through, once it is written to the node. */
  readonly passed: Promise<LetThrough>;
  /** Resolves when that connection ended: when, and which side closed it (the controller, having given up). */
  readonly abandoned: Promise<{ readonly atMs: number; readonly by: "controller" | "node" }>;
  /** Connections reset as they were accepted, so far. */
  refused(): number;
  /** Answers the node sent on the connection let through, all kept from the controller. */
  swallowed(): number;
}

/** The proxy's side of an isolation: armed until the answer it waits for, then active. */
interface IsolationState {
  readonly after: string;
  readonly pick: (nth: number, acceptedMs: number) => boolean;
  active: boolean;
  accepted: number;
  refused: number;
  swallowed: number;
  taken: boolean;
  began(atMs: number): void;
  passed(r: LetThrough): void;
  abandoned(a: { readonly atMs: number; readonly by: "controller" | "node" }): void;
}

interface PendingHold {
  readonly method: string;
  readonly onArrive: () => void;
  attach(release: () => void, reset: () => void): void;
}

function flipSignature(frame: Buffer): Buffer {
  const msg = JSON.parse(frame.toString("utf8")) as { signed: { sig: string } };
  const sig = msg.signed.sig;
  msg.signed.sig = `${sig[0] === "0" ? "1" : "0"}${sig.slice(1)}`;
  return Buffer.from(JSON.stringify(msg), "utf8");
}

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private drops = 0;
  private holds = 0;
  private cutOnDrop = false;
  private corrupts = 0;
  private readonly requestHolds: PendingHold[] = [];
  corrupted = 0;
  private delayFor: string[] = [];
  private readonly releases: Array<() => void> = [];
  /** Answers kept back by `delayNextAnswer` so far (released or not). */
  delayed = 0;
  /** Place answers dropped or held so far. */
  dropped = 0;
  held = 0;
  /** See the header: told every request written to the node and every answer the node sent. */
  observer: ProxyObserver | null = null;
  /** While set (`holdAllRequests`), every request is kept back here until `release`. */
  private holdAll: { readonly kept: Array<() => void>; count: number } | null = null;
  /** Set by `isolateAfterNextAnswer`. */
  private isolation: IsolationState | null = null;

  private constructor(
    private upstream: string,
    private port: number,
    private readonly tls: ProxyTls | null,
  ) {}

  static async start(upstream: string, opts: { tls?: ProxyTls } = {}): Promise<TcpProxy> {
    const proxy = new TcpProxy(upstream, 0, opts.tls ?? null);
    await proxy.listen();
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Points the proxy at another upstream (a node restarted on another port). */
  retarget(upstream: string): void {
    this.upstream = upstream;
  }

  /** With `thenCut`, the proxy cuts the node off at the moment of the drop (a partition that starts there). */
  dropNextPlaceAnswer(opts: { thenCut?: boolean } = {}): void {
    this.drops++;
    if (opts.thenCut) this.cutOnDrop = true;
  }

  holdNextPlaceAnswer(): void {
    this.holds++;
  }

  /** Flips one character of the signature of the next `place` answer: still a well-formed frame, no longer valid. */
  corruptNextPlaceAnswer(): void {
    this.corrupts++;
  }

  holdNextRequest(method: string): HeldRequest {
    let onArrive: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      onArrive = resolve;
    });
    let actions: { release: () => void; reset: () => void } | null = null;
    let wanted: "release" | "reset" | null = null;
    this.requestHolds.push({
      method,
      onArrive,
      attach: (release, reset) => {
        actions = { release, reset };
        if (wanted) actions[wanted]();
      },
    });
    const act = (what: "release" | "reset") => {
      if (actions) actions[what]();
      else wanted = what;
    };
    return { arrived, release: () => act("release"), reset: () => act("reset") };
  }

  /**
   * Keeps back every request from now on (see the header); `release()` delivers them in order and forwards as usual
   * again. `held()` counts the requests kept so far.
   */
  holdAllRequests(): { release(): void; held(): number } {
    const hold = { kept: [] as Array<() => void>, count: 0 };
    this.holdAll = hold;
    return {
      release: () => {
        if (this.holdAll === hold) this.holdAll = null;
        for (const deliver of hold.kept.splice(0)) deliver();
      },
      held: () => hold.count,
    };
  }

  /**
   * See the header. `pick(nth, acceptedMs)` is asked for each connection accepted once the cut began (`nth` from 0) until
   * it says yes once; the connections it declines are reset unread. The controller cannot tell a reset before the
   * handshake from a refused connect, so their requests provably never left and renew nothing (the lease's rule 4);
   * the one let through may have renewed the lease, and the controller never hears whether it did.
   */
  isolateAfterNextAnswer(after: string, pick: (nth: number, acceptedMs: number) => boolean): Isolation {
    let began: (atMs: number) => void = () => undefined;
    let passed: (r: LetThrough) => void = () => undefined;
    let abandoned: (a: { readonly atMs: number; readonly by: "controller" | "node" }) => void = () => undefined;
    const state: IsolationState = {
      after,
      pick,
      active: false,
      accepted: 0,
      refused: 0,
      swallowed: 0,
      taken: false,
      began: (atMs) => began(atMs),
      passed: (r) => passed(r),
      abandoned: (a) => abandoned(a),
    };
    this.isolation = state;
    return {
      began: new Promise<number>((resolve) => {
        began = resolve;
      }),
      passed: new Promise<LetThrough>((resolve) => {
        passed = resolve;
      }),
      abandoned: new Promise<{ readonly atMs: number; readonly by: "controller" | "node" }>((resolve) => {
        abandoned = resolve;
      }),
      refused: () => state.refused,
      swallowed: () => state.swallowed,
    };
  }

  /** Keeps the next answer to `method` back until `releaseDelayed()` (a slow link for exactly that request). */
  delayNextAnswer(method: string): void {
    this.delayFor.push(method);
  }

  /** Delivers every answer kept back by `delayNextAnswer`, in order. */
  releaseDelayed(): void {
    for (const release of this.releases.splice(0)) release();
  }

  /** Destroys every open connection and keeps listening: a reset both ends see, the next connection works. */
  resetConnections(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /**
   * Forgets every fault armed but not yet struck (drops, holds, corruptions, request holds, answer delays), so a
   * fault armed for one round of a campaign never strikes in the next; answers already kept back are released.
   */
  disarm(): void {
    this.drops = 0;
    this.holds = 0;
    this.corrupts = 0;
    this.cutOnDrop = false;
    this.isolation = null;
    this.delayFor = [];
    for (const hold of this.requestHolds.splice(0))
      hold.attach(
        () => undefined,
        () => undefined,
      );
    this.releaseDelayed();
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async heal(): Promise<void> {
    if (!this.server) await this.listen();
  }

  close(): Promise<void> {
    return this.cut();
  }

  private listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => {
        server.removeListener("error", reject);
        const a = server.address();
        if (a && typeof a === "object") this.port = a.port;
        this.server = server;
        resolve();
      });
    });
  }

  private accept(raw: Socket): void {
    const iso = this.isolation?.active ? this.isolation : null;
    /** This connection is the one an isolation lets through: requests go on, answers stop here. */
    let letThrough = false;
    if (iso) {
      if (iso.taken || !iso.pick(iso.accepted++, Date.now())) {
        iso.refused++;
        raw.resetAndDestroy();
        return;
      }
      iso.taken = true;
      letThrough = true;
    }
    const [host, port] = [
      this.upstream.slice(0, this.upstream.lastIndexOf(":")),
      Number(this.upstream.slice(this.upstream.lastIndexOf(":") + 1)),
    ];
    let client: Socket = raw;
    let node: Socket;
    if (this.tls) {
      const asNode = tlsIdentity(this.tls.node);
      const asController = tlsIdentity(this.tls.controller);
      client = new TLSSocket(raw, {
        isServer: true,
        secureContext: createSecureContext({ ...TLS13, key: asNode.key, cert: asNode.cert }),
        requestCert: true,
        rejectUnauthorized: false,
      });
      node = tlsConnect({
        host,
        port,
        ...TLS13,
        key: asController.key,
        cert: asController.cert,
        rejectUnauthorized: false,
      });
      this.sockets.add(raw);
    } else {
      node = createConnection({ host, port });
    }
    this.sockets.add(client);
    this.sockets.add(node);
    /** Requests of this connection kept by `holdAllRequests`: the node side outlives the client until they are delivered. */
    let heldForAll = 0;
    const end = () => {
      client.destroy();
      node.destroy();
      this.sockets.delete(client);
      this.sockets.delete(node);
    };
    const clientGone = () => {
      if (heldForAll === 0) return end();
      client.destroy();
      this.sockets.delete(client);
    };
    if (letThrough && iso) {
      // Whichever side closes first ends the held connection; the test wants to know it was the controller.
      let told = false;
      const tell = (by: "controller" | "node") => () => {
        if (told) return;
        told = true;
        iso.abandoned({ atMs: Date.now(), by });
      };
      client.once("close", tell("controller"));
      node.once("close", tell("node"));
    }
    client.on("error", clientGone);
    node.on("error", end);
    client.on("close", clientGone);
    node.on("close", end);
    const toNode = (frame: Buffer) => {
      const o = this.observer || letThrough ? observed(frame) : null;
      if (o?.type === "request") {
        const r = { nonce: o.nonce, method: o.method, issuedAtMs: o.issuedAtMs, deliveredMs: Date.now() };
        this.observer?.request(r);
        if (letThrough) iso?.passed(r);
      }
      node.write(encodeFrame(frame));
    };
    // Client → node: frames are decoded so a request can be held before the node sees any byte of it.
    const requests = new FrameDecoder();
    let heldBack: Buffer[] | null = null;
    client.on("data", (chunk: Buffer) => {
      requests.push(chunk);
      try {
        for (let frame = requests.next(); frame; frame = requests.next()) {
          if (heldBack) {
            (heldBack as Buffer[]).push(frame);
            continue;
          }
          const all = this.holdAll;
          if (all && methodOf(frame, "request") !== null) {
            // This request and every frame after it on this connection wait for the release, in order.
            all.count++;
            heldForAll++;
            const kept: Buffer[] = [frame];
            heldBack = kept;
            all.kept.push(() => {
              heldForAll--;
              heldBack = null;
              if (node.destroyed) return;
              for (const b of kept) toNode(b);
              // The sender may be gone: leave the node a moment to answer (the observer sees it), then close.
              if (client.destroyed) setTimeout(end, 3_000).unref();
            });
            continue;
          }
          const method = methodOf(frame, "request");
          const i = method === null ? -1 : this.requestHolds.findIndex((h) => h.method === method);
          const hold = i >= 0 ? this.requestHolds.splice(i, 1)[0] : undefined;
          if (hold) {
            const kept: Buffer[] = [frame];
            heldBack = kept;
            hold.attach(() => {
              heldBack = null;
              for (const b of kept) toNode(b);
            }, end);
            hold.onArrive();
            continue;
          }
          toNode(frame);
        }
      } catch {
        end();
      }
    });
    const decoder = new FrameDecoder();
    let holding = false;
    let delaying: Buffer[] | null = null;
    node.on("data", (chunk: Buffer) => {
      decoder.push(chunk);
      try {
        for (let frame = decoder.next(); frame; frame = decoder.next()) {
          if (this.observer) {
            const o = observed(frame);
            if (o?.type === "response")
              this.observer.answer({
                nonce: o.nonce,
                method: o.method,
                status: o.status,
                code: o.code,
                atMs: Date.now(),
              });
          }
          if (holding) continue;
          if (letThrough) {
            if (iso) iso.swallowed++;
            continue;
          }
          if (delaying !== null) {
            delaying.push(frame);
            continue;
          }
          const method = methodOf(frame, "response");
          const delayAt = method === null ? -1 : this.delayFor.indexOf(method);
          if (delayAt >= 0) {
            this.delayFor.splice(delayAt, 1);
            this.delayed++;
            const kept: Buffer[] = [frame];
            delaying = kept;
            this.releases.push(() => {
              delaying = null;
              for (const f of kept) client.write(encodeFrame(f));
            });
            continue;
          }
          if (methodOf(frame, "response") === "place") {
            if (this.drops > 0) {
              this.drops--;
              this.dropped++;
              end();
              if (this.cutOnDrop) {
                this.cutOnDrop = false;
                void this.cut();
              }
              return;
            }
            if (this.corrupts > 0) {
              this.corrupts--;
              this.corrupted++;
              client.write(encodeFrame(flipSignature(frame)));
              continue;
            }
            if (this.holds > 0) {
              // Never delivered: the controller times out and closes; the answer existed all along.
              this.holds--;
              this.held++;
              holding = true;
              continue;
            }
          }
          client.write(encodeFrame(frame));
          const armed = this.isolation;
          if (armed && !armed.active && methodOf(frame, "response") === armed.after) {
            // From here every new connection is judged by the isolation; this one has carried its answer.
            armed.active = true;
            armed.began(Date.now());
          }
        }
      } catch {
        end();
      }
    });
  }
}
