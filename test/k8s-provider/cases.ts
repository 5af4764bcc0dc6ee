/**
 * Provider-protocol cases reachable without a cluster (spec/kubernetes.md §3.6, §19.2): each request and the exact answer
 * line it must produce. The expected texts are written out here from the catalogue, not computed by berth.
 */
export const NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
export const IMAGE =
  "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";
const OWNER = "a".repeat(64);
const DIGEST = "17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";

export interface Case {
  readonly name: string;
  readonly args?: string[];
  /** A request object, or raw stdin text. */
  readonly stdin: unknown;
  readonly error: string;
}

const agent = (extra: Record<string, unknown> = {}) => ({
  relay_url: "wss://relay.example",
  private_key_nsec: NSEC,
  launch: { owner_pubkey: OWNER },
  ...extra,
});
const deploy = (
  agentExtra: Record<string, unknown> = {},
  config: unknown = { namespace: "buzz-agents-test", image: IMAGE },
) => ({
  op: "deploy",
  request_id: "r-1",
  agent: agent(agentExtra),
  provider_config: config,
});
const cfg = (extra: Record<string, unknown>) => ({ namespace: "buzz-agents-test", image: IMAGE, ...extra });

export const CASES: Case[] = [
  // issue 34: extra arguments are ignored, as baseline Buzz's main.rs (zbkilla/buzz@2d88ec7d) never reads them: the
  // request is answered in normal mode (here its malformed JSON).
  {
    name: "extra arguments are ignored",
    args: ["--verbose", "deploy"],
    stdin: "{",
    error: "request is not valid JSON: EOF while parsing an object at line 1 column 1",
  },
  {
    name: "A1 two arguments, --check-identity among them",
    args: ["--check-identity", "--verbose"],
    stdin: { op: "info" },
    error: "unsupported provider arguments",
  },
  // Buzz main.rs at block/buzz@3fac2c2 (check_identity): the preflight needs a deploy request and a policy.
  {
    name: "--check-identity on info",
    args: ["--check-identity"],
    stdin: { op: "info" },
    error: "identity preflight requires a deploy request",
  },
  {
    name: "--check-identity on malformed JSON",
    args: ["--check-identity"],
    stdin: "{",
    error: "invalid identity preflight request",
  },
  {
    name: "--check-identity without a policy",
    args: ["--check-identity"],
    stdin: deploy(),
    error: "identity preflight requires an approved identity_policy",
  },
  // serde_json's texts, as Buzz answers them (main.rs at block/buzz@3fac2c2: `request is not valid JSON: {e}`).
  {
    name: "A2 malformed JSON",
    stdin: `{"op":"deploy","agent":{"private_key_nsec":"${NSEC}"`,
    error: "request is not valid JSON: EOF while parsing an object at line 1 column 108",
  },
  {
    name: "A2 empty input",
    stdin: "",
    error: "request is not valid JSON: EOF while parsing a value at line 1 column 0",
  },
  {
    name: "A2 not JSON (Buzz's malformed_input_is_an_in_band_error)",
    stdin: "not json",
    error: "request is not valid JSON: expected ident at line 1 column 2",
  },
  {
    name: "A2 a lone surrogate JSON.parse would take",
    stdin: '{"op":"info","x":"\\udc00"}',
    error: "request is not valid JSON: lone leading surrogate in hex escape at line 1 column 24",
  },
  {
    name: "A3 relay-mesh even with an invalid nsec",
    stdin: { op: "deploy", agent: { provider: "  relay-mesh\n", private_key_nsec: "not-a-key", relay_url: "x" } },
    error:
      "deploy refused: this agent is configured for shared compute (relay-mesh), which runs on the relay rather than in a pod. Switch the agent to a local runtime before deploying it to Kubernetes.",
  },
  {
    name: "A4 unknown op",
    stdin: { op: "destroy" },
    error: "could not understand the request: unknown variant `destroy`, expected `info` or `deploy`",
  },
  { name: "A4 missing op", stdin: { agent: {} }, error: "could not understand the request: missing field `op`" },
  {
    name: "A4 an array's first element is serde's tag",
    stdin: [1, 2],
    error: "could not understand the request: invalid type: integer `1`, expected variant identifier",
  },
  {
    name: "A4 a string",
    stdin: '"deploy"',
    error:
      "could not understand the request: invalid type: string (value withheld), expected internally tagged enum Request",
  },
  {
    name: "A4 a wrong type wins over a missing field (serde visits fields before naming the missing)",
    stdin: { op: "deploy", agent: { private_key_nsec: 7 } },
    error: "could not understand the request: invalid type: integer `7`, expected a string (at agent.private_key_nsec)",
  },
  {
    name: "A4 a defaulted map refuses null (wire.rs env_vars)",
    stdin: { op: "deploy", agent: { relay_url: "wss://r", private_key_nsec: NSEC, env_vars: null } },
    error: "could not understand the request: invalid type: unit value, expected a map (at agent.env_vars)",
  },
  {
    name: "A4 missing relay_url",
    stdin: { op: "deploy", agent: { private_key_nsec: NSEC } },
    error: "could not understand the request: missing field `relay_url` (at agent.relay_url)",
  },
  {
    name: "A4 missing private_key_nsec",
    stdin: { op: "deploy", agent: { relay_url: "wss://r" } },
    error: "could not understand the request: missing field `private_key_nsec` (at agent.private_key_nsec)",
  },
  { name: "B1 config not an object", stdin: deploy({}, [1]), error: "provider_config must be a JSON object" },
  {
    name: "B2 config null",
    stdin: deploy({}, null),
    error:
      "provider_config.namespace is required: the info schema supplies a generated default, so an empty value means the form was cleared",
  },
  {
    name: "B3 bad namespace",
    stdin: deploy({}, cfg({ namespace: "Buzz_Agents" })),
    error: `provider_config.namespace "Buzz_Agents" is not a valid Kubernetes namespace (lowercase alphanumerics and '-', ≤63 characters)`,
  },
  {
    name: "B4 non-string field",
    stdin: deploy({}, cfg({ memory_limit: 4 })),
    error: "provider_config.memory_limit must be a string, got 4",
  },
  {
    name: "B5 bad integer",
    stdin: deploy({}, cfg({ inactivity_seconds: "soon" })),
    error: 'provider_config.inactivity_seconds must be a non-negative integer, got "soon"',
  },
  {
    name: "B6 zero inactivity",
    stdin: deploy({}, cfg({ inactivity_seconds: "0" })),
    error:
      "provider_config.inactivity_seconds: 0 (indefinite lifetime) is not supported in this version: it requires restartPolicy OnFailure, which is gated on the harness exit-code contract. Set a positive number of seconds.",
  },
  {
    name: "B7 missing image",
    stdin: deploy({}, { namespace: "buzz-agents-test" }),
    error:
      "provider_config.image is required: no image is assumed at parse time, so the digest-pinned image to run must be given explicitly",
  },
  {
    name: "B8 tag-only image",
    stdin: deploy({}, cfg({ image: "ghcr.io/block/buzz-sprig:latest" })),
    error:
      'provider_config.image "ghcr.io/block/buzz-sprig:latest" is not digest-pinned: a tag is a mutable pointer, and this object runs with the agent\'s private key. Use name@sha256:<64 hex chars>',
  },
  {
    name: "B9 two @",
    stdin: deploy({}, cfg({ image: `a@b@sha256:${DIGEST}` })),
    error: `provider_config.image "a@b@sha256:${DIGEST}" contains more than one '@'`,
  },
  {
    name: "B10 wrong algorithm",
    stdin: deploy({}, cfg({ image: `a@sha512:${DIGEST}` })),
    error: `provider_config.image digest "sha512:${DIGEST}" must start with 'sha256:'`,
  },
  {
    name: "B11 upper-case digest",
    stdin: deploy({}, cfg({ image: `a@sha256:${DIGEST.toUpperCase()}` })),
    error: `provider_config.image digest "sha256:${DIGEST.toUpperCase()}" must be exactly 64 lowercase hex characters`,
  },
  {
    name: "B12 no repository",
    stdin: deploy({}, cfg({ image: `@sha256:${DIGEST}` })),
    error: `provider_config.image "@sha256:${DIGEST}" has no repository name`,
  },
  {
    name: "B13 class without storage",
    stdin: deploy({}, cfg({ workspace_storage_class: "fast" })),
    error: "provider_config.workspace_storage_class requires workspace_storage",
  },
  {
    name: "B14 unknown pod option",
    stdin: deploy({}, cfg({ pod_options: { host_network: true } })),
    error: 'provider_config.pod_options: unknown key "host_network"',
  },
  {
    name: "B15 non-positive deadline",
    stdin: deploy({}, cfg({ pod_options: { active_deadline_seconds: -5 } })),
    error: "provider_config.pod_options.active_deadline_seconds must be positive",
  },
  {
    name: "B16 empty quantity",
    stdin: deploy({}, cfg({ pod_options: { ephemeral_storage_request: "" } })),
    error: "provider_config.pod_options storage quantities must not be empty",
  },
  // Buzz identity.rs at block/buzz@3fac2c2: the approved agent must be the nsec's key.
  {
    name: "identity policy naming another agent",
    stdin: deploy(
      {},
      cfg({
        identity_policy: {
          agent_pubkey: "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
          owner_pubkey: "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5",
        },
      }),
    ),
    error: "agent key does not match the approved pilot identity",
  },
  {
    name: "identity policy with a forged attestation",
    stdin: deploy(
      { auth_tag: "synthetic-secret-not-an-attestation" },
      cfg({
        identity_policy: {
          agent_pubkey: "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e",
          owner_pubkey: "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5",
        },
      }),
    ),
    error: "owner attestation verification failed",
  },
  {
    name: "C1 undecodable nsec",
    stdin: deploy({ private_key_nsec: "npub1abc" }),
    error: "private_key_nsec is not a decodable nsec1 key",
  },
  {
    name: "C1 hex key",
    stdin: deploy({ private_key_nsec: "7e".repeat(32) }),
    error: "private_key_nsec is not a decodable nsec1 key",
  },
  {
    name: "D1 non-POSIX env key",
    stdin: deploy({ launch: { owner_pubkey: OWNER, env: { "GOOSE.MODEL": "x" } } }),
    error:
      'env key "GOOSE.MODEL" is not a POSIX environment variable name ([A-Za-z_][A-Za-z0-9_]*); Kubernetes would treat it inconsistently across cluster versions',
  },
  {
    name: "D2 presence opt-out",
    stdin: deploy({ launch: { owner_pubkey: OWNER, policy_env: { Buzz_Acp_No_Presence: "1" } } }),
    error:
      "BUZZ_ACP_NO_PRESENCE must not be set on a remote agent: presence is the only signal that a remote agent is alive",
  },
  {
    name: "D3 blank relay",
    stdin: deploy({ relay_url: " " }),
    error: "deploy refused: relay_url is empty — the agent would have no relay to connect to",
  },
  {
    name: "D4 missing owner",
    stdin: deploy({ launch: null, auth_tag: "  " }),
    error:
      "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner the agent cannot honor !shutdown",
  },
  {
    name: "D5 bad respond_to",
    stdin: deploy({ respond_to: "OWNER-ONLY" }),
    error:
      'deploy refused: respond_to "OWNER-ONLY" is not a mode the harness accepts (expected one of owner-only, allowlist, anyone, nobody) — the pod would fail to parse its arguments, be replaced, and leave a Secret behind on every attempt',
  },
  {
    name: "D6 empty allowlist",
    stdin: deploy({ respond_to: "allowlist", respond_to_allowlist: [] }),
    error:
      'deploy refused: respond_to is "allowlist" but the allowlist is empty — the harness refuses this at startup, so the pod would fail, be replaced, and leave a Secret behind on every attempt',
  },
  {
    name: "D7 bad allowlist entry",
    stdin: deploy({ respond_to: "allowlist", respond_to_allowlist: ["npub1abc"] }),
    error: 'deploy refused: invalid pubkey in respond_to_allowlist: "npub1abc" (must be exactly 64 hex characters)',
  },
];
