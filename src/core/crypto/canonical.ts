/**
 * RFC 8785 canonical JSON (JCS), restricted to what berth ever hashes or signs (audit-chain.md §4):
 * integers within ±(2^53−1) only, plain objects and arrays, no lone surrogates, nesting ≤ 32.
 *
 * `canonicalize` 4.0.0 does the serialisation; this module first proves the value is representable,
 * because the library happily serialises 1.5, NaN-as-null or a lone surrogate that another
 * implementation would encode differently — and a hash is only portable if every verifier agrees.
 */
import canonicalizeLib from "canonicalize";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const MAX_DEPTH = 32;

export class CanonicalError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path || "value"}: ${reason}`);
    this.name = "CanonicalError";
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function assertRepresentable(value: unknown, path: string, depth: number): void {
  if (depth > MAX_DEPTH) throw new CanonicalError(path, `nesting deeper than ${MAX_DEPTH} levels`);
  if (value === null || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) && !Object.is(value, -0)) {
      throw new CanonicalError(path, `${String(value)} is not an integer within ±(2^53−1)`);
    }
    return;
  }
  if (typeof value === "string") {
    if (LONE_SURROGATE.test(value)) throw new CanonicalError(path, "string holds a lone surrogate");
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) assertRepresentable(item, `${path}[${i}]`, depth + 1);
    return;
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new CanonicalError(path, "not a plain object");
    for (const [key, item] of Object.entries(value)) {
      if (LONE_SURROGATE.test(key)) throw new CanonicalError(path, `member name holds a lone surrogate`);
      if (item === undefined) throw new CanonicalError(`${path}.${key}`, "undefined is not JSON");
      assertRepresentable(item, `${path}.${key}`, depth + 1);
    }
    return;
  }
  throw new CanonicalError(path, `${typeof value} is not JSON`);
}

/** The canonical text of a JSON value; throws CanonicalError naming the offending path. */
export function canonicalJson(value: unknown): string {
  assertRepresentable(value, "", 0);
  const text = canonicalizeLib(value);
  if (text === undefined) throw new CanonicalError("", "value has no JSON form");
  return text;
}

/**
 * Parses text that must already be canonical: the fixed-point rule of audit-chain.md §4.
 * Duplicate member names, whitespace, or a different number form all break the fixed point and are refused.
 */
export function parseCanonical(text: string): { ok: true; value: JsonValue } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: "not valid JSON" };
  }
  try {
    if (canonicalJson(value) !== text) return { ok: false, reason: "not in canonical form (RFC 8785)" };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : "not representable" };
  }
  return { ok: true, value: value as JsonValue };
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
