/**
 * Stages 4–9 of §3.2 for callers other than the provider protocol (`berth k8s deploy FILE`, `replace --file`):
 * the same refusals with the same texts, from a file shaped like the deploy request.
 */
import type { Result } from "../kit/result.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { parseProviderConfig } from "../core/kubernetes/config.js";
import { buildEnv } from "../core/kubernetes/env.js";
import { type DesiredIntent, desiredIntent } from "../core/kubernetes/intent.js";
import { checkIdentityPolicy } from "../core/kubernetes/identity-policy.js";
import { identityFromNsec } from "../core/kubernetes/naming.js";
import { isRelayMesh, parseRequest, RELAY_MESH_REFUSAL } from "../core/kubernetes/request.js";
import type { DeployInputs } from "./converge.js";

/** `fingerprint` is what a create records; `intent` adds the recorded values that mean the same (issue 18.2). */
export type Prepared = Result<{
  readonly inputs: DeployInputs;
  readonly fingerprint: string;
  readonly intent: DesiredIntent;
}>;

export function prepareDeploy(raw: unknown, opts: { requireCommand: boolean; nowMs?: number }): Prepared {
  const withOp =
    typeof raw === "object" && raw !== null && !Array.isArray(raw)
      ? { op: "deploy", ...(raw as Record<string, unknown>) }
      : raw;
  if (isRelayMesh(withOp)) return { ok: false, error: RELAY_MESH_REFUSAL };
  const parsed = parseRequest(withOp);
  if (!parsed.ok) return parsed;
  if (parsed.value.op !== "deploy")
    return { ok: false, error: 'could not understand the request: a deploy file must have op "deploy" or no op' };
  const req = parsed.value;
  const config = parseProviderConfig(req.provider_config);
  if (!config.ok) return config;
  const identity = identityFromNsec(req.agent.private_key_nsec);
  if (!identity.ok) return { ok: false, error: catalogue.C1() };
  const config0 = req.provider_config;
  const policy = checkIdentityPolicy(
    {
      agentPubkey: identity.value.pubkey,
      authTag: req.agent.auth_tag,
      launchOwner: req.agent.launch?.owner_pubkey,
      policy:
        typeof config0 === "object" && config0 !== null && !Array.isArray(config0)
          ? (config0 as Record<string, unknown>).identity_policy
          : undefined,
    },
    false,
    Math.floor((opts.nowMs ?? Date.now()) / 1000),
  );
  if (!policy.ok) return policy;
  // P-19: without launch.command the harness defaults to a binary the stock image lacks, so "started" proves little.
  if (opts.requireCommand && (req.agent.launch?.command ?? "").trim() === "") {
    return {
      ok: false,
      error:
        "agent.launch.command is required for berth k8s deploy: without it the harness runs a default agent binary the stock image does not contain",
    };
  }
  const env = buildEnv(req.agent, config.value, "00000000");
  if (!env.ok) return env;
  const inputs: DeployInputs = { identity: identity.value, config: config.value, env: env.value };
  const intent = desiredIntent(config.value, Object.keys(env.value));
  return { ok: true, value: { inputs, fingerprint: intent.fingerprint, intent } };
}
