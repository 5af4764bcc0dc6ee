/**
 * Nostr identity for the Kubernetes binding (spec/kubernetes.md §4.1): an `nsec1…` secret decodes to a secp256k1 scalar,
 * and the agent's identity is its BIP-340 x-only public key as 64 lowercase hex.
 */
import type { Result } from "../../kit/result.js";
import { schnorr, secp256k1 } from "@noble/curves/secp256k1.js";
import { bech32 } from "@scure/base";
import { toHex } from "../crypto/hex.js";

declare const agentPubkeyBrand: unique symbol;
/** 64 lowercase hex x-only secp256k1 public key, only obtainable by decoding a valid nsec. */
export type AgentPubkey = string & { readonly [agentPubkeyBrand]: true };

export type NsecDecoding = Result<AgentPubkey>;

const CURVE_ORDER = secp256k1.Point.CURVE().n;

/**
 * Trims, then accepts only lowercase bech32 (not bech32m) with HRP `nsec`, a valid checksum and a 32-byte payload
 * that is a valid secret (1 ≤ k < n). Hex keys, npub, upper or mixed case and empty input are refused.
 */
export function decodeNsec(input: string): NsecDecoding {
  const text = input.trim();
  if (text === "") return { ok: false, error: "empty" };
  if (text !== text.toLowerCase()) return { ok: false, error: "not lowercase" };
  if (!text.startsWith("nsec1")) return { ok: false, error: "not an nsec1 string" };
  let words: number[];
  try {
    // bech32 (BIP-173) checksum; a bech32m string fails here. Length limit 90 is bech32's own.
    const decoded = bech32.decode(text as `${string}1${string}`, 90);
    if (decoded.prefix !== "nsec") return { ok: false, error: "wrong human-readable part" };
    words = decoded.words;
  } catch {
    return { ok: false, error: "bad bech32 checksum or characters" };
  }
  let secret: Uint8Array;
  try {
    secret = bech32.fromWords(words);
  } catch {
    return { ok: false, error: "bad padding" };
  }
  if (secret.length !== 32) return { ok: false, error: "payload is not 32 bytes" };
  const k = BigInt(`0x${toHex(secret)}`);
  if (k === 0n || k >= CURVE_ORDER) return { ok: false, error: "not a valid secp256k1 secret" };
  return { ok: true, value: toHex(schnorr.getPublicKey(secret)) as AgentPubkey };
}

/**
 * Issue 36 item 6: the `nsec1…` text of a 32-byte secret (the caller brings the randomness), for `berth keys new
 * --nsec`, or null when the bytes are not a valid secp256k1 secret (draw again). decodeNsec accepts what this gives.
 */
export function encodeNsec(secret: Uint8Array): string | null {
  if (secret.length !== 32) return null;
  const k = BigInt(`0x${toHex(secret)}`);
  if (k === 0n || k >= CURVE_ORDER) return null;
  return bech32.encode("nsec", bech32.toWords(secret), 90);
}
