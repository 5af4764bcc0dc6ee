import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../crypto/canonical.js";
import { nodeIdOf, signingKeyFromSeed, signTagged } from "../crypto/ed25519.js";
import { verifyAnswer } from "./answer.js";
import type { RequestPayload } from "./messages.js";
import { NonceGuard } from "./nonce-guard.js";
import { requestPayloadOf, signRequestObject, signResponse } from "./sign.js";
import { type TargetContext, verifyRequest } from "./verify.js";

const controller = signingKeyFromSeed(new Uint8Array(32).fill(1));
const stranger = signingKeyFromSeed(new Uint8Array(32).fill(2));
const nodeKey = signingKeyFromSeed(new Uint8Array(32).fill(3));
const NODE = nodeIdOf(nodeKey.publicKey);
const BOOT = "b".repeat(32);
const NOW = 1_767_225_600_000;

function ctx(over: Partial<TargetContext> = {}): TargetContext {
  return {
    nodeId: NODE,
    bootId: BOOT,
    nowMs: NOW,
    authorised: new Set([controller.publicKey]),
    guard: new NonceGuard(),
    ...over,
  };
}

function payload(over: Partial<RequestPayload> = {}, method = "status"): RequestPayload {
  return {
    ...requestPayloadOf(controller, {
      method,
      target: NODE,
      targetBoot: method === "describe" ? null : BOOT,
      nonce: "0".repeat(32),
      issuedAtMs: NOW,
      validityMs: 20_000,
      decisionId: null,
      body: {},
    }),
    ...over,
  };
}

function code(p: unknown, c = ctx(), key = controller): string {
  const v = verifyRequest(signRequestObject(key, p), c);
  return v.kind === "accepted" ? "accepted" : v.code;
}

describe("the spec's test vectors", () => {
  it("derives the §3.1 node id from the seed of 32 bytes 0x01", () => {
    expect(controller.publicKey).toBe("8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c");
    expect(nodeIdOf(controller.publicKey)).toBe("34750f98bd59fcfc946da45aaabe933b");
  });

  it("signs the §4.5 describe request payload to the listed signature, and the node accepts it", () => {
    const p = {
      authority: null,
      body: {},
      decision_id: null,
      expires_at_ms: 1767225620000,
      issued_at_ms: 1767225600000,
      method: "describe",
      nonce: "000102030405060708090a0b0c0d0e0f",
      requester: "34750f98bd59fcfc946da45aaabe933b",
      target: "*",
      target_boot: null,
      version: 1,
    };
    const signed = signRequestObject(controller, p);
    expect(signed.payload).toBe(
      '{"authority":null,"body":{},"decision_id":null,"expires_at_ms":1767225620000,"issued_at_ms":1767225600000,"method":"describe","nonce":"000102030405060708090a0b0c0d0e0f","requester":"34750f98bd59fcfc946da45aaabe933b","target":"*","target_boot":null,"version":1}',
    );
    expect(signed.sig).toBe(
      "5fc6babca202bd13222c0c68a28d8ca3fd83d55aa6a0f7fa2183dedae59a279ab868dd46d45e95fdc73322d8c9a937668181076f439e1b870b92abed79df530f",
    );
    expect(verifyRequest(signed, ctx()).kind).toBe("accepted");
  });
});

