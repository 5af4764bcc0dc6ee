/**
 * Buzz's provider protocol (spec/kubernetes.md §3): one JSON request in, exactly one JSON answer line out. Stages run in
 * the dispatch order of §3.2 and each refuses before the next runs; nothing touches the cluster before stage 11.
 * Answers hold catalogued texts only: never an env value, the nsec, an auth tag, or kubelet/registry text.
 */
import type { Result } from "../kit/result.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { configSchema, namespacePrefill, parseProviderConfig } from "../core/kubernetes/config.js";
import { buildEnv } from "../core/kubernetes/env.js";
import { identityFromNsec } from "../core/kubernetes/naming.js";
import { checkIdentityPolicy, IDENTITY_ERRORS } from "../core/kubernetes/identity-policy.js";
import { type DeployRequest, isRelayMesh, parseRequest, RELAY_MESH_REFUSAL } from "../core/kubernetes/request.js";
import { serdeJsonError } from "../core/kubernetes/serde-json.js";
import type { K8sAudit } from "./audit.js";
import type { Cluster } from "./cluster.js";
import type { Clock } from "../kit/clock.js";
import type { Logger } from "../kit/log.js";
import { deploy } from "./converge.js";
import { LOOP_RESERVE_SECONDS, PROVIDER_ANSWER_BY_SECONDS, type K8sSettings } from "./settings.js";

export const STDIN_CAP_BYTES = 8 * 1024 * 1024;
export const PROTOCOL_VERSION = 1;
export const DESCRIPTION = "Runs agents as pods in a Kubernetes cluster";

export interface ProviderDeps {
  readonly clock: Clock;
  /** Monotonic reading at process start: the provider's budget is measured from here (P-2). */
  readonly processStartedAt: number;
  readonly settings: K8sSettings;
  readonly version: string;
  readonly log: Logger;
  readonly random32: () => number;
  /** Six random values for the namespace prefill. */
  readonly randomChars: () => number[];
  /** The chain a deploy writes ahead into (created on first use, or a fallback home); throws when none opens (E1). */
  readonly openAudit: () => K8sAudit;
  /** The chain a refusal is recorded in: only one that already exists, so a refusal never creates a home (18.7). */
  readonly openExistingAudit: () => K8sAudit | null;
  readonly connect: (context: string | null) => Promise<Result<Cluster>>;
}

export type StdinRead = Result<{ readonly bytes: Buffer; readonly oversized: boolean }>;

export type ProviderResult = { kind: "answer"; answer: JsonObject } | { kind: "unreadable"; stderr: string };

const failure = (error: string): ProviderResult => ({ kind: "answer", answer: { ok: false, error } });

/**
 * Buzz reads stdin with `read_to_string`, so bytes that are not UTF-8 are a failed read (exit 1, Rust's io error text),
 * not a JSON error (main.rs at block/buzz@3fac2c2).
 */
const NOT_UTF8 = "stream did not contain valid UTF-8";

function utf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** Stage 3: serde_json's verdict first (its text is A2's detail, never quoting the input), then the value. */
function parseJson(bytes: Buffer, text: string): Result<unknown> {
  const serde = serdeJsonError(bytes);
  if (serde !== null) return { ok: false, error: serde };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    // Unreachable while serde-json.ts accepts a subset of what JSON.parse does; kept as a refusal, never a crash.
    return { ok: false, error: "syntax error" };
  }
}

