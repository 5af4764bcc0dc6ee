/**
 * Buzz's provider-wire fixture set (crates/buzz-backend-kubernetes/tests/wire_fixtures.rs and
 * tests/fixtures/provider-wire/): `info`, the four response fixtures reachable without a cluster, the desktop's
 * richest payload (accepted, failing only at the connection), and the respond-to matrix. The request files are the
 * recorded ones, as Buzz's fixture directory holds them (zbkilla/buzz@2d88ec7d, a fork whose fixture directory the
 * stored index holds; `deploy-full-launch` at block/buzz@57a111ee); wire_fixtures.rs at that commit lists
 * `deploy-relay-mesh-padded` among the response fixtures, whose response file the index does not hold: its answer is
 * the relay-mesh refusal, as main.rs's `refuses_a_padded_relay_mesh_agent` (block/buzz@3fac2c2) pins. Responses are
 * the response files' texts.
 */
export interface WireFixture {
  readonly name: string;
  readonly request: unknown;
  /** The exact response, or, for the payload that reaches the connection, a pattern its error must match. */
  readonly response: { ok: false; error: string } | { reachesConnection: true };
}

const OWNER = "a".repeat(64);

export const FULL_LAUNCH = {
  op: "deploy",
  request_id: "req-6",
  agent: {
    agent_args: [],
    agent_command: "goose",
    auth_tag: "tag-1",
    env_vars: { USER_KEY: "user-value" },
    idle_timeout_seconds: null,
    launch: {
      args: ["acp"],
      command: "goose",
      env: { GOOSE_MODEL: "gpt-5", GOOSE_PROVIDER: "openai", USER_KEY: "user-value" },
      owner_pubkey: OWNER,
      policy_env: {
        BUZZ_ACP_AGENTS: "10",
        BUZZ_ACP_DISPLAY_NAME: "worker",
        BUZZ_ACP_LAZY_POOL: "true",
        BUZZ_ACP_MODEL: "gpt-5",
        BUZZ_ACP_PERMISSION_POLICY: "ask",
        BUZZ_ACP_RELAY_OBSERVER: "true",
        BUZZ_ACP_SESSION_POLICY: "channel",
        BUZZ_ACP_SESSION_TITLE: "worker",
        GOOSE_MODE: "auto",
      },
    },
    max_turn_duration_seconds: null,
    model: "gpt-5",
    name: "worker",
    parallelism: 10,
    private_key_nsec: "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5",
    provider: "openai",
    relay_url: "wss://relay.example",
    respond_to: "allowlist",
    respond_to_allowlist: [OWNER, "b".repeat(64)],
    system_prompt: null,
    turn_timeout_seconds: 300,
  },
  provider_config: {
    namespace: "buzz-agents-test",
    image: `ghcr.io/block/buzz-sprig@sha256:${"a".repeat(64)}`,
    inactivity_seconds: 3600,
  },
};

const RELAY_MESH =
  "deploy refused: this agent is configured for shared compute (relay-mesh), which runs on the relay rather than in a pod. Switch the agent to a local runtime before deploying it to Kubernetes.";

const RECORDED_CONFIG = { namespace: "buzz-agents-test", image: `ghcr.io/block/buzz-sprig@sha256:${"a".repeat(64)}` };

export const BUZZ_WIRE_FIXTURES: readonly WireFixture[] = [
  {
    name: "deploy-relay-mesh",
    request: {
      op: "deploy",
      request_id: "req-2",
      agent: {
        name: "mesh-agent",
        relay_url: "wss://relay.example",
        private_key_nsec: FULL_LAUNCH.agent.private_key_nsec,
        auth_tag: "tag-1",
        provider: "relay-mesh",
      },
      provider_config: RECORDED_CONFIG,
    },
    response: { ok: false, error: RELAY_MESH },
  },
  {
    name: "deploy-relay-mesh-padded",
    request: {
      op: "deploy",
      request_id: "req-3",
      agent: {
        relay_url: "wss://relay.example",
        private_key_nsec: FULL_LAUNCH.agent.private_key_nsec,
        auth_tag: "tag-1",
        provider: "  relay-mesh  ",
      },
      provider_config: RECORDED_CONFIG,
    },
    response: { ok: false, error: RELAY_MESH },
  },
  {
    name: "deploy-tag-image",
    request: {
      op: "deploy",
      request_id: "req-4",
      agent: {
        relay_url: "wss://relay.example",
        private_key_nsec: FULL_LAUNCH.agent.private_key_nsec,
        auth_tag: "tag-1",
      },
      provider_config: { namespace: "buzz-agents-test", image: "ghcr.io/block/buzz-sprig:latest" },
    },
    response: {
      ok: false,
      error:
        'provider_config.image "ghcr.io/block/buzz-sprig:latest" is not digest-pinned: a tag is a mutable pointer, and this object runs with the agent\'s private key. Use name@sha256:<64 hex chars>',
    },
  },
  {
    name: "deploy-no-owner",
    request: {
      op: "deploy",
      request_id: "req-5",
      agent: { relay_url: "wss://relay.example", private_key_nsec: FULL_LAUNCH.agent.private_key_nsec },
      provider_config: RECORDED_CONFIG,
    },
    response: {
      ok: false,
      error:
        "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner the agent cannot honor !shutdown",
    },
  },
  { name: "deploy-full-launch", request: FULL_LAUNCH, response: { reachesConnection: true } },
];

/** info.request.json, as recorded. */
export const INFO_REQUEST = { op: "info", request_id: "req-1" };

/**
 * wire_fixtures.rs `the_respond_to_gate_matches_the_harness_acceptance_surface` (zbkilla/buzz@2d88ec7d): each case is
 * the full-launch request with `respond_to` and `respond_to_allowlist` replaced (null for an absent list); a case that
 * must not reach the cluster is refused with a "deploy refused" text, one that must reaches the kubeconfig.
 */
export const RESPOND_TO_MATRIX: ReadonlyArray<{
  name: string;
  mode: string;
  allowlist: string[] | null;
  reachesCluster: boolean;
}> = [
  { name: "allowlist + []", mode: "allowlist", allowlist: [], reachesCluster: false },
  { name: "allowlist + absent", mode: "allowlist", allowlist: null, reachesCluster: false },
  { name: "allowlist + junk", mode: "allowlist", allowlist: ["beefcafe"], reachesCluster: false },
  { name: "unparseable mode", mode: "npub1abc", allowlist: null, reachesCluster: false },
  { name: "padded mode", mode: " allowlist ", allowlist: null, reachesCluster: false },
  {
    name: "allowlist + two valid",
    mode: "allowlist",
    allowlist: ["a".repeat(64), "b".repeat(64)],
    reachesCluster: true,
  },
  { name: "owner-only + junk list", mode: "owner-only", allowlist: ["beefcafe"], reachesCluster: true },
  { name: "allowlist + padded upper", mode: "allowlist", allowlist: [`  ${"A".repeat(64)}  `], reachesCluster: true },
  { name: "nobody", mode: "nobody", allowlist: null, reachesCluster: true },
  { name: "anyone", mode: "anyone", allowlist: null, reachesCluster: true },
];

export function respondToRequest(c: (typeof RESPOND_TO_MATRIX)[number]): unknown {
  return { ...FULL_LAUNCH, agent: { ...FULL_LAUNCH.agent, respond_to: c.mode, respond_to_allowlist: c.allowlist } };
}
