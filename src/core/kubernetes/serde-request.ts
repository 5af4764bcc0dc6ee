/**
 * How Buzz's typed request parse refuses a JSON value (issue 18.6): `serde_json::from_value::<Request>` over the
 * types of crates/buzz-backend-kubernetes/src/wire.rs (read at 5dive-ai/buzz@02b860dd, the fork the stored index holds
 * whole; block/buzz@3fac2c2's main.rs and identity.rs use the same fields). Desktop shows the text verbatim, so the
 * first error and its wording are serde's:
 *
 * - `Request` is internally tagged by `op`: the tag is read first wherever it sits (`unknown variant ...`,
 *   `invalid type: ..., expected variant identifier`, `missing field \`op\``), the rest is buffered;
 * - a struct's fields are visited in the map's order — serde_json's `Map` is a `BTreeMap` (no `preserve_order`), so
 *   sorted keys — and the first wrong type wins; only then is the first missing required field (declaration order)
 *   named; unknown fields are ignored;
 * - `#[serde(default)]` on a non-`Option` field means absent is the default but `null` is a type error; an `Option`
 *   takes `null`; buffered `null` is serde's "unit value".
 *
 * berth appends where it knows more — ` (at agent.env_vars)` — and withholds what serde would quote from a string
 * value (it may be a key): `string (value withheld)`.
 */
import type { Result } from "../../kit/result.js";

type Shape =
  | { readonly kind: "string" }
  | { readonly kind: "option"; readonly of: Shape }
  | { readonly kind: "seq"; readonly of: Shape }
  | { readonly kind: "map"; readonly of: Shape }
  | { readonly kind: "any" }
  | {
      readonly kind: "struct";
      readonly name: string;
      readonly fields: ReadonlyArray<readonly [string, Shape, "required" | "default"]>;
    };

const STRING: Shape = { kind: "string" };
const option = (of: Shape): Shape => ({ kind: "option", of });
const seq = (of: Shape): Shape => ({ kind: "seq", of });
const map = (of: Shape): Shape => ({ kind: "map", of });

const LAUNCH_BLOCK: Shape = {
  kind: "struct",
  name: "LaunchBlock",
  fields: [
    ["command", option(STRING), "default"],
    ["args", seq(STRING), "default"],
    ["env", map(STRING), "default"],
    ["policy_env", map(STRING), "default"],
    ["owner_pubkey", option(STRING), "default"],
  ],
};

const AGENT_PAYLOAD: Shape = {
  kind: "struct",
  name: "AgentPayload",
  fields: [
    ["relay_url", STRING, "required"],
    ["private_key_nsec", STRING, "required"],
    ["auth_tag", option(STRING), "default"],
    ["respond_to", option(STRING), "default"],
    ["respond_to_allowlist", option(seq(STRING)), "default"],
    ["env_vars", map(STRING), "default"],
    ["launch", option(LAUNCH_BLOCK), "default"],
  ],
};

const DEPLOY_REQUEST: Shape = {
  kind: "struct",
  name: "DeployRequest",
  fields: [
    ["agent", AGENT_PAYLOAD, "required"],
    ["provider_config", { kind: "any" }, "default"],
  ],
};

class Refused extends Error {}

/** serde's `Unexpected` for a JSON value, a string's content withheld. */
export function unexpected(v: unknown): string {
  if (v === null) return "unit value";
  if (Array.isArray(v)) return "sequence";
  if (typeof v === "boolean") return `boolean \`${v}\``;
  if (typeof v === "number") return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === "string") return "string (value withheld)";
  return "map";
}

function expected(shape: Shape): string {
  switch (shape.kind) {
    case "string":
      return "a string";
    case "seq":
      return "a sequence";
    case "map":
      return "a map";
    case "struct":
      return `struct ${shape.name}`;
    case "option":
      return expected(shape.of);
    case "any":
      return "any valid JSON value";
  }
}

/** A map key in the path only when it is plainly an upper-case env name: a lower-case key could be an nsec. */
const segment = (key: string) => (/^[A-Z_][A-Z0-9_]{0,63}$/.test(key) ? key : "…");

function check(v: unknown, shape: Shape, path: readonly string[]): void {
  const where = path.length ? ` (at ${path.join(".")})` : "";
  const wrong = (): never => {
    throw new Refused(`invalid type: ${unexpected(v)}, expected ${expected(shape)}${where}`);
  };
  switch (shape.kind) {
    case "any":
      return;
    case "string":
      if (typeof v !== "string") wrong();
      return;
    case "option":
      if (v !== null) check(v, shape.of, path);
      return;
    case "seq":
      if (!Array.isArray(v)) wrong();
      for (const [i, item] of (v as unknown[]).entries()) check(item, shape.of, [...path, String(i)]);
      return;
    case "map":
      if (typeof v !== "object" || v === null || Array.isArray(v)) wrong();
      for (const key of Object.keys(v as object).sort())
        check((v as Record<string, unknown>)[key], shape.of, [...path, segment(key)]);
      return;
    case "struct": {
      // A sequence is a struct's other serde form; berth does not take a request positionally (see parseRequest).
      if (typeof v !== "object" || v === null || Array.isArray(v)) wrong();
      const rec = v as Record<string, unknown>;
      const known = new Map(shape.fields.map((f) => [f[0], f] as const));
      for (const key of Object.keys(rec).sort()) {
        const field = known.get(key);
        if (field) check(rec[key], field[1], [...path, key]);
      }
      for (const [name, , presence] of shape.fields) {
        if (presence === "required" && !(name in rec))
          throw new Refused(`missing field \`${name}\`${path.length ? ` (at ${[...path, name].join(".")})` : ""}`);
      }
      return;
    }
  }
}

export type SerdeVerdict = Result<"info" | "deploy">;

/** The op's own refusal: serde's unknown-variant text, echoing the op only when it is plainly a word. */
function opVerdict(op: unknown): SerdeVerdict {
  if (op === "info" || op === "deploy") return { ok: true, value: op };
  if (typeof op === "string") {
    const shown = /^[A-Za-z0-9_.-]{1,32}$/.test(op) ? op : "…";
    return { ok: false, error: `unknown variant \`${shown}\`, expected \`info\` or \`deploy\`` };
  }
  return { ok: false, error: `invalid type: ${unexpected(op)}, expected variant identifier` };
}

/** serde's first refusal of `raw` as a `Request`, or the op when it would deserialize. */
export function serdeRequestVerdict(raw: unknown): SerdeVerdict {
  if (Array.isArray(raw)) {
    // The tag of a sequence is its first element; [] has none.
    if (raw.length === 0) return { ok: false, error: "missing field `op`" };
    const tag = opVerdict(raw[0]);
    return tag.ok ? { ok: false, error: "the request must be a JSON object" } : tag;
  }
  if (typeof raw !== "object" || raw === null)
    return { ok: false, error: `invalid type: ${unexpected(raw)}, expected internally tagged enum Request` };
  const rec = raw as Record<string, unknown>;
  if (!("op" in rec)) return { ok: false, error: "missing field `op`" };
  const tag = opVerdict(rec.op);
  if (!tag.ok || tag.value === "info") return tag;
  const { op: _op, ...content } = rec;
  try {
    check(content, DEPLOY_REQUEST, []);
  } catch (error) {
    if (error instanceof Refused) return { ok: false, error: error.message };
    throw error;
  }
  return tag;
}