export async function handleProviderRequest(
  args: readonly string[],
  stdin: StdinRead,
  deps: ProviderDeps,
): Promise<ProviderResult> {
  // Stage 1: the only non-zero exit.
  if (!stdin.ok) return { kind: "unreadable", stderr: `could not read the request from stdin: ${stdin.error}` };
  const text = utf8(stdin.value.bytes);
  if (text === null && !stdin.value.oversized)
    return { kind: "unreadable", stderr: `could not read the request from stdin: ${NOT_UTF8}` };
  // Stage 2 (issue 34): exactly `--check-identity` is the local identity preflight (no audit, no cluster), as the pilot
  // line's main.rs (block/buzz@3fac2c2). Any other arguments are ignored, as baseline Buzz's main.rs
  // (zbkilla/buzz@2d88ec7d) never reads them — except that `--check-identity` with company is A1: a caller asking
  // for a preflight must never get a deploy.
  if (args.length === 1 && args[0] === "--check-identity")
    return checkIdentityOnly(stdin.value.bytes, text ?? "", deps);
  if (args.includes("--check-identity")) return failure(catalogue.A1());
  // Stage 3.
  if (stdin.value.oversized) return failure(catalogue.A2(`the request is larger than ${STDIN_CAP_BYTES} bytes`));
  const json = parseJson(stdin.value.bytes, text ?? "");
  if (!json.ok) return failure(catalogue.A2(json.error));
  const raw = json.value;
  // Stage 4, on the raw value: fires even when the nsec is invalid.
  if (isRelayMesh(raw)) return failure(RELAY_MESH_REFUSAL);
  // Stage 5.
  const parsed = parseRequest(raw);
  if (!parsed.ok) return failure(parsed.error);
  const request = parsed.value;
  // Stage 6: pure, no cluster, no audit, no config.
  if (request.op === "info") {
    return {
      kind: "answer",
      answer: {
        ok: true,
        name: "kubernetes",
        version: deps.version,
        protocol_version: PROTOCOL_VERSION,
        description: DESCRIPTION,
        config_schema: configSchema(namespacePrefill(deps.randomChars())) as JsonObject,
      },
    };
  }
  // Stages 7–9.
  const config = parseProviderConfig(request.provider_config);
  if (!config.ok) return refuse(deps, config.error);
  const identity = identityFromNsec(request.agent.private_key_nsec);
  if (!identity.ok) return refuse(deps, catalogue.C1());
  // The optional identity policy, before any cluster contact (issue 18.5).
  const policy = checkIdentityPolicy(
    policyInputs(request, identity.value.pubkey),
    false,
    Math.floor(deps.clock.wallNow() / 1000),
  );
  if (!policy.ok) return refuse(deps, policy.error, identity.value.pubkey);
  // Built with a throw-away generation so that the size cap counts the nonce too.
  const env = buildEnv(request.agent, config.value, "00000000");
  if (!env.ok) return refuse(deps, env.error, identity.value.pubkey);
  // Stage 10.
  let audit: K8sAudit;
  try {
    audit = deps.openAudit();
  } catch (error) {
    return failure(catalogue.E1(error instanceof Error ? error.message : String(error)));
  }
  try {
    // Stage 11: the budget is measured from process start.
    const connection = await deps.connect(config.value.context);
    if (!connection.ok) {
      await recordRefusal(audit, deps, connection.error, identity.value.pubkey);
      return failure(connection.error);
    }
    const cluster = connection.value;
    try {
      const answerBySeconds = Math.min(deps.settings.deadlineSeconds, PROVIDER_ANSWER_BY_SECONDS);
      const report = await deploy(
        { identity: identity.value, config: config.value, env: env.value },
        {
          cluster,
          clock: deps.clock,
          audit,
          log: deps.log,
          random32: deps.random32,
          wait: deps.settings.wait,
          mode: "provider-protocol",
          version: deps.version,
        },
        {
          startedAt: deps.processStartedAt,
          loopDeadlineAt: deps.processStartedAt + (answerBySeconds - LOOP_RESERVE_SECONDS) * 1000,
          deadlineSeconds: deps.settings.deadlineSeconds,
        },
      );
      const a = report.answer;
      return { kind: "answer", answer: a.ok ? { ok: true, agent_id: a.agentId } : { ok: false, error: a.error } };
    } finally {
      cluster.close();
    }
  } finally {
    await audit.close();
  }
}

function policyInputs(request: DeployRequest, agentPubkey: string) {
  const config = request.provider_config;
  return {
    agentPubkey,
    authTag: request.agent.auth_tag,
    launchOwner: request.agent.launch?.owner_pubkey,
    policy:
      typeof config === "object" && config !== null && !Array.isArray(config)
        ? (config as Record<string, unknown>).identity_policy
        : undefined,
  };
}

/** `--check-identity`: Buzz's local preflight — the deploy request's identity checked against a required policy. */
function checkIdentityOnly(bytes: Buffer, text: string, deps: ProviderDeps): ProviderResult {
  const json = parseJson(bytes, text);
  if (!json.ok) return failure(IDENTITY_ERRORS.preflightInvalidRequest);
  const raw = json.value;
  const parsed = parseRequest(raw);
  if (!parsed.ok) return failure(IDENTITY_ERRORS.preflightInvalidRequest);
  if (parsed.value.op !== "deploy") return failure(IDENTITY_ERRORS.preflightNeedsDeploy);
  const request = parsed.value;
  const identity = identityFromNsec(request.agent.private_key_nsec);
  if (!identity.ok) return failure(catalogue.C1());
  const verdict = checkIdentityPolicy(
    policyInputs(request, identity.value.pubkey),
    true,
    Math.floor(deps.clock.wallNow() / 1000),
  );
  // Only the public pod identity comes back (Buzz: `Response::deployed(identity.pod_name())`).
  return verdict.ok
    ? { kind: "answer", answer: { ok: true, agent_id: identity.value.podName } }
    : failure(verdict.error);
}

async function recordRefusal(audit: K8sAudit, deps: ProviderDeps, error: string, pubkey?: string): Promise<void> {
  try {
    await audit.record("k8s.deploy.outcome", {
      ...(pubkey ? { agent_pubkey: pubkey } : {}),
      mode: "provider-protocol",
      berth_version: deps.version,
      ok: false,
      error,
      created_this_call: false,
      last_action: "refused",
      api_requests: 0,
    });
  } catch (e) {
    deps.log.warn("could not record a refused deploy", { error: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * Refusals at stages 7–9 are recorded as deploy outcomes, best effort (§3.2): in the chain if one already exists, else
 * only in the bounded stderr log. A failure to record changes nothing, and nothing is created on the caller's disk.
 */
async function refuse(deps: ProviderDeps, error: string, pubkey?: string): Promise<ProviderResult> {
  try {
    const audit = deps.openExistingAudit();
    if (audit === null) {
      deps.log.info("refused before any cluster contact; no audit chain exists yet, so none was created", { error });
      return failure(error);
    }
    try {
      await recordRefusal(audit, deps, error, pubkey);
    } finally {
      await audit.close();
    }
  } catch (e) {
    deps.log.warn("could not open the audit chain to record a refused deploy", {
      error: e instanceof Error ? e.message : String(e),
    });
  }
  return failure(error);
}
