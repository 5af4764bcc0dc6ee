/**
 * The API's bearer token (issue 8 §2): `$BERTH_HOME/api.token`, created at first start with mode 0600 and refused
 * when group or others can read it, like berth's key files. The token is never logged; the audit chain and the logs
 * name a caller by `token:` + the first 8 hex of SHA-256(token).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { err, ok, type Result } from "../kit/result.js";

export const TOKEN_FILE = "api.token";
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,128}$/;

export class TokenFileError extends Error {
  override name = "TokenFileError";
}

/** Reads the token file, creating it (0600) when absent. Throws `TokenFileError` with what to do. */
export function loadOrCreateToken(dataDir: string): string {
  const path = join(dataDir, TOKEN_FILE);
  if (!existsSync(path)) {
    if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(path, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(path, 0o600);
  }
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new TokenFileError(
      `token file ${path} is readable by group or others (mode ${mode.toString(8)}); run \`chmod 600 ${path}\` and start again`,
    );
  }
  const token = readFileSync(path, "utf8").trim();
  if (!TOKEN_PATTERN.test(token)) {
    throw new TokenFileError(
      `token file ${path} does not hold a token (32–128 characters of A-Z a-z 0-9 _ -); delete it and a new one is created at the next start`,
    );
  }
  return token;
}

/** The caller's name in the audit chain and the logs: never the token itself. */
export function tokenId(token: string): string {
  return `token:${createHash("sha256").update(token).digest("hex").slice(0, 8)}`;
}

/** Whether the header carries the token, or why not (each reason its own refusal text). */
export type BearerCheck = Result<void, "missing" | "malformed" | "wrong">;

/** Compares in constant time over SHA-256 digests (equal lengths whatever the caller sent). */
export function checkBearer(header: string | undefined, token: string): BearerCheck {
  if (header === undefined || header === "") return err("missing");
  const m = /^Bearer ([A-Za-z0-9_.~+/-]+=*)$/.exec(header);
  if (!m?.[1]) return err("malformed");
  const a = createHash("sha256").update(m[1]).digest();
  const b = createHash("sha256").update(token).digest();
  return timingSafeEqual(a, b) ? ok() : err("wrong");
}
