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
  relay_url: z.string({ error: (i) => (i.input === undefined ? "missing field `relay_url`" : "relay_url must be a string") }),
  private_key_nsec: z.string({ error: (i) => (i.input === undefined ? "missing field `private_key_nsec`" : "private_key_nsec must be a string") }),
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

function describe(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  const issue = issues[0];
  if (!issue) return "invalid request";
  const where = issue.path.length ? `${issue.path.map(String).join(".")}: ` : "";
  return `${where}${issue.message}`;
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
    const shown = typeof op === "string" && /^[A-Za-z0-9_.-]{1,32}$/.test(op) ? JSON.stringify(op) : `of type ${Array.isArray(op) ? "array" : op === null ? "null" : typeof op}`;
    return bad(`unknown op ${shown}, expected "info" or "deploy"`);
  }
  const parsed = DeploySchema.safeParse(raw);
  if (!parsed.success) return bad(describe(parsed.error.issues));
  return { ok: true, request: parsed.data };
}
