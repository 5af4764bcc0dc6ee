import { createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { StreamClosed } from "./frames.js";
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
});
