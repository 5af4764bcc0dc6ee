/**
 * Fuzzed frames and messages (fast-check) against a real daemon: none crashes it, none is answered as ok, and none
 * consumes a nonce: the legitimate request carrying the fuzzed request's nonce still succeeds afterwards.
 */
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { encodeMessageFrame, parseMessageFrame } from "../../src/core/protocol/messages.js";
import { requestPayloadOf, signRequestObject } from "../../src/core/protocol/sign.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { encodeFrame, type SocketFrameStream } from "../../src/mesh/transport/frames.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { ALLOW_ALL, cleanup, NodeProcess, requireBuild, TestController } from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

let node: NodeProcess;
const ctl = new TestController();

beforeAll(async () => {
  requireBuild();
  node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [generateSigningKey().publicKey],
    permits: ALLOW_ALL,
  });
});
afterAll(cleanup);

async function connect(): Promise<SocketFrameStream> {
  return (await new TlsConnector({ identity: ctl.key }).connect(node.address)) as unknown as SocketFrameStream;
}

/** Sends raw bytes and returns the answer's outcome status/code, or "closed" when the node hung up without one. */
async function poke(bytes: Uint8Array): Promise<string> {
  const s = await connect();
  try {
    s.writeRaw(bytes);
    s.endWrite();
    const frame = await s.recv(AbortSignal.timeout(30_000));
    const parsed = parseMessageFrame(frame);
    if (!parsed.ok) return "garbage";
    if (parsed.value.type !== "response") return parsed.value.type;
    const outcome = JSON.parse(parsed.value.signed.payload).outcome as { status: string; code?: string };
    return outcome.status === "ok" ? "ok" : (outcome.code as string);
  } catch {
    return "closed";
  } finally {
    s.close();
  }
}

function validPayload(nonce: string) {
  const now = Date.now();
  return requestPayloadOf(ctl.key, {
    method: "status",
    target: node.nodeId,
    targetBoot: node.bootId,
    nonce,
    issuedAtMs: now,
    validityMs: 60_000,
    decisionId: null,
    body: {},
  });
}

const frameOf = (signed: unknown) => encodeFrame(new TextEncoder().encode(JSON.stringify({ type: "request", signed })));

describe("fuzzed input to a node daemon", () => {
  it("survives arbitrary frames and byte strings without crashing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 256 }).map((b) => encodeFrame(b)),
          fc.uint8Array({ minLength: 0, maxLength: 64 }).map((b) => new Uint8Array(Buffer.from(b))),
          fc.json().map((j) => encodeFrame(new TextEncoder().encode(j.length > 0 ? j : "0"))),
          fc
            .record({ type: fc.constantFrom("request", "fetch", "data", "response", "x"), signed: fc.anything() })
            .map((o) => {
              try {
                return encodeFrame(new TextEncoder().encode(JSON.stringify(o) ?? "null"));
              } catch {
                return encodeFrame(new Uint8Array([0x7b]));
              }
            }),
        ),
        async (bytes) => {
          const answer = await poke(bytes);
          expect(answer).not.toBe("ok");
        },
      ),
      { numRuns: 120 },
    );
    expect(node.alive).toBe(true);
    expect(await poke(frameOf(signRequestObject(ctl.key, validPayload(randomBytes(16).toString("hex")))))).toBe("ok");
  });

  it("never consumes a nonce with a mutated request: the genuine request with that nonce is still accepted", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          // flip one character of the payload text (the signature no longer covers it)
          fc
            .tuple(fc.nat(), fc.constantFrom("0", "1", "a", "}", '"', " "))
            .map(([i, c]) => ({ kind: "payload" as const, i, c })),
          // flip one character of the signature or key
          fc
            .tuple(fc.constantFrom("sig" as const, "key" as const), fc.nat(), fc.constantFrom("0", "f", "g"))
            .map(([field, i, c]) => ({ kind: field, i, c })),
          // add a member to the signed envelope or to the payload (signed properly)
          fc.constantFrom(
            { kind: "envelope-extra" as const },
            { kind: "payload-extra" as const },
            { kind: "wrong-target" as const },
          ),
        ),
        async (m) => {
          const nonce = randomBytes(16).toString("hex");
          const payload = validPayload(nonce);
          const genuine = signRequestObject(ctl.key, payload);
          let forged: unknown;
          switch (m.kind) {
            case "payload": {
              const i = m.i % genuine.payload.length;
              const text = genuine.payload.slice(0, i) + m.c + genuine.payload.slice(i + 1);
              if (text === genuine.payload) return;
              forged = { ...genuine, payload: text };
              break;
            }
            case "sig":
            case "key": {
              const v = genuine[m.kind];
              const i = m.i % v.length;
              const text = v.slice(0, i) + m.c + v.slice(i + 1);
              if (text === v) return;
              forged = { ...genuine, [m.kind]: text };
              break;
            }
            case "envelope-extra":
              forged = { ...genuine, extra: "x" };
              break;
            case "payload-extra":
              forged = signRequestObject(ctl.key, { ...payload, extra: 1 });
              break;
            case "wrong-target":
              forged = signRequestObject(ctl.key, { ...payload, target: "0".repeat(32) });
              break;
          }
          expect(await poke(frameOf(forged))).not.toBe("ok");
          expect(await poke(frameOf(genuine))).toBe("ok");
        },
      ),
      { numRuns: 80 },
    );
    expect(node.alive).toBe(true);
  });

  it("ignores an unsolicited data frame sequence and keeps serving other connections", async () => {
    const s = await connect();
    await s.send(
      encodeMessageFrame({
        type: "data",
        what: "manifest",
        package_id: "a".repeat(64),
        sha256: null,
        offset: 0,
        length: 1,
        data_length: 1,
      }),
    );
    await expect(s.recv(AbortSignal.timeout(5000))).rejects.toThrow();
    expect(await poke(frameOf(signRequestObject(ctl.key, validPayload(randomBytes(16).toString("hex")))))).toBe("ok");
  });
});
