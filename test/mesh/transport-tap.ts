/** A passive tap for the transport tests: a TCP proxy that forwards bytes both ways and keeps every byte it saw. */
import { createConnection, createServer, type Socket } from "node:net";
import { parseAddr } from "../../src/mesh/transport/tcp.js";

export interface Tap {
  readonly address: string;
  seen(): Buffer;
  close(): void;
}

export async function tap(upstream: string): Promise<Tap> {
  const { host, port } = parseAddr(upstream);
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const node = createConnection({ host, port });
    sockets.add(client).add(node);
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (c: Buffer) => {
        chunks.push(c);
        to.write(c);
      });
    forward(client, node);
    forward(node, client);
    const both = () => {
      client.destroy();
      node.destroy();
    };
    for (const s of [client, node]) s.on("error", () => undefined).on("close", both);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    seen: () => Buffer.concat(chunks),
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
