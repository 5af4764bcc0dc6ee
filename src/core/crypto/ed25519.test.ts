import { describe, expect, it } from "vitest";
import { hexBodySignatures, signingKeyFromSeed, signTagged, verifyTagged } from "./ed25519.js";

const key = signingKeyFromSeed(new Uint8Array(32).fill(5));
const other = signingKeyFromSeed(new Uint8Array(32).fill(6));
const signatures = hexBodySignatures("berth.audit.sig.v1", 32);
const bodyA = "a1".repeat(32);
const bodyB = "07".repeat(32);

describe("signatures over a fixed-length hex body built in one buffer", () => {
  it("sign exactly TAG(domain) ‖ the body's bytes, as signTagged does, call after call", () => {
    for (const body of [bodyA, bodyB, bodyA]) {
      expect(signatures.sign(key, body)).toBe(signTagged(key, "berth.audit.sig.v1", Buffer.from(body, "hex")));
    }
  });

  it("verify what signTagged signed, and nothing signed for another body, domain or key", () => {
    const sig = signTagged(key, "berth.audit.sig.v1", Buffer.from(bodyA, "hex"));
    expect(signatures.verify(key.publicKey, bodyA, sig)).toBe(true);
    expect(
      verifyTagged(key.publicKey, "berth.audit.sig.v1", Buffer.from(bodyA, "hex"), signatures.sign(key, bodyA)),
    ).toBe(true);
    expect(signatures.verify(key.publicKey, bodyB, sig)).toBe(false);
    expect(signatures.verify(other.publicKey, bodyA, sig)).toBe(false);
    expect(
      signatures.verify(key.publicKey, bodyA, signTagged(key, "berth.audit.event.v1", Buffer.from(bodyA, "hex"))),
    ).toBe(false);
  });

  it("refuse a body that is not lowercase hex of the fixed length, and a malformed key or signature", () => {
    const sig = signatures.sign(key, bodyA);
    for (const bad of [bodyA.toUpperCase(), bodyA.slice(2), `${bodyA}00`, `${bodyA.slice(1)}g`]) {
      expect(() => signatures.sign(key, bad)).toThrow(/64 lowercase hex/);
      expect(signatures.verify(key.publicKey, bad, sig)).toBe(false);
    }
    expect(signatures.verify("zz", bodyA, sig)).toBe(false);
    expect(signatures.verify(key.publicKey, bodyA, sig.slice(2))).toBe(false);
  });
});
