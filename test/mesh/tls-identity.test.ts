/**
 * Issue 17: the certificate of an identity key is valid DER for every key. Its serial is random, and a serial whose
 * first byte is zero needs a padding DER forbids: OpenSSL refused about one certificate in 256 that way.
 */
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { tlsIdentity } from "../../src/mesh/transport/tls.js";

describe("the certificate of an identity key", () => {
  it("parses for 1000 fresh keys and carries each key, with a positive serial without a leading zero octet", () => {
    for (let i = 0; i < 1000; i++) {
      const key = generateSigningKey();
      const cert = new X509Certificate(tlsIdentity(key).cert);
      expect(cert.publicKey.export({ format: "der", type: "spki" }).toString("hex").endsWith(key.publicKey)).toBe(true);
      expect(cert.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
      expect(cert.verify(cert.publicKey)).toBe(true);
    }
  });
});
