/**
 * Issue 17, the transport: frames inside TLS 1.3 with certificates bound to the Ed25519 identity keys. A byte-logging
 * TCP proxy between the two ends sees neither a planted secret nor a 300 KB payload in clear; a node key other than
 * the pinned one is refused before anything is sent; an unauthorised controller key and a plaintext client are cut.
 */
import { randomBytes } from "node:crypto";
import { createConnection } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { encodeFrame, type SocketFrameStream } from "../../src/mesh/transport/frames.js";
import { listenFrames, parseAddr } from "../../src/mesh/transport/tcp.js";
import { listenTls, PeerKeyMismatch, TlsConnector } from "../../src/mesh/transport/tls.js";
import { waitFor } from "./harness.js";
import { tap } from "./transport-tap.js";

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A TLS echo listener for `node`, serving the given controller keys. */
async function echoNode(node = generateSigningKey(), controllers: string[] = []) {
  const refused: Array<string | null> = [];
  const tls = await listenTls({
    identity: node,
    authorised: () => new Set(controllers),
    onRefused: (k) => refused.push(k),
  });
  const limits = {
    maxConnections: 64,
    maxUnauthenticated: 32,
    maxUnauthenticatedPerAddress: 32,
    graceMs: 0,
    firstBytesMs: 3000,
    maxFrameBytes: 1024 * 1024,
  };
  const { server, address } = await listenFrames(
    "127.0.0.1:0",
    (s: SocketFrameStream) => {
      void (async () => {
        try {
          for (;;) await s.send(await s.recv());
        } catch {
          s.close();
        }
      })();
    },
    { limits, tls },
  );
  closers.push(() => server.close());
  return { node, address, refused };
}

describe("the TLS transport bound to identity keys", () => {
  it("carries a 300 KB payload and a planted secret, and a tap on the wire sees neither", async () => {
    const controller = generateSigningKey();
    const { node, address } = await echoNode(undefined, [controller.publicKey]);
    const proxy = await tap(address);
    closers.push(proxy.close);
    const connector = new TlsConnector({ identity: controller, expectedKey: () => node.publicKey });
    const stream = await connector.connect(proxy.address);
    expect(stream.peerKey).toBe(node.publicKey);
    const secret = `PLANTED-${randomBytes(8).toString("hex")}`;
    const big = Buffer.concat([Buffer.from(secret), randomBytes(300_000), Buffer.from(secret)]);
    await stream.send(Buffer.from(JSON.stringify({ env: { API_KEY: secret } })));
    expect(Buffer.from(await stream.recv()).toString()).toContain(secret);
    await stream.send(big);
    expect(Buffer.from(await stream.recv()).equals(big)).toBe(true);
    stream.close();
    const wire = proxy.seen();
    expect(wire.length).toBeGreaterThan(300_000);
    expect(wire.includes(Buffer.from(secret))).toBe(false);
    expect(wire.includes(big.subarray(1000, 1064))).toBe(false);
  });

  it("refuses a node whose certificate key is not the pinned one, before sending anything", async () => {
    const controller = generateSigningKey();
    const { address } = await echoNode(undefined, [controller.publicKey]);
    const pinned = generateSigningKey().publicKey;
    const connector = new TlsConnector({ identity: controller, expectedKey: () => pinned });
    await expect(connector.connect(address)).rejects.toBeInstanceOf(PeerKeyMismatch);
  });

  it("reads each peer's own key when connections alternate between nodes and controllers (a key read before never answers for another certificate)", async () => {
    const controller = generateSigningKey();
    const stranger = generateSigningKey();
    const a = await echoNode(undefined, [controller.publicKey]);
    const b = await echoNode(undefined, [controller.publicKey]);
    const connector = new TlsConnector({ identity: controller });
    const strangers = new TlsConnector({ identity: stranger });
    for (let round = 0; round < 2; round++) {
      for (const { node, address } of [a, b]) {
        const stream = await connector.connect(address);
        expect(stream.peerKey).toBe(node.publicKey);
        await stream.send(new Uint8Array([round]));
        expect([...(await stream.recv())]).toEqual([round]);
        stream.close();
      }
      const cut = await strangers.connect(a.address).catch((e: Error) => e);
      if (!(cut instanceof Error)) {
        expect(cut.peerKey).toBe(a.node.publicKey);
        await cut.send(new Uint8Array([1])).catch(() => undefined);
        await expect(cut.recv(AbortSignal.timeout(5000))).rejects.toThrow();
      }
      await waitFor(
        () => a.refused.filter((k) => k === stranger.publicKey).length === round + 1,
        "the node to refuse the stranger again",
      );
    }
    expect(a.refused.every((k) => k === stranger.publicKey)).toBe(true);
    expect(b.refused).toEqual([]);
  });

  it("cuts a controller whose key the node does not authorise, and a plaintext client", async () => {
    const { node, address, refused } = await echoNode(undefined, [generateSigningKey().publicKey]);
    const stranger = generateSigningKey();
    const connector = new TlsConnector({ identity: stranger, expectedKey: () => node.publicKey });
    const stream = await connector.connect(address).catch((e: Error) => e);
    if (!(stream instanceof Error)) {
      // TLS 1.3 finishes the client side before the server has judged the client's certificate: the cut follows.
      await stream.send(new Uint8Array([1])).catch(() => undefined);
      await expect(stream.recv(AbortSignal.timeout(5000))).rejects.toThrow();
    }
    await waitFor(() => refused.includes(stranger.publicKey), "the node to record the refused key");
    const { host, port } = parseAddr(address);
    const plain = createConnection({ host, port });
    plain.on("error", () => undefined);
    plain.write(encodeFrame(Buffer.from('{"type":"request"}')));
    await new Promise((r) => plain.once("close", r));
  });
});
