/**
 * Identity key files: an Ed25519 seed in a small JSON document, mode 0600, in a directory of mode 0700
 * (spec/audit-chain.md §2). Refused, each with the command that fixes it: a key file readable by group or others, a
 * symbolic link in place of the key file, and a key in a directory that group or others can write.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { type SigningKey, seedOf, signingKeyFromSeed } from "../core/crypto/ed25519.js";
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
    throw new KeyFileError(
      `${path} already exists; refusing to overwrite an identity key (move it away first if you really mean to)`,
    );
  }
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const doc = { format: KEY_FILE_FORMAT, type: "ed25519", seed: toHex(seedOf(key)), public_key: key.publicKey };
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, flag: options.overwrite ? "w" : "wx" });
  chmodSync(path, 0o600);
}

export function loadKeyFile(path: string): SigningKey {
  let st: ReturnType<typeof lstatSync>;
  try {
    // lstat: a link is judged as a link, never by the file it points to (issue 12).
    st = lstatSync(path);
  } catch {
    throw new KeyFileError(`key file ${path} does not exist; create one with \`berth keys new --key-file ${path}\``);
  }
  if (st.isSymbolicLink()) {
    throw new KeyFileError(
      `key file ${path} is a symbolic link (to ${readlinkSync(path)}); an identity key is read only from a regular file: move the key itself to ${path}`,
    );
  }
  if (!st.isFile()) throw new KeyFileError(`key file ${path} is not a regular file`);
  const mode = st.mode;
  if ((mode & 0o077) !== 0) {
    throw new KeyFileError(
      `key file ${path} is readable by group or others (mode ${(mode & 0o777).toString(8)}); run \`chmod 600 ${path}\` and try again`,
    );
  }
  // Whoever can write the directory can swap the key file for their own (issue 12), unless the directory is sticky
  // (like /tmp) and the file is ours: then only its owner can rename or delete it.
  const dir = dirname(path);
  const dirMode = statSync(dir).mode;
  const stickyAndOurs = (dirMode & 0o1000) !== 0 && st.uid === process.getuid?.();
  if ((dirMode & 0o022) !== 0 && !stickyAndOurs) {
    throw new KeyFileError(
      `the directory ${dir} of key file ${path} is writable by group or others (mode ${(dirMode & 0o777).toString(8)}), so the key could be replaced; run \`chmod go-w ${dir}\` and try again`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new KeyFileError(
      `key file ${path} is not valid JSON; it should be a ${KEY_FILE_FORMAT} document written by \`berth keys new\``,
    );
  }
  const parsed = KeyFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KeyFileError(
      `key file ${path}: field ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
    );
  }
  const key = signingKeyFromSeed(fromHex(parsed.data.seed, 32) as Uint8Array);
  if (key.publicKey !== parsed.data.public_key) {
    throw new KeyFileError(`key file ${path}: field public_key does not belong to the seed; the file is corrupted`);
  }
  return key;
}
