/**
 * RFC 8785 canonical JSON (JCS), restricted to what berth ever hashes or signs (spec/audit-chain.md §4):
 * integers within ±(2^53−1) only, plain objects and arrays, no lone surrogates, nesting ≤ 32.
 *
 * `canonicalize` 4.0.0 does the serialisation; this module first proves the value is representable,
 * because the library happily serialises 1.5, NaN-as-null or a lone surrogate that another
 * implementation would encode differently — and a hash is only portable if every verifier agrees.
 */
import type { Result } from "../../kit/result.js";
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

/**
 * One pass that proves the value representable and writes its JCS form. For the restricted value set above, RFC 8785
 * reduces to: members sorted by UTF-16 code units (JavaScript's default sort), strings escaped as JSON.stringify does,
 * integers in plain decimal. The `canonicalize` package (4.0.0) is the reference implementation: a property test
 * checks this writer against it on arbitrary values. It is not used on the hot path because the audit chain calls
 * this once per event and the combined check-then-serialise cost dominated append time.
 *
 * The path of the value being written is kept as a stack of segments and joined only for an error (issue 19): a
 * decision event over 100 targets has tens of thousands of members, and building each one's path text cost more than
 * writing it.
 */
function write(value: unknown, at: Array<string | number>, depth: number): string {
  if (depth > MAX_DEPTH) throw new CanonicalError(pathOf(at), `nesting deeper than ${MAX_DEPTH} levels`);
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (Object.is(value, -0)) return "0";
      if (!Number.isSafeInteger(value))
        throw new CanonicalError(pathOf(at), `${String(value)} is not an integer within ±(2^53−1)`);
      return String(value);
    case "string":
      if (LONE_SURROGATE.test(value)) throw new CanonicalError(pathOf(at), "string holds a lone surrogate");
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          at.push(i);
          out += (i ? "," : "") + write(value[i], at, depth + 1);
          at.pop();
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new CanonicalError(pathOf(at), "not a plain object");
      const keys = Object.keys(value).sort();
      let out = "{";
      let first = true;
      for (const key of keys) {
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined) throw new CanonicalError(pathOf([...at, key]), "undefined is not JSON");
        if (LONE_SURROGATE.test(key)) throw new CanonicalError(pathOf(at), "member name holds a lone surrogate");
        at.push(key);
        out += `${first ? "" : ","}${JSON.stringify(key)}:${write(item, at, depth + 1)}`;
        at.pop();
        first = false;
      }
      return `${out}}`;
    }
    default:
      throw new CanonicalError(pathOf(at), `${typeof value} is not JSON`);
  }
}

/** `.a[0].b`: member names after a dot, array indices in brackets (what the error names). */
const pathOf = (at: ReadonlyArray<string | number>) =>
  at.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("");

/** The canonical text of a JSON value; throws CanonicalError naming the offending path. */
export function canonicalJson(value: unknown): string {
  return write(value, [], 0);
}

/** The reference serialiser (the `canonicalize` package), for cross-checking in tests. */
export function referenceCanonicalJson(value: unknown): string | undefined {
  return canonicalizeLib(value);
}

/**
 * Parses text that must already be canonical: the fixed-point rule of spec/audit-chain.md §4.
 * Duplicate member names, whitespace, or a different number form all break the fixed point and are refused.
 */
export function parseCanonical(text: string): Result<JsonValue> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: "not valid JSON" };
  }
  try {
    if (canonicalJson(value) !== text) return { ok: false, error: "not in canonical form (RFC 8785)" };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : "not representable" };
  }
  return { ok: true, value: value as JsonValue };
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
