/**
 * A connection that stops talking holds a real daemon's slot only for its deadline (spec/mesh.md §4.3; issue 19 moved
 * these deadlines from AbortSignal.timeout to the stream's own timer, src/mesh/transport/recv-limit.ts): an
 * authenticated TLS connection that sends no first frame is closed after `first_frame_ms`, one that goes quiet after
 * an answer after `idle_ms`, and the daemon goes on serving. Judged from outside: a real `berth node serve`, a real TLS
 * client, the wall clock.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { encodeMessageFrame, parseMessageFrame } from "../../src/core/protocol/messages.js";
import { signRequest } from "../../src/core/protocol/sign.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { StreamClosed } from "../../src/mesh/transport/frames.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { ALLOW_ALL, cleanup, NodeProcess, requireBuild } from "../mesh/harness.js";

afterAll(cleanup);

// Far apart, so which deadline closed a connection shows whatever a loaded machine adds to the measurement.
const FIRST_FRAME_MS = 400;
const IDLE_MS = 6_000;

/**
 * How long from `started` until the node closes the stream, waiting at most 30 s (a frame instead fails the test).
 * `started` is taken before the node's deadline can start (before the connect, before the request), so the time
 * measured is never shorter than the deadline, however late this process sees the close.
 */
async function closedAfter(started: number, recv: () => Promise<Uint8Array>): Promise<number> {
  await expect(recv()).rejects.toBeInstanceOf(StreamClosed);
  return Date.now() - started;
}

describe("a real node daemon and connections that stop talking", () => {
  it("closes a silent authenticated connection after first_frame_ms, a quiet one after idle_ms, and serves the next", async () => {
    requireBuild();
    const controller = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [controller.publicKey],
      signers: [generateSigningKey().publicKey],
      permits: ALLOW_ALL,
      limits: { first_frame_ms: FIRST_FRAME_MS, idle_ms: IDLE_MS },
    });
    const connector = new TlsConnector({ identity: controller });
    const target = node.target();
    const status = () =>
      signRequest(controller, {
        method: "status",
        target: target.nodeId,
        targetBoot: target.bootId,
        nonce: randomBytes(16).toString("hex"),
        issuedAtMs: Date.now(),
        decisionId: null,
        body: {},
      }).signed;

    // Handshake done (the key is authorised), then nothing: closed by first_frame_ms, long before idle_ms.
    const silentFrom = Date.now();
    const silent = await connector.connect(node.address);
    const silentFor = await closedAfter(silentFrom, () => silent.recv(30_000));
    expect(silentFor).toBeGreaterThanOrEqual(FIRST_FRAME_MS - 50);
    expect(silentFor).toBeLessThan(IDLE_MS - 1_000);

    // One answered request, then quiet: the idle deadline, not the first-frame one, ends it.
    const quiet = await connector.connect(node.address);
    const quietFrom = Date.now();
    await quiet.send(encodeMessageFrame({ type: "request", signed: status() }));
    const answer = parseMessageFrame(await quiet.recv(30_000));
    expect(answer.ok && answer.value.type === "response").toBe(true);
    const quietFor = await closedAfter(quietFrom, () => quiet.recv(30_000));
    expect(quietFor).toBeGreaterThanOrEqual(IDLE_MS - 50);

    // The daemon still answers a new connection at once.
    const next = await connector.connect(node.address);
    await next.send(encodeMessageFrame({ type: "request", signed: status() }));
    const again = parseMessageFrame(await next.recv(30_000));
    expect(again.ok && again.value.type === "response").toBe(true);
    next.close();
  });
});
