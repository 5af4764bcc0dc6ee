/**
 * Every refusal code of spec/mesh.md §4.8 provoked over real TCP against a real daemon, the verification order of §4.6,
 * and the framing limits of §4.1. A forged or malformed request never burns a nonce.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { canonicalJson } from "../../src/core/crypto/canonical.js";
import { signTagged, verifyTagged } from "../../src/core/crypto/ed25519.js";
import type { RequestPayload, ResponsePayload, SignedMessage } from "../../src/core/protocol/messages.js";
import { encodeMessageFrame, parseMessageFrame } from "../../src/core/protocol/messages.js";
import { requestPayloadOf, signRequestObject } from "../../src/core/protocol/sign.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import type { CallResult } from "../../src/mesh/client/node-client.js";
import { type SocketFrameStream, StreamClosed } from "../../src/mesh/transport/frames.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, ok, requireBuild, TestController } from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

let node: NodeProcess;
const ctl = new TestController();
const stranger = new TestController();
const signer = generateSigningKey();

beforeAll(async () => {
  requireBuild();
  node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
  });
});
afterAll(cleanup);

const nonce = () => randomBytes(16).toString("hex");

function request(over: Partial<RequestPayload> = {}, method = "status"): RequestPayload {
  const now = Date.now();
  return {
    ...requestPayloadOf(ctl.key, {
      method,
      target: node.nodeId,
      targetBoot: method === "describe" ? null : node.bootId,
      nonce: nonce(),
      issuedAtMs: now,
      validityMs: 20_000,
      decisionId: null,
      body: {},
    }),
    ...over,
  };
}

/**
 * Sends a signed request on its own connection and returns the refusal code (or "ok") of the node's signed answer.
 * The answer's signature is checked under the node's key, but not its binding: a forged request's refusal cannot
 * echo a nonce the node never read, and the controller rightly treats it as no valid answer (§4.7).
 */
async function exchangeRaw(signed: SignedMessage): Promise<string> {
  const s = await rawStream();
  try {
    await s.send(encodeMessageFrame({ type: "request", signed }));
    const frame = parseMessageFrame(await s.recv(AbortSignal.timeout(30_000)));
    if (!frame.ok || frame.value.type !== "response") return "no_answer";
    const answer = frame.value.signed;
    if (
      answer.key !== node.publicKey ||
      !verifyTagged(node.publicKey, "berth.ctl.response.v1", answer.payload, answer.sig)
    )
      return "forged_answer";
    const outcome = (JSON.parse(answer.payload) as ResponsePayload).outcome;
    return outcome.status === "ok" ? "ok" : outcome.code;
  } finally {
    s.close();
  }
}

function send(payload: unknown, signWith = ctl.key): Promise<string> {
  return exchangeRaw(signRequestObject(signWith, payload));
}

function code(r: CallResult | string): string {
  if (typeof r === "string") return r;
  return r.kind === "refused" ? r.code : r.kind;
}

async function rawStream(): Promise<SocketFrameStream> {
  return (await new TlsConnector({ identity: ctl.key }).connect(node.address)) as unknown as SocketFrameStream;
}