describe("target-side verification, one check at a time (§4.6)", () => {
  it.each([
    ["accepts a valid request", payload(), "accepted"],
    ["refuses a wrong version as invalid_request", payload({ version: 2 }), "invalid_request"],
    ["refuses a requester that is not the key's id as signature", payload({ requester: "1".repeat(32) }), "signature"],
    ["refuses another target as not_for_me", payload({ target: "0".repeat(32) }), "not_for_me"],
    ["refuses a wildcard target on status as not_for_me", payload({ target: "*" }), "not_for_me"],
    ["accepts a wildcard target on describe", payload({ target: "*" }, "describe"), "accepted"],
    ["refuses a describe naming a boot as stale_boot", payload({ target_boot: BOOT }, "describe"), "stale_boot"],
    ["refuses another boot as stale_boot", payload({ target_boot: "c".repeat(32) }), "stale_boot"],
    ["refuses an expired request", payload({ issued_at_ms: NOW - 20_000, expires_at_ms: NOW }), "expired"],
    [
      "refuses a request issued more than 30 s ahead",
      payload({ issued_at_ms: NOW + 30_001, expires_at_ms: NOW + 40_000 }),
      "expired",
    ],
    [
      "accepts a request issued exactly 30 s ahead",
      payload({ issued_at_ms: NOW + 30_000, expires_at_ms: NOW + 40_000 }),
      "accepted",
    ],
    ["refuses a validity over 300 s", payload({ expires_at_ms: NOW + 300_001 }), "expired"],
    ["refuses a malformed nonce", payload({ nonce: "ABC" }), "invalid_request"],
    ["refuses a mutating method without a decision id", payload({ decision_id: null }, "stop"), "invalid_request"],
    ["refuses a read method with a decision id", payload({ decision_id: "a".repeat(64) }), "invalid_request"],
    [
      "accepts an unknown method with either decision id form",
      payload({ decision_id: "a".repeat(64) }, "reboot"),
      "accepted",
    ],
    ["refuses an unknown member as signature", { ...payload(), extra: true }, "signature"],
    [
      "refuses a request without the authority member as signature",
      (({ authority: _a, ...rest }) => rest)(payload()),
      "signature",
    ],
    [
      "refuses a mutating method without an authority as invalid_request (issue 20)",
      payload({ decision_id: "a".repeat(64) }, "stop"),
      "invalid_request",
    ],
    [
      "accepts a mutating method naming its store and epoch",
      payload({ decision_id: "a".repeat(64), authority: { store_id: "c".repeat(32), epoch: 4 } }, "stop"),
      "accepted",
    ],
    [
      "accepts a read method with an authority",
      payload({ authority: { store_id: "c".repeat(32), epoch: 0 } }),
      "accepted",
    ],
    [
      "refuses a store id that is not 32 lowercase hex as invalid_request",
      payload({ decision_id: "a".repeat(64), authority: { store_id: "C".repeat(32), epoch: 4 } }, "stop"),
      "invalid_request",
    ],
    [
      "refuses a negative epoch as invalid_request",
      payload({ decision_id: "a".repeat(64), authority: { store_id: "c".repeat(32), epoch: -1 } }, "stop"),
      "invalid_request",
    ],
    [
      "refuses an authority with an unknown member as signature",
      payload({ authority: { store_id: "c".repeat(32), epoch: 0, leader: true } as never }),
      "signature",
    ],
    ["refuses a method longer than 64 characters as signature", payload({}, "m".repeat(65)), "signature"],
  ])("%s", (_name, p, expected) => {
    expect(code(p)).toBe(expected);
  });

  it("refuses an unauthorised key as unauthorized", () => {
    expect(code({ ...payload(), requester: nodeIdOf(stranger.publicKey) }, ctx(), stranger)).toBe("unauthorized");
  });

  it("refuses every request when no controller is authorised", () => {
    expect(code(payload(), ctx({ authorised: new Set() }))).toBe("unauthorized");
  });

  it("refuses a bad signature, a non-canonical payload and malformed key or sig as signature", () => {
    const signed = signRequestObject(controller, payload());
    const c = ctx();
    expect(verifyRequest({ ...signed, sig: "0".repeat(128) }, c)).toMatchObject({
      code: "signature",
      authenticated: false,
    });
    expect(verifyRequest({ ...signed, key: "zz" }, c)).toMatchObject({ code: "signature" });
    expect(verifyRequest({ ...signed, sig: "AB" }, c)).toMatchObject({ code: "signature" });
    const pretty = JSON.stringify(payload(), null, 2);
    expect(
      verifyRequest(
        { payload: pretty, key: controller.publicKey, sig: signTagged(controller, "berth.ctl.request.v1", pretty) },
        c,
      ),
    ).toMatchObject({
      code: "signature",
    });
    const big = "x".repeat(262_145);
    expect(
      verifyRequest(
        { payload: big, key: controller.publicKey, sig: signTagged(controller, "berth.ctl.request.v1", big) },
        c,
      ),
    ).toMatchObject({
      code: "signature",
    });
  });

  it("refuses a replayed nonce and records a nonce only after every check passed", () => {
    const c = ctx();
    expect(code(payload(), c)).toBe("accepted");
    expect(code(payload(), c)).toBe("replay");
    const fresh = payload({ nonce: "1".repeat(32) });
    expect(code({ ...fresh, target: "0".repeat(32) }, c)).toBe("not_for_me");
    expect(code({ ...fresh, requester: nodeIdOf(stranger.publicKey) }, c, stranger)).toBe("unauthorized");
    expect(c.guard.size).toBe(1);
    expect(code(fresh, c)).toBe("accepted");
  });

  it("proves the order with pairs: bad signature beats expired, unauthorised beats replay, not_for_me beats expired", () => {
    const c = ctx();
    const expired = payload({ issued_at_ms: NOW - 20_000, expires_at_ms: NOW });
    expect(verifyRequest({ ...signRequestObject(controller, expired), sig: "0".repeat(128) }, c)).toMatchObject({
      code: "signature",
    });
    expect(code(payload(), c)).toBe("accepted");
    expect(code({ ...payload(), requester: nodeIdOf(stranger.publicKey) }, c, stranger)).toBe("unauthorized");
    expect(code({ ...expired, target: "0".repeat(32) }, c)).toBe("not_for_me");
  });

  it("refuses busy when the guard is full of unexpired nonces, and evicts expired ones to make room", () => {
    const guard = new NonceGuard(2);
    const c = ctx({ guard });
    expect(code(payload({ nonce: "1".repeat(32) }), c)).toBe("accepted");
    expect(code(payload({ nonce: "2".repeat(32) }), c)).toBe("accepted");
    expect(code(payload({ nonce: "3".repeat(32) }), c)).toBe("busy");
    const later = ctx({ guard, nowMs: NOW + 25_000 });
    expect(
      code(payload({ nonce: "3".repeat(32), issued_at_ms: NOW + 25_000, expires_at_ms: NOW + 45_000 }), later),
    ).toBe("accepted");
  });

  it("never accepts a request whose payload was altered anywhere (property)", () => {
    const signed = signRequestObject(controller, payload());
    fc.assert(
      fc.property(fc.nat(signed.payload.length - 1), fc.string({ minLength: 1, maxLength: 1 }), (i, ch) => {
        const text = signed.payload.slice(0, i) + ch + signed.payload.slice(i + 1);
        fc.pre(text !== signed.payload);
        const c = ctx();
        expect(verifyRequest({ ...signed, payload: text }, c).kind).toBe("refused");
        expect(c.guard.size).toBe(0);
      }),
    );
  });
});

