import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildEnv, RESERVED_KEYS } from "./env.js";
import type { AgentSpec } from "./request.js";
import { agentA, agentB, GOLDEN_NSEC } from "../../../test/support/kubernetes/fixtures.js";

const cfg = { inactivitySeconds: 7200 };
const errorOf = (agent: AgentSpec) => {
  const r = buildEnv(agent, cfg, "0f3a91cc");
  return r.ok ? null : r.error;
};
const envOf = (agent: AgentSpec) => {
  const r = buildEnv(agent, cfg, "0f3a91cc");
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const HEX = "b".repeat(64);

describe("environment building (spec/kubernetes.md §13)", () => {
  it("writes the reserved keys of vector A", () => {
    expect(envOf(agentA())).toEqual({
      BUZZ_RELAY_URL: "wss://relay.example",
      BUZZ_PRIVATE_KEY: GOLDEN_NSEC,
      NOSTR_PRIVATE_KEY: GOLDEN_NSEC,
      BUZZ_ACP_AGENT_OWNER: "a".repeat(64),
      BUZZ_ACP_MCP_COMMAND: "buzz-dev-mcp",
      BUZZ_ACP_EXIT_AFTER_INACTIVITY: "7200",
      BUZZ_MANAGED_AGENT_START_NONCE: "0f3a91cc",
    });
  });

  it("stores the nsec exactly as sent, padding included", () => {
    expect(envOf({ ...agentA(), private_key_nsec: ` ${GOLDEN_NSEC} ` }).BUZZ_PRIVATE_KEY).toBe(` ${GOLDEN_NSEC} `);
  });

  it("tier 2 overrides tier 1, and legacy env_vars are ignored when launch exists", () => {
    const a = agentA();
    const env = envOf({
      ...a,
      env_vars: { LEGACY: "1" },
      launch: { ...a.launch, policy_env: { X: "1", Y: "1" }, env: { X: "2" } },
    });
    expect(env.X).toBe("2");
    expect(env.Y).toBe("1");
    expect(env.LEGACY).toBeUndefined();
    expect(envOf({ ...a, launch: null, auth_tag: "tag", env_vars: { LEGACY: "1" } }).LEGACY).toBe("1");
  });

  it("D1 refuses a non-POSIX key and D2 the presence opt-out in any case", () => {
    const a = agentA();
    expect(errorOf({ ...a, launch: { ...a.launch, env: { "my.key": "v" } } })).toBe(
      'env key "my.key" is not a POSIX environment variable name ([A-Za-z_][A-Za-z0-9_]*); Kubernetes would treat it inconsistently across cluster versions',
    );
    expect(errorOf({ ...a, launch: { ...a.launch, policy_env: { buzz_acp_no_presence: "1" } } })).toMatch(
      /^BUZZ_ACP_NO_PRESENCE must not be set/,
    );
  });

  it("checks keys in ascending order, D1 before D2 per key", () => {
    const a = agentA();
    expect(errorOf({ ...a, launch: { ...a.launch, env: { BUZZ_ACP_NO_PRESENCE: "1", "z.z": "1" } } })).toMatch(
      /^BUZZ_ACP_NO_PRESENCE/,
    );
    expect(errorOf({ ...a, launch: { ...a.launch, env: { "A.b": "1", BUZZ_ACP_NO_PRESENCE: "1" } } })).toMatch(
      /^env key "A.b"/,
    );
  });

  it("D3 refuses a blank relay and D4 a missing owner", () => {
    expect(errorOf({ ...agentA(), relay_url: "  " })).toBe(
      "deploy refused: relay_url is empty — the agent would have no relay to connect to",
    );
    expect(errorOf({ ...agentA(), launch: { owner_pubkey: " " } })).toBe(
      "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner the agent cannot honor !shutdown",
    );
    expect(errorOf({ ...agentA(), launch: null, auth_tag: "tag" })).toBeNull();
  });

  it.each([
    ["allowlist with an empty list", { respond_to: "allowlist", respond_to_allowlist: [] }, "D6"],
    ["allowlist with no list", { respond_to: "allowlist" }, "D6"],
    ["allowlist with junk", { respond_to: "allowlist", respond_to_allowlist: ["junk"] }, "D7"],
    ["allowlist with an npub", { respond_to: "allowlist", respond_to_allowlist: ["npub1abc"] }, "D7"],
    ["a padded mode", { respond_to: " allowlist ", respond_to_allowlist: [HEX] }, "D5"],
    ["an upper-case mode", { respond_to: "OWNER-ONLY" }, "D5"],
  ])("refuses respond_to: %s", (_name, change, row) => {
    const text = errorOf({ ...agentA(), ...change });
    const prefix = {
      D5: "deploy refused: respond_to ",
      D6: 'deploy refused: respond_to is "allowlist" but the allowlist is empty',
      D7: "deploy refused: invalid pubkey in respond_to_allowlist",
    }[row];
    expect(text).toMatch(new RegExp(`^${prefix?.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  });

  it.each([
    ["nobody", { respond_to: "nobody" }],
    ["anyone", { respond_to: "anyone" }],
    ["owner-only with a junk list", { respond_to: "owner-only", respond_to_allowlist: ["junk"] }],
    ["padded upper-case allowlist entries", { respond_to: "allowlist", respond_to_allowlist: [` ${"B".repeat(64)} `] }],
    ["an empty mode as absence", { respond_to: "" }],
  ])("accepts respond_to: %s", (_name, change) => {
    expect(errorOf({ ...agentA(), ...change })).toBeNull();
  });

  it("writes allowlist entries raw whenever non-empty", () => {
    expect(
      envOf({ ...agentA(), respond_to: "owner-only", respond_to_allowlist: [" x", "y"] }).BUZZ_ACP_RESPOND_TO_ALLOWLIST,
    ).toBe(" x,y");
  });

  it("D8 counts value bytes against the Secret cap", () => {
    const a = agentA();
    const big = "é".repeat(600_000);
    const text = errorOf({ ...a, launch: { ...a.launch, env: { BIG: big } } });
    expect(text).toMatch(/^agent environment is \d+ bytes; Kubernetes caps Secret data at 1048576$/);
    expect(text).toContain(String(1_200_000 + Object.values(envOf(a)).reduce((n, v) => n + Buffer.byteLength(v), 0)));
  });

  it("vector B resolves to the command, args and respond-to keys", () => {
    const env = envOf(agentB());
    expect(env.BUZZ_ACP_AGENT_COMMAND).toBe("goose");
    expect(env.BUZZ_ACP_AGENT_ARGS).toBe("acp");
    expect(env.BUZZ_ACP_RESPOND_TO).toBe("allowlist");
    expect(env.BUZZ_AUTH_TAG).toBeDefined();
  });

  it("each reserved key spoofed in either tier ends overwritten or absent", () => {
    const key = fc.constantFrom(...RESERVED_KEYS);
    fc.assert(
      fc.property(fc.dictionary(key, fc.string()), fc.dictionary(key, fc.string()), (tier1, tier2) => {
        const a = agentA();
        const env = envOf({ ...a, launch: { ...a.launch, policy_env: tier1, env: tier2 } });
        const clean = envOf(a);
        for (const k of RESERVED_KEYS) expect(env[k]).toBe(clean[k]);
      }),
    );
  });
});

// Buzz's newer launch contract, crates/buzz-backend-kubernetes/src/env.rs at block/buzz@50e9d36df2c5fe07243717a851b8d330187cc428:
// args with a comma go through BUZZ_ACP_AGENT_ARGS_JSON (a JSON array) with BUZZ_ACP_AGENT_ARGS "acp", and the JSON key
// is authoritative (tier 3 clears it).
describe("arguments that contain commas (issue 18.1, Buzz env.rs)", () => {
  const withArgs = (args: string[], env: Record<string, string> = {}) => {
    const a = agentA();
    return envOf({ ...a, launch: { ...a.launch, command: "goose", args, env } });
  };

  it("an argument with a comma is sent as a JSON array, and the comma-joined key falls back to acp", () => {
    const env = withArgs(["--config=a,b", "--safe", "on"]);
    expect(env.BUZZ_ACP_AGENT_ARGS_JSON).toBe('["--config=a,b","--safe","on"]');
    expect(JSON.parse(env.BUZZ_ACP_AGENT_ARGS_JSON ?? "")).toEqual(["--config=a,b", "--safe", "on"]);
    expect(env.BUZZ_ACP_AGENT_ARGS).toBe("acp");
  });

  it("arguments without commas are comma-joined as before and no JSON key is written", () => {
    const env = withArgs(["acp", "--safe"]);
    expect(env.BUZZ_ACP_AGENT_ARGS).toBe("acp,--safe");
    expect(env).not.toHaveProperty("BUZZ_ACP_AGENT_ARGS_JSON");
  });

  it("a launch.env BUZZ_ACP_AGENT_ARGS_JSON never reaches the Secret: the key is reserved", () => {
    expect(withArgs(["acp"], { BUZZ_ACP_AGENT_ARGS_JSON: '["--evil"]' })).not.toHaveProperty(
      "BUZZ_ACP_AGENT_ARGS_JSON",
    );
    expect(withArgs([], { BUZZ_ACP_AGENT_ARGS_JSON: '["--evil"]' })).not.toHaveProperty("BUZZ_ACP_AGENT_ARGS_JSON");
    expect(withArgs(["a,b"], { BUZZ_ACP_AGENT_ARGS_JSON: '["--evil"]' }).BUZZ_ACP_AGENT_ARGS_JSON).toBe('["a,b"]');
  });
});
