/**
 * The exported Merkle checkpoint (issue 38): a C2SP tlog-checkpoint carried in a C2SP signed note, so that any
 * implementation of those formats (for instance golang.org/x/mod/sumdb/note) can read it:
 *
 *   <origin>\n<tree size, decimal>\n<root hash, base64>\n\n— <key name> <base64(key hash ‖ Ed25519 signature)>\n
 *
 * The signature covers the note text (the three lines with their newlines). The key hash is the first 4 bytes of
 * SHA-256(key name ‖ "\n" ‖ 0x01 ‖ the 32-byte public key), 0x01 naming Ed25519. Pure.
 */
import type { Result } from "../../kit/result.js";
import { createHash } from "node:crypto";
import { type SigningKey, signUntagged, verifyUntagged } from "../crypto/ed25519.js";

const ED25519_ALG = 1;
const SIG_PREFIX = "\u2014 "; // "— ", an em dash and a space, as signed notes spell it

export interface TreeCheckpoint {
  readonly origin: string;
  readonly size: number;
  /** The RFC 6962 tree head over the chain's first `size` event hashes. */
  readonly root: Buffer;
}

/** The origin line (and key name) of a chain's checkpoints: no spaces or '+', as a note key name must be. */
export function checkpointOrigin(chainId: string): string {
  return `berth/audit/${chainId}`;
}

function keyHash(name: string, publicKeyHex: string): Buffer {
  return createHash("sha256")
    .update(`${name}\n`)
    .update(Buffer.from([ED25519_ALG]))
    .update(Buffer.from(publicKeyHex, "hex"))
    .digest()
    .subarray(0, 4);
}

function noteText(cp: TreeCheckpoint): string {
  return `${cp.origin}\n${cp.size}\n${cp.root.toString("base64")}\n`;
}

export function signCheckpointNote(key: SigningKey, cp: TreeCheckpoint): string {
  const text = noteText(cp);
  const sig = signUntagged(key, Buffer.from(text, "utf8"));
  const name = cp.origin;
  return `${text}\n${SIG_PREFIX}${name} ${Buffer.concat([keyHash(name, key.publicKey), sig]).toString("base64")}\n`;
}

export type NoteOutcome = Result<TreeCheckpoint>;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Reads a checkpoint note and checks its signature under `publicKeyHex`: a note is accepted only when one of its
 * signature lines has this key's hash under its own name and verifies. Every refusal names the line at fault.
 */
export function openCheckpointNote(note: string, publicKeyHex: string): NoteOutcome {
  const fail = (reason: string): NoteOutcome => ({ ok: false, error: reason });
  const split = note.indexOf("\n\n");
  if (split < 0) return fail("not a signed note: no blank line between the text and the signatures");
  const text = note.slice(0, split + 1);
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3)
    return fail(`the checkpoint has ${lines.length} lines of text; it needs origin, tree size and root hash`);
  const [origin, sizeLine, rootLine] = lines as [string, string, string];
  if (origin.length === 0 || /\s/.test(origin)) return fail("line 1 (origin) must be a non-empty name without spaces");
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine)))
    return fail(`line 2 (tree size) must be a decimal integer, got ${JSON.stringify(sizeLine)}`);
  const root = BASE64.test(rootLine) ? Buffer.from(rootLine, "base64") : Buffer.alloc(0);
  if (root.length !== 32 || root.toString("base64") !== rootLine)
    return fail("line 3 (root hash) must be 32 bytes in base64");
  const sigLines = note.slice(split + 2).split("\n");
  if (sigLines[sigLines.length - 1] === "") sigLines.pop();
  if (sigLines.length === 0) return fail("the note carries no signature line");
  const message = Buffer.from(text, "utf8");
  for (const [i, line] of sigLines.entries()) {
    const m = line.startsWith(SIG_PREFIX) ? /^(\S+) (\S+)$/.exec(line.slice(SIG_PREFIX.length)) : null;
    if (!m) return fail(`signature line ${i + 1} is not "— <key name> <base64>"`);
    const [, name, b64] = m as unknown as [string, string, string];
    const blob = BASE64.test(b64) ? Buffer.from(b64, "base64") : Buffer.alloc(0);
    if (blob.length !== 68) continue; // another algorithm's signature: not ours to check
    if (!blob.subarray(0, 4).equals(keyHash(name, publicKeyHex))) continue;
    if (verifyUntagged(publicKeyHex, message, blob.subarray(4)))
      return { ok: true, value: { origin, size: Number(sizeLine), root } };
    return fail(`signature line ${i + 1} (${name}) names the key ${publicKeyHex} but does not verify under it`);
  }
  return fail(`no signature line is by the key ${publicKeyHex}`);
}
