/**
 * A byte tap for the channel tests (issue 17): a TCP proxy that forwards bytes both ways without reading them, keeps
 * every byte it forwarded, and can be pointed at another upstream (a man in the middle swapping in another node's
 * endpoint). It holds no key: over TLS it sees ciphertext only, which is what the tests check.
 *
 * Issue 20's fault tests put one in front of PostgreSQL for each `berth serve` (`record: false`: nothing kept) and
 * `partition()` it: every byte in flight and every new connection is held (a network that stops delivering, not one
 * that resets: the client's queries hang, as across a real partition) until `heal()` delivers what was held.
 */
import { createConnection, createServer, type Socket } from "node:net";
import { parseAddr } from "../../src/mesh/transport/tcp.js";

export interface ChannelTap {
  readonly address: string;
  /** Every byte forwarded so far, both directions. */
  seen(): Buffer;
  /** Connections accepted so far. */
  connections(): number;
  /** New connections go to `upstream` from now on; the open ones are cut (a swap breaks what ran through it). */
  retarget(upstream: string): void;
  /** Holds every byte both ways, on open connections and new ones, until `heal()`. */
  partition(): void;
  /** Delivers what was held and forwards again. */
  heal(): void;
  close(): void;
}

export async function channelTap(upstream: string, options: { record?: boolean } = {}): Promise<ChannelTap> {
  const record = options.record ?? true;
  let target = upstream;
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;
  let partitioned = false;
  const server = createServer((client) => {
    accepted++;
    const { host, port } = parseAddr(target);
    const node = createConnection({ host, port });
    sockets.add(client).add(node);
    // A paused socket reads nothing more: the bytes wait in the kernel, the sender's writes back up.
    if (partitioned) for (const s of [client, node]) s.pause();
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (c: Buffer) => {
        if (record) chunks.push(c);
        to.write(c);
      });
    forward(client, node);
    forward(node, client);
    const both = () => {
      client.destroy();
      node.destroy();
      sockets.delete(client);
      sockets.delete(node);
    };
    for (const s of [client, node]) s.on("error", () => undefined).on("close", both);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    seen: () => Buffer.concat(chunks),
    connections: () => accepted,
    retarget: (next) => {
      target = next;
      for (const s of sockets) s.destroy();
    },
    partition: () => {
      partitioned = true;
      for (const s of sockets) s.pause();
    },
    heal: () => {
      partitioned = false;
      for (const s of sockets) s.resume();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