describe("controller-side answer binding (§4.7)", () => {
  const request = payload();
  const answer = (
    over: Partial<{ method: string; bootId: string; requestNonce: string }> = {},
    key = nodeKey,
    code?: "stale_boot",
  ) =>
    signResponse(key, {
      method: over.method ?? request.method,
      bootId: over.bootId ?? BOOT,
      requestNonce: over.requestNonce ?? request.nonce,
      outcome: code ? { status: "refused", code, reason: "describe again" } : { status: "ok", result: {} },
    }).signed;

  it("accepts an answer bound to its request by the stored key", () => {
    expect(verifyAnswer(answer(), request, nodeKey.publicKey).ok).toBe(true);
  });

  it.each([
    ["another nonce", answer({ requestNonce: "f".repeat(32) })],
    ["another method", answer({ method: "logs" })],
    ["another boot", answer({ bootId: "d".repeat(32) })],
    ["another key", answer({}, stranger)],
  ])("refuses an answer with %s", (_n, signed) => {
    expect(verifyAnswer(signed, request, nodeKey.publicKey).ok).toBe(false);
  });

  it("accepts a stale_boot refusal naming the node's current boot", () => {
    expect(verifyAnswer(answer({ bootId: "d".repeat(32) }, nodeKey, "stale_boot"), request, nodeKey.publicKey).ok).toBe(
      true,
    );
  });

  it("refuses a tampered answer and a non-canonical one", () => {
    const signed = answer();
    expect(
      verifyAnswer({ ...signed, payload: signed.payload.replace('"ok"', '"ko"') }, request, nodeKey.publicKey).ok,
    ).toBe(false);
    const pretty = JSON.stringify(JSON.parse(signed.payload), null, 1);
    const resigned = {
      payload: pretty,
      key: nodeKey.publicKey,
      sig: signTagged(nodeKey, "berth.ctl.response.v1", pretty),
    };
    expect(verifyAnswer(resigned, request, nodeKey.publicKey).ok).toBe(false);
    expect(canonicalJson(JSON.parse(pretty))).toBe(signed.payload);
  });

  it("learns a key only on a wildcard describe", () => {
    const describeReq = payload({ target: "*" }, "describe");
    const signed = signResponse(nodeKey, {
      method: "describe",
      bootId: BOOT,
      requestNonce: describeReq.nonce,
      outcome: { status: "ok", result: {} },
    }).signed;
    expect(verifyAnswer(signed, describeReq, null).ok).toBe(true);
    expect(verifyAnswer(answer(), request, null).ok).toBe(false);
  });
});
