/**
 * TLS 1.3 for the control protocol (spec/mesh.md §4.11, issue 17): the same frames, inside a TLS 1.3 session whose
 * two certificates are self-signed by the Ed25519 identity keys berth already has. No CA is consulted: each side
 * reads the key of the certificate its peer proved possession of (TLS 1.3 CertificateVerify) and compares it with
 * the key it expects — the controller with the node's pinned key, the node with the controller keys it authorises.
 * The signed messages above the stream are unchanged; TLS adds confidentiality and keeps a man in the middle from
 * even reading.
 */
import { createPublicKey, randomBytes, sign } from "node:crypto";
import { createSecureContext, type SecureContext, connect as tlsConnect, type TLSSocket } from "node:tls";
import type { SigningKey } from "../../core/crypto/ed25519.js";
import { nodeIdOf } from "../../core/crypto/ed25519.js";
import { type Connector, type FrameStream, MAX_FRAME_BYTES, PeerKeyMismatch, SocketFrameStream } from "./frames.js";
import { identityCertificate, tbsCertificate } from "./identity-cert.js";
import { type ListenTls, parseAddr, settleConnect } from "./tcp.js";

const SPKI_ED25519_PREFIX = "302a300506032b6570032100";

export interface TlsIdentity {
  readonly key: string;
  readonly cert: string;
  readonly publicKey: string;
}

const identities = new Map<string, TlsIdentity>();

/**
 * A self-signed X.509 certificate for an identity key (cached per key), encoded by identity-cert.ts and signed with
 * node:crypto. Its subject names the key's node id; its validity is long and ignored: what each side checks is the
 * key, never a date, a name or a CA.
 */
export function tlsIdentity(key: SigningKey): TlsIdentity {
  const cached = identities.get(key.publicKey);
  if (cached) return cached;
  const serial = randomBytes(16);
  // A positive INTEGER with no leading zero octet: DER forbids the padding a 0x00 first byte would need (seen: one
  // certificate in a few hundred was refused as "illegal padding" by the peer).
  serial[0] = ((serial[0] as number) & 0x7f) | 0x40;
  const tbs = tbsCertificate({
    spki: createPublicKey(key.privateKey).export({ format: "der", type: "spki" }),
    serial,
    commonName: `berth ${nodeIdOf(key.publicKey)}`,
    notBefore: new Date("2020-01-01T00:00:00Z"),
    notAfter: new Date("2120-01-01T00:00:00Z"),
  });
  const der = identityCertificate(tbs, sign(null, tbs, key.privateKey));
  const pem = `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n$/, "")}\n-----END CERTIFICATE-----\n`;
  const made = {
    key: key.privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
    cert: pem,
    publicKey: key.publicKey,
  };
  identities.set(key.publicKey, made);
  return made;
}

/**
 * Issue 35: the key read out of each certificate, keyed by the certificate's exact DER bytes. Exporting the key
 * object was about 2 % of a placement's CPU (one connection per node call); the same bytes always hold the same key,
 * so a hit can never answer for another certificate. Bounded: emptied when full (a thousand nodes fit many times).
 */
const keysByCertificate = new Map<string, string | null>();
const MAX_REMEMBERED_CERTIFICATES = 8192;

/** The raw Ed25519 key (64 hex) of the certificate the peer presented, `null` without one or for another key type. */
export function peerKeyOf(socket: TLSSocket): string | null {
  const cert = socket.getPeerX509Certificate();
  if (!cert) return null;
  const der = cert.raw.toString("base64");
  const known = keysByCertificate.get(der);
  if (known !== undefined) return known;
  const spki = cert.publicKey.export({ format: "der", type: "spki" }).toString("hex");
  const key =
    spki.startsWith(SPKI_ED25519_PREFIX) && spki.length === SPKI_ED25519_PREFIX.length + 64
      ? spki.slice(SPKI_ED25519_PREFIX.length)
      : null;
  if (keysByCertificate.size >= MAX_REMEMBERED_CERTIFICATES) keysByCertificate.clear();
  keysByCertificate.set(der, key);
  return key;
}

export { PeerKeyMismatch };

const TLS_COMMON = { minVersion: "TLSv1.3", maxVersion: "TLSv1.3" } as const;

/**
 * The controller's connector over TLS. The presented key is on the stream (`peerKey`): the node client compares it
 * with the key it holds for the target (pinned or learned, §3.3) before sending, and on first use with the key that
 * signs the describe answer. `expectedKey(addr)`, when given, refuses a mismatch here already (tests, tools).
 */
export class TlsConnector implements Connector {
  /**
   * Issue 35: one secure context for every connection of this connector (the identity's key and certificate parsed
   * once); `tls.connect` given `key`/`cert` built a fresh context per connection, a thousand per pass at 1,000 nodes.
   */
  private context: SecureContext | null = null;

  constructor(
    private readonly o: {
      identity: SigningKey;
      expectedKey?: (addr: string) => string | null;
      connectTimeoutMs?: number;
    },
  ) {}

  async connect(addr: string, signal?: AbortSignal): Promise<FrameStream & { readonly peerKey: string }> {
    const { host, port } = parseAddr(addr);
    if (this.context === null) {
      const id = tlsIdentity(this.o.identity);
      this.context = createSecureContext({ ...TLS_COMMON, key: id.key, cert: id.cert });
    }
    const expected = this.o.expectedKey?.(addr) ?? null;
    // rejectUnauthorized: false turns off CA chain checks only; the handshake still proves the peer holds the key of
    // its certificate, and that key is compared below, before anything is sent.
    const socket = tlsConnect({ host, port, ...TLS_COMMON, secureContext: this.context, rejectUnauthorized: false });
    // A node that speaks plaintext only reads the ClientHello as an oversized frame and closes, after TCP connected:
    // say what that means then (and only then: a refused port is just a refused port).
    let tcpUp = false;
    socket.once("connect", () => {
      tcpUp = true;
    });
    const what = () =>
      tcpUp
        ? " over TLS (the handshake failed: a node serving plaintext only is refused unless both sides opted in, spec/mesh.md §4.11)"
        : " over TLS";
    const opts = { addr, readyEvent: "secureConnect", timeoutMs: this.o.connectTimeoutMs ?? 5000, signal, what };
    return settleConnect<TLSSocket, FrameStream & { readonly peerKey: string }>(socket, opts, (s) => {
      const presented = peerKeyOf(s);
      if (presented === null || (expected !== null && presented !== expected))
        return new PeerKeyMismatch(addr, expected ?? "(an Ed25519 key)", presented);
      return Object.assign(new SocketFrameStream(s, { maxFrame: MAX_FRAME_BYTES }), { peerKey: presented });
    });
  }
}

/** What listenFrames needs to serve TLS: this node's certificate and the controller keys it serves (§3.2). */
export function listenTls(o: {
  identity: SigningKey;
  authorised: () => ReadonlySet<string>;
  onRefused?: (presented: string | null, remote: string) => void;
}): ListenTls {
  const id = tlsIdentity(o.identity);
  return {
    context: createSecureContext({ ...TLS_COMMON, key: id.key, cert: id.cert }),
    authorised: o.authorised,
    peerKeyOf,
    ...(o.onRefused ? { onRefused: o.onRefused } : {}),
  };
}
