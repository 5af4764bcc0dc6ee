import { connect, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FrameDecoder, SocketFrameStream, StreamClosed } from "./frames.js";
import { TcpConnector } from "./tcp.js";

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

describe("a TCP connection to a node", () => {
  it("turns a reset after the connect into a closed stream, not an uncaught exception that ends the process", async () => {
    const peers: Socket[] = [];
    const server = createServer((s) => peers.push(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    closers.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on("uncaughtException", onUncaught);
    closers.push(() => process.off("uncaughtException", onUncaught));

    const stream = await new TcpConnector(2_000).connect(`127.0.0.1:${port}`);
    const next = stream.recv();
    for (let i = 0; i < 50 && peers.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    peers[0]?.resetAndDestroy(); // an RST, as a node killed mid-describe sends

    await expect(next).rejects.toBeInstanceOf(StreamClosed);
    await new Promise((r) => setTimeout(r, 50));
    expect(uncaught).toEqual([]);
    stream.close();
  });

  it("sends the frames of one tick in one write, so a fetch's answer and its data frame wake the node once (issue 19)", async () => {
    const received: Buffer[] = [];
    const server = createServer((s) => s.on("data", (c: Buffer) => received.push(c)));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    closers.push(() => server.close());
    const socket = connect((server.address() as { port: number }).port, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    const stream = new SocketFrameStream(socket);
    closers.push(() => stream.close());
    // What reaches the kernel: one `_writev` of both frames, never a `_write` per frame.
    const writes: string[] = [];
    const internals = socket as unknown as Record<"_write" | "_writev", (...args: unknown[]) => void>;
    for (const name of ["_write", "_writev"] as const) {
      const original = internals[name].bind(socket);
      internals[name] = (...args: unknown[]) => {
        writes.push(name);
        original(...args);
      };
    }

    await Promise.all([stream.send(Buffer.from("header")), stream.send(Buffer.from("data"))]);
    expect(writes).toEqual(["_writev"]);
    for (let i = 0; i < 50 && Buffer.concat(received).length < 18; i++) await new Promise((r) => setTimeout(r, 10));
    const decoder = new FrameDecoder();
    decoder.push(Buffer.concat(received));
    expect([decoder.next()?.toString(), decoder.next()?.toString()]).toEqual(["header", "data"]);
  });
});
