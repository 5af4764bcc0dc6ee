import { describe, expect, it } from "vitest";
import { nodeIdOf } from "../../core/crypto/ed25519.js";
import { CLOCK_SKEW_BOUND_MS } from "../../core/mesh/lease.js";
import { encodeMessageFrame, parseMessageFrame, type RequestPayload } from "../../core/protocol/messages.js";
import { signResponse } from "../../core/protocol/sign.js";
import { generateSigningKey } from "../../keys/key-file.js";
import { type Connector, type FrameStream, StreamClosed } from "../transport/frames.js";
import { FrameTimeout } from "../transport/recv-limit.js";
import { NodeClient } from "./node-client.js";

const NODE = "0123456789abcdef0123456789abcdef";
const target = { addr: "held:1", nodeId: NODE, key: null, bootId: "boot" };

/** A connection that takes the request at once and holds the answer until `answer()`: then it closes (no answer). */
function heldConnection(): { connector: Connector; sent: Promise<void>; answer: () => void } {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let markSent!: () => void;
  const sent = new Promise<void>((resolve) => {
    markSent = resolve;
  });
  const stream: FrameStream = {
    remote: "held:1",
    send: async () => markSent(),
    recv: async () => {
      await answered;
      throw new StreamClosed("connection closed");
    },
    close: () => undefined,
  };
  return { connector: { connect: async () => stream }, sent, answer };
}

describe("the node client's request stamp (issue 16's onSend)", () => {
  it("is settled as reaching the node once the request is handed to the connection, before any answer (issue 19)", async () => {
    const held = heldConnection();
    const settled: boolean[] = [];
    const client = new NodeClient({
      key: generateSigningKey(),
      connector: held.connector,
      onSend: async () => async (mayHaveArrived) => void settled.push(mayHaveArrived),
    });
    const call = client.call(target, "place", { package_id: "p" }, { timeoutMs: 5_000 });
    await held.sent;
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled, "settled while the node still holds its answer").toEqual([true]);
    held.answer();
    expect(await call).toMatchObject({ kind: "no_answer", sent: true });
    expect(settled, "settled once").toEqual([true]);
  });

  it("a failed settle still fails the call, after its exchange has ended", async () => {
    const held = heldConnection();
    const client = new NodeClient({
      key: generateSigningKey(),
      connector: held.connector,
      onSend: async () => async () => {
        throw new Error("store closed");
      },
    });
    const call = client.call(target, "place", { package_id: "p" }, { timeoutMs: 5_000 });
    await held.sent;
    held.answer();
    await expect(call).rejects.toThrow("store closed");
  });

  it("a request that never left is settled as unsent", async () => {
    const settled: boolean[] = [];
    const client = new NodeClient({
      key: generateSigningKey(),
      connector: {
        connect: async () => {
          throw new Error("connection refused");
        },
      },
      onSend: async () => async (mayHaveArrived) => void settled.push(mayHaveArrived),
    });
    expect(await client.call(target, "place", { package_id: "p" }, { timeoutMs: 5_000 })).toMatchObject({
      kind: "unreachable",
    });
    expect(settled).toEqual([false]);
  });
});

describe("a read on a warm connection (issue 37, F5)", () => {
  /** Connections from a pool: the first one warm (`reused`); `silent` ones take the request and never answer. */
  function pool(first: "silent" | "closed"): { connector: Connector; connects: () => number } {
    let connects = 0;
    const stream = (reused: boolean, behaviour: "silent" | "closed"): FrameStream => ({
      remote: "held:1",
      reused,
      send: async () => undefined,
      recv: async (limit) => {
        if (behaviour === "closed") throw new StreamClosed("connection closed");
        // Never answers: waits out the limit it is given (and a little more), as a frozen node behind a live socket.
        await new Promise((resolve) => setTimeout(resolve, (typeof limit === "number" ? limit : 0) + 10));
        throw new FrameTimeout(typeof limit === "number" ? limit : 0);
      },
      close: () => undefined,
    });
    return {
      connector: {
        connect: async () => {
          connects++;
          return connects === 1 ? stream(true, first) : stream(false, "silent");
        },
      },
      connects: () => connects,
    };
  }

  it("is not asked again on a fresh connection when the warm one used up the call's timeout: a silent node costs one timeout, not two", async () => {
    const p = pool("silent");
    const client = new NodeClient({ key: generateSigningKey(), connector: p.connector });
    expect(
      await client.call(target, "status", { instance_id: null, include_departed: false }, { timeoutMs: 200 }),
    ).toMatchObject({ kind: "no_answer" });
    expect(p.connects()).toBe(1);
  });

  it("is asked again on a fresh connection when the warm one had been closed by the node (nothing was answered)", async () => {
    const p = pool("closed");
    const client = new NodeClient({ key: generateSigningKey(), connector: p.connector });
    expect(
      await client.call(target, "status", { instance_id: null, include_departed: false }, { timeoutMs: 200 }),
    ).toMatchObject({ kind: "no_answer" });
    expect(p.connects()).toBe(2);
  });
});

describe("a held node (issue 37, F5)", () => {
  it("gets no request whose stamp was refused: the call ends unreachable and held, and no connection is opened", async () => {
    let connects = 0;
    const client = new NodeClient({
      key: generateSigningKey(),
      connector: {
        connect: async () => {
          connects++;
          throw new Error("must not connect");
        },
      },
      onSend: async () => ({ held: "the node has answered nothing for half its lease" }),
    });
    expect(await client.call(target, "status", { instance_id: null, include_departed: false })).toEqual({
      kind: "unreachable",
      reason: "not sent: the node has answered nothing for half its lease",
      held: true,
    });
    expect(connects).toBe(0);
  });

  it("is probed with a describe that expired before it left, not stamped, whose signed refusal comes back as the node's answer", async () => {
    const node = generateSigningKey();
    const now = 1_700_000_000_000;
    let sent: RequestPayload | null = null;
    let stamped = 0;
    const stream: FrameStream = {
      remote: "probe:1",
      send: async (bytes) => {
        const frame = parseMessageFrame(bytes);
        if (frame.ok && frame.value.type === "request") sent = JSON.parse(frame.value.signed.payload) as RequestPayload;
      },
      recv: async () => {
        const request = sent as RequestPayload | null;
        if (request === null) throw new StreamClosed("nothing was asked");
        const { signed } = signResponse(node, {
          method: request.method,
          bootId: "boot",
          requestNonce: request.nonce,
          outcome: { status: "refused", code: "expired", reason: "payload.expires_at_ms is in the past" },
        });
        return encodeMessageFrame({ type: "response", signed });
      },
      close: () => undefined,
    };
    const client = new NodeClient({
      key: generateSigningKey(),
      connector: { connect: async () => stream },
      clock: () => now,
      onSend: async () => {
        stamped++;
        return { held: "held" };
      },
    });
    const r = await client.probe(
      { addr: "probe:1", nodeId: nodeIdOf(node.publicKey), key: node.publicKey, bootId: null },
      1_000,
    );
    expect(r, JSON.stringify(r)).toMatchObject({ kind: "refused", code: "expired" });
    expect(stamped, "a probe renews nothing, so it is neither stamped nor held").toBe(0);
    const request = sent as RequestPayload | null;
    expect(request?.method).toBe("describe");
    expect(request?.expires_at_ms).toBeLessThanOrEqual(now - CLOCK_SKEW_BOUND_MS - 1_000);
  });
});
