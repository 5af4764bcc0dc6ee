import { createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FrameTimeout, type FrameStream } from "./frames.js";
import { memoryPair } from "./memory.js";
import { TcpConnector } from "./tcp.js";

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A TCP stream to a loopback peer, and a way to make the peer send one frame. */
async function tcpPair(): Promise<{ stream: FrameStream; sendFromPeer: (bytes: Uint8Array) => void }> {
  const peers: Socket[] = [];
  const server = createServer((s) => peers.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const stream = await new TcpConnector(2_000).connect(`127.0.0.1:${(server.address() as { port: number }).port}`);
  for (let i = 0; i < 100 && peers.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  closers.push(() => {
    stream.close();
    for (const p of peers) p.destroy();
    server.close();
  });
  return {
    stream,
    sendFromPeer: (bytes) => {
      const head = Buffer.alloc(4);
      head.writeUInt32BE(bytes.length, 0);
      peers[0]?.write(Buffer.concat([head, bytes]));
    },
  };
}

const kinds: Array<[string, () => Promise<{ stream: FrameStream; sendFromPeer: (bytes: Uint8Array) => void }>]> = [
  ["a TCP stream", tcpPair],
  [
    "an in-memory stream",
    async () => {
      const [a, b] = memoryPair("limit");
      return { stream: a, sendFromPeer: (bytes) => void b.send(bytes) };
    },
  ],
];

describe.each(kinds)("a wait for the next frame on %s", (_kind, open) => {
  it("given milliseconds, rejects with FrameTimeout once they pass", async () => {
    const { stream } = await open();
    const started = Date.now();
    await expect(stream.recv(40)).rejects.toBeInstanceOf(FrameTimeout);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
  });

  it("never loses a frame that arrives after an earlier wait gave up: the next recv gets it", async () => {
    const { stream, sendFromPeer } = await open();
    await expect(stream.recv(20)).rejects.toBeInstanceOf(FrameTimeout);
    sendFromPeer(new TextEncoder().encode("late"));
    expect(new TextDecoder().decode(await stream.recv(2_000))).toBe("late");
  });

  it("given a signal, rejects with its reason, and at once when it is already aborted", async () => {
    const { stream } = await open();
    const aborting = new AbortController();
    const waiting = stream.recv(aborting.signal);
    aborting.abort(new Error("given up by the caller"));
    await expect(waiting).rejects.toThrow("given up by the caller");
    await expect(stream.recv(AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
  });

  it("a frame that comes in time resolves the wait", async () => {
    const { stream, sendFromPeer } = await open();
    const waiting = stream.recv(2_000);
    sendFromPeer(new TextEncoder().encode("on time"));
    expect(new TextDecoder().decode(await waiting)).toBe("on time");
  });

  it("a limit of zero or less rejects without waiting", async () => {
    const { stream } = await open();
    await expect(stream.recv(0)).rejects.toBeInstanceOf(FrameTimeout);
    await expect(stream.recv(-5)).rejects.toBeInstanceOf(FrameTimeout);
  });
});

describe("a wait for the next frame bounded in milliseconds", () => {
  it("holds one timer while it waits and none once the frame came (nothing lingers until the limit, unlike AbortSignal.timeout)", async () => {
    vi.useFakeTimers();
    try {
      const [a, b] = memoryPair("timers");
      const waiting = a.recv(60_000);
      expect(vi.getTimerCount()).toBe(1);
      await b.send(new TextEncoder().encode("x"));
      await waiting;
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
