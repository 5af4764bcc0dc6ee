/**
 * The fault-injection seam (spec/mesh.md §4.10, §18.1): wraps any Connector and decodes the frames that pass, so a test
 * can drop the signed answer to a `place` after the node carried it out (closing the stream, as a lost answer
 * looks to the controller), and cut an address off entirely (later connects fail) until it is healed.
 */
import { parseMessageFrame } from "../../core/protocol/messages.js";
import { type Connector, type FrameStream, type RecvLimit, StreamClosed } from "./frames.js";

function answerMethod(frame: Uint8Array): string | null {
  const parsed = parseMessageFrame(frame);
  if (!parsed.ok || parsed.value.type !== "response") return null;
  try {
    const payload = JSON.parse(parsed.value.signed.payload) as { method?: unknown };
    return typeof payload.method === "string" ? payload.method : null;
  } catch {
    return null;
  }
}

export class FaultyConnector implements Connector {
  private readonly drops = new Map<string, { method: string; count: number; thenCut: boolean }>();
  private readonly cutAddrs = new Set<string>();
  private readonly open = new Map<string, Set<FrameStream>>();
  /** Answers dropped so far, by address. */
  readonly dropped: Array<{ addr: string; method: string }> = [];

  constructor(private readonly inner: Connector) {}

  /** Drop the next `count` answers to `method` from `addr`; with `thenCut`, cut the address at the drop. */
  dropNextAnswer(addr: string, method = "place", opts: { count?: number; thenCut?: boolean } = {}): void {
    this.drops.set(addr, { method, count: opts.count ?? 1, thenCut: opts.thenCut ?? false });
  }

  cut(addr: string): void {
    this.cutAddrs.add(addr);
    for (const s of this.open.get(addr) ?? []) s.close();
  }

  heal(addr: string): void {
    this.cutAddrs.delete(addr);
  }

  isCut(addr: string): boolean {
    return this.cutAddrs.has(addr);
  }

  async connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    if (this.cutAddrs.has(addr)) throw new StreamClosed(`${addr} is cut off`);
    const inner = await this.inner.connect(addr, signal);
    const streams = this.open.get(addr) ?? new Set<FrameStream>();
    this.open.set(addr, streams);
    streams.add(inner);
    const self = this;
    return {
      remote: inner.remote,
      ...(inner.peerKey !== undefined ? { peerKey: inner.peerKey } : {}),
      send: (frame) =>
        self.cutAddrs.has(addr) ? Promise.reject(new StreamClosed(`${addr} is cut off`)) : inner.send(frame),
      async recv(sig?: RecvLimit) {
        const frame = await inner.recv(sig);
        const drop = self.drops.get(addr);
        if (drop && drop.count > 0 && answerMethod(frame) === drop.method) {
          drop.count--;
          self.dropped.push({ addr, method: drop.method });
          if (drop.thenCut) self.cut(addr);
          inner.close();
          throw new StreamClosed("answer dropped by the fault injector");
        }
        return frame;
      },
      close() {
        streams.delete(inner);
        inner.close();
      },
    };
  }
}
