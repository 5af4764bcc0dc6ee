/**
 * Issue 12, the hostile tier for the node's framing: the frame decoder fed arbitrary bytes in arbitrary chunks only
 * ever yields frames or raises ProtocolError, never holds more than one frame's worth (cap + 4-byte prefix), and
 * the one-time allowance for a fetched data frame is used once; a real listener cut by such bytes rejects `recv`
 * only with the protocol's own errors; the message-frame parser never throws.
 */
import fc from "fast-check";
import { createConnection } from "node:net";
import { describe, expect, it } from "vitest";
import { parseMessageFrame } from "../../src/core/protocol/messages.js";
import {
  encodeFrame,
  FrameDecoder,
  ProtocolError,
  type SocketFrameStream,
  StreamClosed,
} from "../../src/mesh/transport/frames.js";
import { listenFrames } from "../../src/mesh/transport/tcp.js";
import { waitFor } from "../mesh/harness.js";

const CAP = 64;

/** Feeds every chunk, draining after each as the socket stream does; returns the frames or the first error. */
function feed(
  decoder: FrameDecoder,
  chunks: readonly Uint8Array[],
  onDrained: () => void = () => undefined,
): { frames: Buffer[]; error?: unknown } {
  const frames: Buffer[] = [];
  try {
    for (const chunk of chunks) {
      decoder.push(Buffer.from(chunk));
      for (let f = decoder.next(); f; f = decoder.next()) frames.push(Buffer.from(f));
      onDrained();
    }
  } catch (error) {
    return { frames, error };
  }
  return { frames };
}

describe("the frame decoder under arbitrary input", () => {
  it("raises nothing but ProtocolError and never holds more than a frame's worth, whatever the bytes and chunking", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 30 }), (chunks) => {
        const decoder = new FrameDecoder(CAP);
        const r = feed(decoder, chunks, () => expect(decoder.pending).toBeLessThan(4 + CAP));
        if (r.error !== undefined) expect(r.error).toBeInstanceOf(ProtocolError);
        for (const f of r.frames) expect(f.length >= 1 && f.length <= CAP).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("gives back exactly the frames that were sent, wherever the byte stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: CAP }), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (frames, cuts) => {
          const wire = Buffer.concat(frames.map((f) => encodeFrame(f)));
          const points = [...new Set(cuts.map((c) => c % (wire.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points, wire.length]
            .slice(1)
            .map((end, i, all) => wire.subarray(i === 0 ? 0 : (all[i - 1] as number), end));
          const r = feed(new FrameDecoder(CAP), [wire.subarray(0, 0), ...chunks]);
          expect(r.error).toBeUndefined();
          expect(r.frames.map((f) => f.toString("hex"))).toEqual(frames.map((f) => Buffer.from(f).toString("hex")));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("refuses a length above the cap at its prefix, before any of the body arrives", () => {
    const decoder = new FrameDecoder(CAP);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(16 * 1024 * 1024, 0);
    expect(feed(decoder, [prefix]).error).toBeInstanceOf(ProtocolError);
  });

  it("lets one frame above the cap through only when allowed, and only once", () => {
    fc.assert(
      fc.property(fc.integer({ min: CAP + 1, max: 4 * CAP }), (size) => {
        const big = encodeFrame(new Uint8Array(size).fill(7));
        expect(feed(new FrameDecoder(CAP), [big]).error).toBeInstanceOf(ProtocolError);
        const allowed = new FrameDecoder(CAP);
        allowed.allow(size);
        const small = encodeFrame(new Uint8Array(3));
        const r = feed(allowed, [small, big, big]);
        expect(r.frames.map((f) => f.length)).toEqual([3, size]);
        expect(r.error).toBeInstanceOf(ProtocolError);
      }),
      { numRuns: 100 },
    );
  });
});

describe("a real listener fed arbitrary bytes", () => {
  it("rejects recv only with ProtocolError or StreamClosed, and closes the connection", async () => {
    const errors: unknown[] = [];
    let connections = 0;
    const { server, address } = await listenFrames(
      "127.0.0.1:0",
      (stream: SocketFrameStream) => {
        void (async () => {
          try {
            for (;;) await stream.recv(AbortSignal.timeout(5000));
          } catch (error) {
            errors.push(error);
            stream.close();
          }
        })();
      },
      {
        limits: {
          maxConnections: 64,
          maxUnauthenticated: 64,
          maxUnauthenticatedPerAddress: 64,
          graceMs: 0,
          firstBytesMs: 5000,
          maxFrameBytes: CAP,
        },
      },
    );
    const [host, port] = [address.split(":")[0] as string, Number(address.split(":")[1])];
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 8 }),
          async (chunks) => {
            connections++;
            await new Promise<void>((resolve) => {
              const s = createConnection({ host, port }, () => {
                for (const c of chunks) s.write(c);
                s.end();
              });
              s.on("error", () => undefined);
              s.on("data", () => undefined);
              s.on("close", () => resolve());
            });
          },
        ),
        { numRuns: 60 },
      );
      await waitFor(() => errors.length >= connections, "every connection's recv to end", 30_000);
      for (const e of errors) expect(e instanceof ProtocolError || e instanceof StreamClosed, String(e)).toBe(true);
    } finally {
      server.close();
    }
  }, 60_000);
});

describe("the message-frame parser under arbitrary bytes", () => {
  it("never throws: anything that is not a known message frame is a refusal value", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.json().map((j) => new TextEncoder().encode(j)),
        ),
        (bytes) => {
          const r = parseMessageFrame(bytes);
          expect(typeof r.ok).toBe("boolean");
        },
      ),
      { numRuns: 2000 },
    );
  });
});
