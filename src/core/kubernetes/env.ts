/**
 * The agent's environment (spec/kubernetes.md §13), resolved in berth because a Secret's data map has no precedence of its
 * own: tier 1 `launch.policy_env`, tier 2 `launch.env` (or legacy `env_vars` when there is no `launch`), tier 3 the
 * reserved keys — all fourteen removed first, then written from the request, so no lower tier can spoof them.
 */
import type { Result } from "../../kit/result.js";
import type { ProviderConfig } from "./config.js";
import type { AgentSpec } from "./request.js";

export const RESERVED_KEYS = [
  "BUZZ_RELAY_URL",
  "BUZZ_PRIVATE_KEY",
  "NOSTR_PRIVATE_KEY",
  "BUZZ_AUTH_TAG",
  "BUZZ_ACP_AGENT_OWNER",
  "BUZZ_ACP_AGENT_COMMAND",
  "BUZZ_ACP_AGENT_ARGS",
  // Newer Buzz (env.rs at 50e9d36) owns this key too: a lower tier must not smuggle an argument vector past tier 3.
  "BUZZ_ACP_AGENT_ARGS_JSON",
  "BUZZ_ACP_RESPOND_TO",
  "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
  "BUZZ_ACP_MCP_COMMAND",
  "BUZZ_ACP_MCP_SERVERS_FILE",
  "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
  "BUZZ_MANAGED_AGENT_START_NONCE",
] as const;

export const NONCE_KEY = "BUZZ_MANAGED_AGENT_START_NONCE";
export const SECRET_DATA_CAP = 1_048_576;
const POSIX_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESPOND_TO_MODES = ["owner-only", "allowlist", "anyone", "nobody"] as const;
const HEX64_ANY_CASE = /^[0-9a-fA-F]{64}$/;

export type AgentEnv = Readonly<Record<string, string>>;
export type EnvResult = Result<AgentEnv>;

const nonBlank = (v: string | null | undefined): string | null => {
  const t = (v ?? "").trim();
  return t === "" ? null : t;
};

/** Sorted by UTF-16 code unit, which equals byte order for the ASCII keys that pass D1. */
export function sortKeys(keys: Iterable<string>): string[] {
  return [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * Builds the final env for one attempt. `generation` is the attempt's nonce; validation (stage 9) runs it with a
 * throw-away generation so that D8 counts the nonce's bytes too. Refusal order: D1/D2 → D3 → D4 → D5 → D6 → D7 → D8.
 */
export function buildEnv(
  agent: AgentSpec,
  config: Pick<ProviderConfig, "inactivitySeconds">,
  generation: string,
): EnvResult {
  const fail = (error: string): EnvResult => ({ ok: false, error });
  const launch = agent.launch ?? null;
  const tier1 = launch?.policy_env ?? {};
  // `env_vars` is legacy: never merged when `launch` exists.
  const tier2 = launch ? (launch.env ?? {}) : (agent.env_vars ?? {});
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries(tier1)) merged[k] = v;
  for (const [k, v] of Object.entries(tier2)) merged[k] = v;
  for (const key of sortKeys(Object.keys(merged))) {
    if (!POSIX_KEY.test(key)) {
      return fail(
        `env key ${JSON.stringify(key)} is not a POSIX environment variable name ([A-Za-z_][A-Za-z0-9_]*); Kubernetes would treat it inconsistently across cluster versions`,
      );
    }
    // Presence is the only signal that a remote agent is alive.
    if (key.toUpperCase() === "BUZZ_ACP_NO_PRESENCE") {
      return fail(
        "BUZZ_ACP_NO_PRESENCE must not be set on a remote agent: presence is the only signal that a remote agent is alive",
      );
    }
  }
  for (const key of RESERVED_KEYS) delete merged[key];

  const relay = nonBlank(agent.relay_url);
  if (relay === null) return fail("deploy refused: relay_url is empty — the agent would have no relay to connect to");
  const authTag = nonBlank(agent.auth_tag);
  const owner = nonBlank(launch?.owner_pubkey);
  if (authTag === null && owner === null) {
    return fail(
      "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner the agent cannot honor !shutdown",
    );
  }
  const respondTo = agent.respond_to ?? "";
  if (respondTo !== "" && !(RESPOND_TO_MODES as readonly string[]).includes(respondTo)) {
    return fail(
      `deploy refused: respond_to ${JSON.stringify(respondTo)} is not a mode the harness accepts (expected one of owner-only, allowlist, anyone, nobody) — the pod would fail to parse its arguments, be replaced, and leave a Secret behind on every attempt`,
    );
  }
  const allowlist = agent.respond_to_allowlist ?? [];
  if (respondTo === "allowlist") {
    if (allowlist.length === 0) {
      return fail(
        'deploy refused: respond_to is "allowlist" but the allowlist is empty — the harness refuses this at startup, so the pod would fail, be replaced, and leave a Secret behind on every attempt',
      );
    }
    for (const entry of allowlist) {
      if (!HEX64_ANY_CASE.test(entry.trim())) {
        return fail(
          `deploy refused: invalid pubkey in respond_to_allowlist: ${JSON.stringify(entry)} (must be exactly 64 hex characters)`,
        );
      }
    }
  }

  merged.BUZZ_RELAY_URL = relay;
  // Stored exactly as sent (P-20): the harness decodes it itself.
  merged.BUZZ_PRIVATE_KEY = agent.private_key_nsec;
  merged.NOSTR_PRIVATE_KEY = agent.private_key_nsec;
  if (authTag !== null) merged.BUZZ_AUTH_TAG = authTag;
  if (owner !== null) merged.BUZZ_ACP_AGENT_OWNER = owner;
  const command = launch?.command ?? "";
  if (command.trim() !== "") merged.BUZZ_ACP_AGENT_COMMAND = command;
  const args = launch?.args ?? [];
  if (args.length > 0) {
    if (args.some((a) => a.includes(","))) {
      // A comma join cannot carry these: newer harnesses read the JSON array, older ones fall back to plain `acp`
      // (Buzz's env.rs at 50e9d36 writes exactly this pair).
      merged.BUZZ_ACP_AGENT_ARGS_JSON = JSON.stringify(args);
      merged.BUZZ_ACP_AGENT_ARGS = "acp";
    } else {
      merged.BUZZ_ACP_AGENT_ARGS = args.join(",");
    }
  }
  if (respondTo !== "") merged.BUZZ_ACP_RESPOND_TO = respondTo;
  if (allowlist.length > 0) merged.BUZZ_ACP_RESPOND_TO_ALLOWLIST = allowlist.join(",");
  merged.BUZZ_ACP_MCP_COMMAND = "buzz-dev-mcp";
  merged.BUZZ_ACP_EXIT_AFTER_INACTIVITY = String(config.inactivitySeconds);
  merged[NONCE_KEY] = generation;

  let bytes = 0;
  for (const v of Object.values(merged)) bytes += utf8Length(v);
  if (bytes > SECRET_DATA_CAP)
    return fail(`agent environment is ${bytes} bytes; Kubernetes caps Secret data at 1048576`);
  return { ok: true, value: merged };
}

/** A copy of `env` stamped with another attempt's generation (§8.7 step 2). */
export function withGeneration(env: AgentEnv, generation: string): AgentEnv {
  return { ...env, [NONCE_KEY]: generation };
}
