import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder, MAX_FRAME_BYTES, ProtocolError } from "./frames.js";
import { MemoryConnector } from "./memory.js";

describe("length-prefixed frames (§4.1)", () => {
  it("decodes frames however the bytes are split into chunks", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 8 }),
        fc.nat(50),
        (frames, cut) => {
          const wire = Buffer.concat(frames.map((f) => encodeFrame(f)));
          const d = new FrameDecoder();
          const out: Buffer[] = [];
          const step = (cut % 17) + 1;
          for (let i = 0; i < wire.length; i += step) {
            d.push(wire.subarray(i, i + step));
            for (let f = d.next(); f; f = d.next()) out.push(f);
          }
          expect(out.map((b) => Buffer.from(b).toString("hex"))).toEqual(
            frames.map((f) => Buffer.from(f).toString("hex")),
          );
        },
      ),
    );
  });

  it("rejects a zero length and a length above 16 MiB before reading the body", () => {
    for (const n of [0, MAX_FRAME_BYTES + 1]) {
      const d = new FrameDecoder();
      const head = Buffer.alloc(4);
      head.writeUInt32BE(n, 0);
      d.push(head);
      expect(() => d.next()).toThrow(ProtocolError);
    }
    expect(() => encodeFrame(new Uint8Array(0))).toThrow(ProtocolError);
  });

  it("accepts a frame of exactly 16 MiB", () => {
    const d = new FrameDecoder();
    d.push(encodeFrame(new Uint8Array(MAX_FRAME_BYTES)));
    expect(d.next()?.length).toBe(MAX_FRAME_BYTES);
  });

  it("carries frames between a memory connector's ends and refuses unknown services", async () => {
    const c = new MemoryConnector();
    const addr = c.register("echo", (s) => {
      void s.recv().then((f) => s.send(f));
    });
    const s = await c.connect(addr);
    await s.send(new Uint8Array([1, 2, 3]));
    expect([...(await s.recv())]).toEqual([1, 2, 3]);
    await expect(c.connect("mem://nobody")).rejects.toThrow();
  });
});
