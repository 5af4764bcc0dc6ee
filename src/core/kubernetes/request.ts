/**
 * The provider-protocol request (spec/kubernetes.md §3.4), parsed in the dispatch order of §3.2: the relay-mesh refusal
 * runs on the raw value before the typed parse, so it fires even when the rest of the request is broken.
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";
import { serdeRequestVerdict } from "./serde-request.js";

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

export type RequestParse = Result<ProviderRequest>;

/**
 * Stage 5 (A4): an unknown op and wrong or missing fields are answered here, before any config is read, with serde's
 * first error as Buzz's provider gives it (main.rs at block/buzz@3fac2c2: `could not understand the request: {e}`;
 * serde-request.ts). zod then types what serde would have accepted.
 */
export function parseRequest(raw: unknown): RequestParse {
  const bad = (detail: string): RequestParse => ({ ok: false, error: `could not understand the request: ${detail}` });
  const verdict = serdeRequestVerdict(raw);
  if (!verdict.ok) return bad(verdict.error);
  if (verdict.value === "info") return { ok: true, value: { op: "info" } };
  const parsed = DeploySchema.safeParse(raw);
  if (!parsed.success) return bad(parsed.error.issues[0]?.message ?? "invalid request");
  return { ok: true, value: parsed.data };
}
