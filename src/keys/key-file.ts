/**
 * Identity key files: an Ed25519 seed in a small JSON document, mode 0600, in a directory of mode 0700
 * (spec/audit-chain.md §2). A key file readable by group or others is refused, with the command that fixes it.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { nodeIdOf, type PublicKeyHex, type SigningKey, seedOf, signingKeyFromSeed } from "../core/crypto/ed25519.js";
import { fromHex, toHex } from "../core/crypto/hex.js";

export const KEY_FILE_FORMAT = "berth.key.v1";

const KeyFileSchema = z.strictObject({
  format: z.literal(KEY_FILE_FORMAT),
  type: z.literal("ed25519"),
  seed: z.string().regex(/^[0-9a-f]{64}$/, "seed must be 64 lowercase hex characters"),
  public_key: z.string().regex(/^[0-9a-f]{64}$/, "public_key must be 64 lowercase hex characters"),
});

export class KeyFileError extends Error {
  override name = "KeyFileError";
}

export function generateSigningKey(): SigningKey {
  return signingKeyFromSeed(randomBytes(32));
}

/** Writes a new key file; refuses to overwrite an existing one (a lost identity key cannot be recovered). */
export function saveKeyFile(path: string, key: SigningKey, options: { overwrite?: boolean } = {}): void {
  if (existsSync(path) && !options.overwrite) {
    throw new KeyFileError(`${path} already exists; refusing to overwrite an identity key (move it away first if you really mean to)`);
  }
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const doc = { format: KEY_FILE_FORMAT, type: "ed25519", seed: toHex(seedOf(key)), public_key: key.publicKey };
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, flag: options.overwrite ? "w" : "wx" });
  chmodSync(path, 0o600);
}

export function loadKeyFile(path: string): SigningKey {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    throw new KeyFileError(`key file ${path} does not exist; create one with \`berth keys new --key-file ${path}\``);
  }
  if ((mode & 0o077) !== 0) {
    throw new KeyFileError(
      `key file ${path} is readable by group or others (mode ${(mode & 0o777).toString(8)}); run \`chmod 600 ${path}\` and try again`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new KeyFileError(`key file ${path} is not valid JSON; it should be a ${KEY_FILE_FORMAT} document written by \`berth keys new\``);
  }
  const parsed = KeyFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KeyFileError(`key file ${path}: field ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const key = signingKeyFromSeed(fromHex(parsed.data.seed, 32) as Uint8Array);
  if (key.publicKey !== parsed.data.public_key) {
    throw new KeyFileError(`key file ${path}: field public_key does not belong to the seed; the file is corrupted`);
  }
  return key;
}

export function describeKey(key: SigningKey): { public_key: PublicKeyHex; id: string } {
  return { public_key: key.publicKey, id: nodeIdOf(key.publicKey) };
}
