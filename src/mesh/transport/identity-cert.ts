/**
 * The self-signed X.509 certificate of an Ed25519 identity key (spec/mesh.md §4.11), encoded as DER by hand.
 *
 * Why by hand: the certificate has one fixed shape (RFC 5280 with RFC 8410's Ed25519 algorithm identifier, no
 * extensions), so eight DER constructors write it, where @peculiar/asn1-x509 and its schema runtime cost an idle node
 * daemon about 7 MiB of resident memory (issue 19, bench/mesh/node.ts). The bytes are those the library wrote for the
 * same inputs (test/mesh/tls-identity.test.ts compares them), and node:crypto's X509Certificate parses and verifies
 * them. What each side of the channel checks is the key; names and dates are carried, never judged.
 */

/** Tag, length (DER definite form) and content. */
function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  if (n > 0xffff) throw new Error("identity certificate: a DER element over 64 KiB");
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split(".").map(Number) as [number, number, ...number[]];
  const bytes = [a * 40 + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, `Z`. */
function time(at: Date): Buffer {
  const iso = at.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return at.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), "ascii"))
    : tlv(0x18, Buffer.from(digits, "ascii"));
}

const ED25519_ALGORITHM = sequence(oid("1.3.101.112")); // RFC 8410 §3: parameters absent
const COMMON_NAME = oid("2.5.4.3");

export interface IdentityCertInput {
  /** DER SubjectPublicKeyInfo of the Ed25519 key (node:crypto `export({format: "der", type: "spki"})`). */
  readonly spki: Buffer;
  /** A positive serial: its first octet is below 0x80 and not zero (DER forbids the padding either would need). */
  readonly serial: Buffer;
  readonly commonName: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** The TBSCertificate (RFC 5280 §4.1): what the key signs. */
export function tbsCertificate(i: IdentityCertInput): Buffer {
  const first = i.serial[0] ?? 0;
  if (i.serial.length === 0 || first === 0 || first >= 0x80)
    throw new Error("identity certificate: the serial must be positive with no leading zero octet");
  const name = sequence(tlv(0x31, sequence(COMMON_NAME, tlv(0x0c, Buffer.from(i.commonName, "utf8")))));
  return sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // [0] EXPLICIT version v3
    tlv(0x02, i.serial),
    ED25519_ALGORITHM,
    name,
    sequence(time(i.notBefore), time(i.notAfter)),
    name,
    i.spki,
  );
}

/** The Certificate: the TBSCertificate, the algorithm again, and the signature as a BIT STRING with no unused bits. */
export function identityCertificate(tbs: Buffer, signature: Buffer): Buffer {
  return sequence(tbs, ED25519_ALGORITHM, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
}
