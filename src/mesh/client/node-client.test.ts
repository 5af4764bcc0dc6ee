import { describe, expect, it } from "vitest";
import { generateSigningKey } from "../../keys/key-file.js";
import { type Connector, type FrameStream, StreamClosed } from "../transport/frames.js";
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
    const client = new NodeClient({ key: generateSigningKey(), connector: held.connector, onSend: async () => async (mayHaveArrived) => void settled.push(mayHaveArrived) });
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
    expect(await client.call(target, "place", { package_id: "p" }, { timeoutMs: 5_000 })).toMatchObject({ kind: "unreachable" });
    expect(settled).toEqual([false]);
  });
});
