/**
 * Buzz's provider-wire fixture set (crates/buzz-backend-kubernetes/tests/wire_fixtures.rs and
 * tests/fixtures/provider-wire/, read at block/buzz and its fork 5dive-ai/buzz@02b860dd): `info`, four refusals reachable
 * without a cluster, and the desktop's richest payload, which must be accepted and fail only at the connection.
 *
 * `deploy-full-launch` is the request file verbatim (block/buzz@57a111ee). The stored index does not hold the other
 * request files, so they are rebuilt from what pins them: the relay-mesh requests are the ones of main.rs's own tests
 * (block/buzz@3fac2c2, `refuses_a_relay_mesh_agent`, `refuses_a_padded_relay_mesh_agent`), the tag-image and no-owner
 * requests are the full payload with the one field changed their names say; the responses are Buzz's texts
 * (main.rs `refuse_relay_mesh`, image.rs, env.rs at 50e9d36).
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

export const BUZZ_WIRE_FIXTURES: readonly WireFixture[] = [
  {
    name: "deploy-relay-mesh",
    request: { op: "deploy", agent: { relay_url: "wss://r", private_key_nsec: "nsec1x", provider: "relay-mesh" }, provider_config: { namespace: "ns" } },
    response: { ok: false, error: RELAY_MESH },
  },
  {
    name: "deploy-relay-mesh-padded",
    request: { op: "deploy", agent: { relay_url: "wss://r", private_key_nsec: "nsec1x", provider: "  relay-mesh  " }, provider_config: { namespace: "ns" } },
    response: { ok: false, error: RELAY_MESH },
  },
  {
    name: "deploy-tag-image",
    request: { ...FULL_LAUNCH, provider_config: { ...FULL_LAUNCH.provider_config, image: "ghcr.io/block/buzz-sprig:latest" } },
    response: {
      ok: false,
      error:
        'provider_config.image "ghcr.io/block/buzz-sprig:latest" is not digest-pinned: a tag is a mutable pointer, and this object runs with the agent\'s private key. Use name@sha256:<64 hex chars>',
    },
  },
  {
    name: "deploy-no-owner",
    request: { ...FULL_LAUNCH, agent: { ...FULL_LAUNCH.agent, auth_tag: null, launch: { ...FULL_LAUNCH.agent.launch, owner_pubkey: null } } },
    response: { ok: false, error: "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner the agent cannot honor !shutdown" },
  },
  { name: "deploy-full-launch", request: FULL_LAUNCH, response: { reachesConnection: true } },
];
