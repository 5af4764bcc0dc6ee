/**
 * The provider-protocol request (spec/kubernetes.md §3.4), parsed in the dispatch order of §3.2: the relay-mesh refusal
 * runs on the raw value before the typed parse, so it fires even when the rest of the request is broken.
 */
import { z } from "zod";

const NullableString = z.string().nullish();
const StringMap = z.record(z.string(), z.string());

export const LaunchSchema = z.looseObject({
  command: NullableString,
  args: z.array(z.string()).nullish(),
  env: StringMap.nullish(),
  policy_env: StringMap.nullish(),
  owner_pubkey: NullableString,
});

export const AgentSchema = z.looseObject({
  relay_url: z.string(),
  private_key_nsec: z.string(),
  auth_tag: NullableString,
  respond_to: NullableString,
  respond_to_allowlist: z.array(z.string()).nullish(),
  env_vars: StringMap.nullish(),
  launch: LaunchSchema.nullish(),
});
export type AgentSpec = z.infer<typeof AgentSchema>;

const DeploySchema = z.looseObject({
  op: z.literal("deploy"),
  request_id: z.unknown().optional(),
  agent: AgentSchema,
  provider_config: z.unknown().default(null),
});
export type DeployRequest = z.infer<typeof DeploySchema>;

export type ProviderRequest = { op: "info" } | DeployRequest;

export const RELAY_MESH_REFUSAL =
  "deploy refused: this agent is configured for shared compute (relay-mesh), which runs on the relay rather than in a pod. Switch the agent to a local runtime before deploying it to Kubernetes.";

/** Stage 4: `agent.provider` is a string whose trimmed value is `relay-mesh`, on the raw JSON value. */
export function isRelayMesh(raw: unknown): boolean {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return false;
  const agent = (raw as Record<string, unknown>).agent;
  if (typeof agent !== "object" || agent === null || Array.isArray(agent)) return false;
  const provider = (agent as Record<string, unknown>).provider;
  return typeof provider === "string" && provider.trim() === "relay-mesh";
}

export type RequestParse = { ok: true; request: ProviderRequest } | { ok: false; error: string };

/**
 * serde's wording (what Buzz's provider answers, main.rs at block/buzz@3fac2c2: `could not understand the request: {e}`
 * with serde_json's message), with the field's path appended, since berth knows it: "where berth knows more, append,
 * never replace" (issue 18.6). A string value is never echoed (it may be a key).
 */
function describe(issues: ReadonlyArray<{ path: PropertyKey[]; message: string; code?: string; expected?: string; input?: unknown }>): string {
  const issue = issues[0];
  if (!issue) return "invalid request";
  const where = issue.path.length ? ` (at ${issue.path.map(String).join(".")})` : "";
  const field = String(issue.path.at(-1) ?? "");
  if (issue.code === "invalid_type" && issue.input === undefined) return `missing field \`${field}\`${where}`;
  if (issue.code === "invalid_type") {
    const expected = issue.expected === "string" ? "a string" : issue.expected === "array" ? "a sequence" : issue.expected === "record" || issue.expected === "object" ? "a map" : (issue.expected ?? "another type");
    return `invalid type: ${serdeKind(issue.input)}, expected ${expected}${where}`;
  }
  return `${issue.message}${where}`;
}

/** How serde_json names an unexpected JSON value (`Unexpected`), without echoing strings. */
function serdeKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "sequence";
  if (typeof v === "boolean") return `boolean \`${v}\``;
  if (typeof v === "number") return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === "string") return "a string";
  return "map";
}

/** Stage 5 (A4): an unknown op and missing required fields are answered here, before any config is read. */
export function parseRequest(raw: unknown): RequestParse {
  const bad = (detail: string): RequestParse => ({ ok: false, error: `could not understand the request: ${detail}` });
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return bad("the request must be a JSON object");
  const op = (raw as Record<string, unknown>).op;
  if (op === undefined) return bad("missing field `op`");
  if (op === "info") return { ok: true, request: { op: "info" } };
  // The op is echoed only when it is plainly a word: a request is never echoed wholesale (it may carry a key).
  if (op !== "deploy") {
    // serde's unknown-variant text, as Buzz answers; only a plain word is echoed.
    if (typeof op === "string" && /^[A-Za-z0-9_.-]{1,32}$/.test(op)) return bad(`unknown variant \`${op}\`, expected \`info\` or \`deploy\``);
    return bad(`unknown op of type ${Array.isArray(op) ? "array" : op === null ? "null" : typeof op}, expected \`info\` or \`deploy\``);
  }
  const parsed = DeploySchema.safeParse(raw);
  if (!parsed.success) return bad(describe(parsed.error.issues));
  return { ok: true, request: parsed.data };
}
