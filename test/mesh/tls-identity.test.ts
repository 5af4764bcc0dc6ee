/**
 * Issue 17: the certificate of an identity key is valid DER for every key. Its serial is random, and a serial whose
 * first byte is zero needs a padding DER forbids: OpenSSL refused about one certificate in 256 that way.
 * Issue 19: the DER is written by hand (src/mesh/transport/identity-cert.ts); it is byte for byte what
 * @peculiar/asn1-x509 (the library it replaced on the daemon's path) writes for the same key, serial and dates.
 */
import { createPublicKey, randomBytes, sign, X509Certificate } from "node:crypto";
import { AsnConvert } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AttributeValue,
  Certificate,
  Name,
  RelativeDistinguishedName,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from "@peculiar/asn1-x509";
import { describe, expect, it } from "vitest";
import { nodeIdOf } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { identityCertificate, tbsCertificate } from "../../src/mesh/transport/identity-cert.js";
import { tlsIdentity } from "../../src/mesh/transport/tls.js";

/** The certificate as the library wrote it before issue 19 (the reference). */
function libraryCertificate(
  key: ReturnType<typeof generateSigningKey>,
  serial: Buffer,
  notBefore: Date,
  notAfter: Date,
): Buffer {
  const algorithm = new AlgorithmIdentifier({ algorithm: "1.3.101.112" });
  const name = new Name([
    new RelativeDistinguishedName([
      new AttributeTypeAndValue({
        type: "2.5.4.3",
        value: new AttributeValue({ utf8String: `berth ${nodeIdOf(key.publicKey)}` }),
      }),
    ]),
  ]);
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: new Uint8Array(serial).buffer,
    signature: algorithm,
    issuer: name,
    subject: name,
    validity: new Validity({ notBefore, notAfter }),
    subjectPublicKeyInfo: AsnConvert.parse(
      createPublicKey(key.privateKey).export({ format: "der", type: "spki" }),
      SubjectPublicKeyInfo,
    ),
  });
  const signature = sign(null, Buffer.from(AsnConvert.serialize(tbs)), key.privateKey);
  return Buffer.from(
    AsnConvert.serialize(
      new Certificate({
        tbsCertificate: tbs,
        signatureAlgorithm: algorithm,
        signatureValue: new Uint8Array(signature).buffer,
      }),
    ),
  );
}

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

  it("is byte for byte the DER @peculiar/asn1-x509 writes for the same key, serial and validity", () => {
    const dates: Array<[string, string]> = [
      ["2020-01-01T00:00:00Z", "2120-01-01T00:00:00Z"],
      ["2049-12-31T23:59:59Z", "2050-01-01T00:00:00Z"],
    ];
    for (let i = 0; i < 50; i++) {
      const key = generateSigningKey();
      const serial = randomBytes(16);
      serial[0] = ((serial[0] as number) & 0x7f) | 0x40;
      const [from, to] = dates[i % dates.length] as [string, string];
      const tbs = tbsCertificate({
        spki: createPublicKey(key.privateKey).export({ format: "der", type: "spki" }),
        serial,
        commonName: `berth ${nodeIdOf(key.publicKey)}`,
        notBefore: new Date(from),
        notAfter: new Date(to),
      });
      // Ed25519 signatures are deterministic, so the whole certificate must match, signature included.
      const ours = identityCertificate(tbs, sign(null, tbs, key.privateKey));
      expect(ours.toString("hex")).toBe(libraryCertificate(key, serial, new Date(from), new Date(to)).toString("hex"));
      expect(new X509Certificate(ours).verify(createPublicKey(key.privateKey))).toBe(true);
    }
  });

  it("refuses a serial DER could not carry unpadded", () => {
    const key = generateSigningKey();
    const base = {
      spki: createPublicKey(key.privateKey).export({ format: "der", type: "spki" }),
      commonName: "x",
      notBefore: new Date(0),
      notAfter: new Date(0),
    };
    expect(() => tbsCertificate({ ...base, serial: Buffer.from([0x00, 1]) })).toThrow(/serial/);
    expect(() => tbsCertificate({ ...base, serial: Buffer.from([0x80, 1]) })).toThrow(/serial/);
  });
});