describe("the node's verification of control requests", () => {
  it("answers a valid status and a valid describe with signed facts for the simulated board", async () => {
    expect(code(await send(request()))).toBe("ok");
    const d = await ctl.client.describe(node.address, null);
    expect(d.kind).toBe("described");
    if (d.kind === "described") {
      expect(d.nodeId).toBe(node.nodeId);
      expect(d.facts).toMatchObject({ board: "pi5", node_id: node.nodeId, boot_id: node.bootId, os: "linux" });
      expect((d.facts.perf as unknown[]).length).toBeGreaterThan(0);
    }
  });

  it("refuses a forged signature with code signature and closes the connection", async () => {
    const payload = request();
    const signed = signRequestObject(ctl.key, payload);
    const forged = { ...signed, sig: `${signed.sig[0] === "0" ? "1" : "0"}${signed.sig.slice(1)}` };
    expect(code(await exchangeRaw(forged))).toBe("signature");
  });

  it("refuses a requester that is not the signing key's id, a non-canonical payload and an unknown member as signature", async () => {
    expect(code(await send(request({ requester: stranger.client.controllerId })))).toBe("signature");
    const payload = request();
    const text = JSON.stringify(payload, null, 1);
    const signed = { payload: text, key: ctl.key.publicKey, sig: signTagged(ctl.key, "berth.ctl.request.v1", text) };
    expect(code(await exchangeRaw(signed))).toBe("signature");
    expect(code(await send({ ...request(), extra: 1 }))).toBe("signature");
  });

  it("refuses a request for another node, and a wildcard target on anything but describe, as not_for_me", async () => {
    expect(code(await send(request({ target: "0".repeat(32) })))).toBe("not_for_me");
    expect(code(await send(request({ target: "*" })))).toBe("not_for_me");
  });

  it("refuses a request naming another boot as stale_boot", async () => {
    expect(code(await send(request({ target_boot: "f".repeat(32) })))).toBe("stale_boot");
  });

  it("refuses an expired request, one issued too far in the future, and one valid for too long, as expired", async () => {
    const now = Date.now();
    expect(code(await send(request({ issued_at_ms: now - 60_000, expires_at_ms: now - 1000 })))).toBe("expired");
    expect(code(await send(request({ issued_at_ms: now + 60_000, expires_at_ms: now + 70_000 })))).toBe("expired");
    expect(code(await send(request({ issued_at_ms: now, expires_at_ms: now + 300_001 })))).toBe("expired");
  });

  it("refuses a bad nonce, a wrong version and a broken decision id rule as invalid_request", async () => {
    expect(code(await send(request({ nonce: "xyz" })))).toBe("invalid_request");
    expect(code(await send(request({ version: 2 })))).toBe("invalid_request");
    expect(code(await send(request({ decision_id: null }, "unload")))).toBe("invalid_request");
    expect(code(await send(request({ decision_id: "a".repeat(64) }, "status")))).toBe("invalid_request");
  });

  it("refuses an unauthorised controller key as unauthorized", async () => {
    const payload = { ...request(), requester: stranger.client.controllerId };
    expect(code(await send(payload, stranger.key))).toBe("unauthorized");
  });

  it("refuses a replayed request as replay", async () => {
    const payload = request();
    expect(code(await send(payload))).toBe("ok");
    expect(code(await send(payload))).toBe("replay");
  });

  it("applies the checks in order: a bad signature beats expiry, unauthorised beats replay", async () => {
    const now = Date.now();
    const expired = request({ issued_at_ms: now - 60_000, expires_at_ms: now - 1000 });
    const signed = signRequestObject(ctl.key, expired);
    expect(code(await exchangeRaw({ ...signed, sig: "0".repeat(128) }))).toBe("signature");
    const used = request();
    expect(code(await send(used))).toBe("ok");
    const replayedByStranger = { ...used, requester: stranger.client.controllerId };
    expect(code(await send(replayedByStranger, stranger.key))).toBe("unauthorized");
  });

  it("answers an unknown method with unknown_method after gating it", async () => {
    expect(code(await send(request({}, "reboot")))).toBe("unknown_method");
    await expect.poll(() => node.events({ source: "gate", kind: "workload.refuse" }).length).toBeGreaterThan(0);
  });

  it("answers an unknown instance with unknown_instance and a malformed body with invalid_request", async () => {
    expect(code(await send(request({ body: { instance_id: "probe-000000000000" } })))).toBe("unknown_instance");
    expect(code(await send(request({ body: { instance_id: null, include_departed: false, surprise: true } })))).toBe(
      "invalid_request",
    );
  });

  it("never burns a nonce for a forged or misaddressed request: the legitimate request with that nonce succeeds", async () => {
    const payload = request();
    const signed = signRequestObject(ctl.key, payload);
    expect(code(await exchangeRaw({ ...signed, sig: "1".repeat(128) }))).toBe("signature");
    expect(code(await send({ ...payload, target: "0".repeat(32) }))).toBe("not_for_me");
    expect(code(await send({ ...payload, requester: stranger.client.controllerId }, stranger.key))).toBe(
      "unauthorized",
    );
    expect(code(await exchangeRaw(signed))).toBe("ok");
  });

  it("closes the connection without an answer on an oversized frame, a zero-length frame or an unknown frame member", async () => {
    for (const bytes of [Buffer.from([0x01, 0x00, 0x00, 0x01]), Buffer.from([0, 0, 0, 0])]) {
      const s = await rawStream();
      s.writeRaw(bytes);
      await expect(s.recv(AbortSignal.timeout(30_000))).rejects.toBeInstanceOf(StreamClosed);
    }
    const s = await rawStream();
    const signed = signRequestObject(ctl.key, request());
    await s.send(new TextEncoder().encode(JSON.stringify({ type: "request", signed, extra: true })));
    await expect(s.recv(AbortSignal.timeout(30_000))).rejects.toBeInstanceOf(StreamClosed);
    // and the daemon still serves
    expect(code(await send(request()))).toBe("ok");
  });

  it("answers a response frame sent by a controller with silence and a closed connection (unsolicited frame)", async () => {
    const s = await rawStream();
    await s.send(encodeMessageFrame({ type: "fetch_error", reason: "nobody asked" }));
    await expect(s.recv(AbortSignal.timeout(30_000))).rejects.toBeInstanceOf(StreamClosed);
  });

  it("chains at most 16 unauthenticated refusals per minute and counts the rest as suppressed", async () => {
    const before = node.events({ source: "node", kind: "workload.refuse", phase: "verify" }).length;
    for (let i = 0; i < 40; i++)
      expect(await send({ ...request(), requester: stranger.client.controllerId }, stranger.key)).toBe("unauthorized");
    const after = node.events({ source: "node", kind: "workload.refuse", phase: "verify" });
    expect(after.length).toBeLessThanOrEqual(16);
    expect(after.length - before).toBeLessThan(40);
  });

  it("chains unauthenticated refusals in phase verify and authenticated ones in phase handle", async () => {
    const verify = node.events({ source: "node", kind: "workload.refuse", phase: "verify" }).map((e) => e.payload.code);
    const handle = node.events({ source: "node", kind: "workload.refuse", phase: "handle" }).map((e) => e.payload.code);
    expect(verify).toEqual(
      expect.arrayContaining(["signature", "not_for_me", "stale_boot", "expired", "invalid_request", "unauthorized"]),
    );
    expect(handle).toEqual(expect.arrayContaining(["replay", "unknown_method", "unknown_instance"]));
  });

  it("refuses a package fetch-protocol violation: a fetch answered for the wrong range is a fetch refusal", async () => {
    const pkg = makePackage(signer);
    // A client that answers the manifest fetch with an unrelated frame: the node refuses with fetch (or closes).
    const s = await rawStream();
    const decisionId = ctl.decisionId();
    const payload = {
      ...request({}, "place"),
      decision_id: decisionId,
      authority: { store_id: ctl.storeId, epoch: 0 },
      body: {
        package_id: pkg.packageId,
        name: "probe",
        variant: "any-linux",
        config: { mode: "service", args: [], env: {} },
      },
    };
    await s.send(encodeMessageFrame({ type: "request", signed: signRequestObject(ctl.key, payload) }));
    const fetch = parseMessageFrame(await s.recv(AbortSignal.timeout(30_000)));
    expect(fetch.ok && fetch.value.type).toBe("fetch");
    await s.send(encodeMessageFrame({ type: "fetch_error", reason: "not serving" }));
    const answer = parseMessageFrame(await s.recv(AbortSignal.timeout(30_000)));
    expect(answer.ok && answer.value.type).toBe("response");
    if (answer.ok && answer.value.type === "response")
      expect(JSON.parse(answer.value.signed.payload).outcome.code).toBe("fetch");
    s.close();
    // the decision is no longer in flight, nothing was placed
    expect((ok(await ctl.status(node)).rows as unknown[]).length).toBe(0);
  });

  it("lets the controller accept a stale_boot refusal as valid but an answer for another target as no valid answer", async () => {
    const stale = await ctl.client.call(node.target("e".repeat(32)), "status", {});
    expect(stale).toMatchObject({ kind: "refused", code: "stale_boot" });
    const payload = request({ target: "0".repeat(32) });
    const misaddressed = await ctl.client.exchange(node.target(), signRequestObject(ctl.key, payload), payload);
    expect(misaddressed).toMatchObject({ kind: "no_answer", sent: true });
    expect(canonicalJson({ ok: 1 })).toBe('{"ok":1}');
  });
});
