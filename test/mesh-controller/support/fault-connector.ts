/**
 * A fault-injecting connector (spec/mesh.md §4.10) around any other connector: it decodes the frames passing from node
 * to controller, can drop the answer to a `place` after the node carried it out (closing the stream), can cut an
 * address off (later connects fail) and heal it, and can hold an answer back until after the caller's timeout.
 */
import {
  type Connector,
  FrameTimeout,
  type FrameStream,
  type RecvLimit,
  StreamClosed,
} from "../../../src/mesh/transport/frames.js";

function answeredMethod(frame: Uint8Array): string | null {
  try {
    const msg = JSON.parse(Buffer.from(frame).toString("utf8")) as { type?: string; signed?: { payload?: string } };
    if (msg.type !== "response" || typeof msg.signed?.payload !== "string") return null;
    const payload = JSON.parse(msg.signed.payload) as { method?: unknown };
    return typeof payload.method === "string" ? payload.method : null;
  } catch {
    return null;
  }
}

export class FaultConnector implements Connector {
  private readonly cuts = new Set<string>();
  private drops = new Map<string, { count: number; thenCut: boolean }>();
  private holds = new Set<string>();
  /** How many place answers were dropped so far. */
  dropped = 0;

  constructor(private readonly inner: Connector) {}

  /** Drops the next `place` answer from `addr` and closes the stream; with `thenCut`, `addr` is cut off from then on. */
  dropNextPlaceAnswer(addr: string, thenCut = false): void {
    this.drops.set(addr, { count: 1, thenCut });
  }

  /** Holds the next `place` answer from `addr` back until the caller gives up (its timeout aborts the receive). */
  holdNextPlaceAnswer(addr: string): void {
    this.holds.add(addr);
  }

  cut(addr: string): void {
    this.cuts.add(addr);
  }

  private readonly hung = new Set<string>();
  /** Connects to a hung address that ended (by their caller's timeout), and when. */
  readonly hungEnded: Array<{ readonly addr: string; readonly at: number }> = [];

  /** Connects to `addr` wait, answered by nothing, until their caller gives up (a hung host, a dropping firewall). */
  hang(addr: string): void {
    this.cuts.delete(addr);
    this.hung.add(addr);
  }

  heal(addr: string): void {
    this.cuts.delete(addr);
    this.hung.delete(addr);
  }

  async connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    if (this.cuts.has(addr)) throw new StreamClosed(`connection to ${addr} refused (cut by the test)`);
    if (this.hung.has(addr)) {
      if (!signal) throw new Error(`a connect to hung ${addr} without a deadline would wait for ever`);
      await new Promise<void>((resolve) =>
        signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      this.hungEnded.push({ addr, at: Date.now() });
      throw new StreamClosed(`no answer from ${addr} (hung by the test)`);
    }
    const stream = await this.inner.connect(addr, signal);
    const self = this;
    return {
      remote: stream.remote,
      send: (frame) => {
        if (self.cuts.has(addr)) return Promise.reject(new StreamClosed("cut by the test"));
        return stream.send(frame);
      },
      close: () => stream.close(),
      async recv(sig?: RecvLimit): Promise<Uint8Array> {
        const asked = Date.now();
        const frame = await stream.recv(sig);
        if (answeredMethod(frame) !== "place") return frame;
        const drop = self.drops.get(addr);
        if (drop && drop.count > 0) {
          drop.count--;
          self.dropped++;
          if (drop.thenCut) self.cuts.add(addr);
          stream.close();
          throw new StreamClosed("the place answer was dropped by the test");
        }
        if (self.holds.delete(addr)) {
          // The answer exists, but it arrives only after the caller's deadline: it is never delivered.
          await new Promise((_resolve, reject) => {
            if (typeof sig === "number") {
              setTimeout(() => reject(new FrameTimeout(sig)), Math.max(0, asked + sig - Date.now()));
              return;
            }
            if (sig?.aborted) reject(sig.reason);
            sig?.addEventListener("abort", () => reject(sig.reason), { once: true });
          });
        }
        return frame;
      },
    };
  }
}
