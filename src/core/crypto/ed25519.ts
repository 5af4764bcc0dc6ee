/**
 * Ed25519 (RFC 8032, pure) keys and domain-separated signatures with node:crypto.
 *
 * A signature always covers TAG(domain) ‖ the exact payload bytes that travel or are stored. Verifiers check
 * those same bytes and never re-serialise a parsed object first: re-serialisation is where two
 * implementations quietly disagree.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import { fromHex, isLowerHex } from "./hex.js";
import { type DomainTag, sha256, tagged, tagPrefix } from "./tagged.js";

// DER wrappers that let node:crypto import raw 32-byte Ed25519 seeds and public keys.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

declare const publicKeyHexBrand: unique symbol;
/** 64 lowercase hex characters: a raw Ed25519 public key. */
export type PublicKeyHex = string & { readonly [publicKeyHexBrand]: true };

export interface SigningKey {
  readonly publicKey: PublicKeyHex;
  readonly privateKey: KeyObject;
}

export function isPublicKeyHex(value: unknown): value is PublicKeyHex {
  return isLowerHex(value, 32);
}

export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  if (seed.length !== 32) throw new Error(`an Ed25519 seed is 32 bytes, got ${seed.length}`);
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return { privateKey, publicKey: spki.subarray(SPKI_PREFIX.length).toString("hex") as PublicKeyHex };
}

/** The raw seed of a signing key, for saving it to a key file. */
export function seedOf(key: SigningKey): Uint8Array {
  const der = key.privateKey.export({ format: "der", type: "pkcs8" });
  return new Uint8Array(der.subarray(PKCS8_PREFIX.length));
}

const publicKeyCache = new Map<string, KeyObject>();

function publicKeyObject(publicKey: string): KeyObject | undefined {
  const cached = publicKeyCache.get(publicKey);
  if (cached) return cached;
  const raw = fromHex(publicKey, 32);
  if (!raw) return undefined;
  let keyObject: KeyObject;
  try {
    keyObject = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
  } catch {
    return undefined;
  }
  if (publicKeyCache.size > 4096) publicKeyCache.clear();
  publicKeyCache.set(publicKey, keyObject);
  return keyObject;
}

/** Signs TAG(domain) ‖ body; returns 128 lowercase hex. */
export function signTagged(key: SigningKey, domain: DomainTag, body: string | Uint8Array): string {
  return sign(null, tagged(domain, body), key.privateKey).toString("hex");
}

/** Verifies a signature over TAG(domain) ‖ body. Malformed keys or signatures verify as false, never throw. */
export function verifyTagged(
  publicKey: string,
  domain: DomainTag,
  body: string | Uint8Array,
  signature: string,
): boolean {
  const keyObject = publicKeyObject(publicKey);
  const sig = fromHex(signature, 64);
  if (!keyObject || !sig) return false;
  try {
    return verify(null, tagged(domain, body), keyObject, sig);
  } catch {
    return false;
  }
}

/**
 * Signs the exact bytes given, with no domain tag: only for formats that carry their own domain separation and are
 * checked by other implementations, namely C2SP signed notes (src/core/chain/note.ts), whose signature covers the
 * note text and whose key hash binds the key name and algorithm. Everything of berth's own signs with `signTagged`.
 */
export function signUntagged(key: SigningKey, body: Uint8Array): Buffer {
  return sign(null, body, key.privateKey);
}

/** The verifier of `signUntagged`. Malformed keys or signatures verify as false, never throw. */
export function verifyUntagged(publicKey: string, body: Uint8Array, signature: Uint8Array): boolean {
  const keyObject = publicKeyObject(publicKey);
  if (!keyObject || signature.length !== 64) return false;
  try {
    return verify(null, body, keyObject, signature);
  } catch {
    return false;
  }
}

/**
 * Signing and verifying TAG(domain) ‖ the bytes of a hex body of a fixed length, the message built in one buffer per
 * domain instead of being decoded, allocated and concatenated on every call: the audit chain signs one 32-byte event
 * hash per event, and that copying was most of what an append cost beyond the signature itself (issue 19). Both are
 * synchronous, so no two calls ever share the buffer. A body that is not lowercase hex of `bodyBytes` bytes throws
 * (sign) or verifies as false (verify), as `fromHex` would have it.
 */
export function hexBodySignatures(
  domain: DomainTag,
  bodyBytes: number,
): {
  sign(key: SigningKey, bodyHex: string): string;
  verify(publicKey: string, bodyHex: string, signature: string): boolean;
} {
  const prefix = tagPrefix(domain);
  const message = Buffer.alloc(prefix.length + bodyBytes);
  prefix.copy(message);
  const load = (bodyHex: string): boolean =>
    isLowerHex(bodyHex, bodyBytes) && message.write(bodyHex, prefix.length, bodyBytes, "hex") === bodyBytes;
  return {
    sign(key, bodyHex) {
      if (!load(bodyHex)) throw new Error(`a ${domain} body must be ${bodyBytes * 2} lowercase hex`);
      return sign(null, message, key.privateKey).toString("hex");
    },
    verify(publicKey, bodyHex, signature) {
      const keyObject = publicKeyObject(publicKey);
      const sig = fromHex(signature, 64);
      if (!keyObject || !sig || !load(bodyHex)) return false;
      try {
        return verify(null, message, keyObject, sig);
      } catch {
        return false;
      }
    },
  };
}

declare const nodeIdBrand: unique symbol;
/** 32 lowercase hex: the first 16 bytes of SHA-256 of the raw public key. Only derivable from a key. */
export type NodeId = string & { readonly [nodeIdBrand]: true };

export function nodeIdOf(publicKey: PublicKeyHex): NodeId {
  const raw = fromHex(publicKey, 32);
  if (!raw) throw new Error("not an Ed25519 public key");
  return sha256(raw).subarray(0, 16).toString("hex") as NodeId;
}
