/** Shared test inputs for the Kubernetes core: the spec's golden nsec and the §9.3 worked example. */
import type { AgentSpec } from "../../../src/core/kubernetes/request.js";

export const GOLDEN_NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
export const GOLDEN_PUBKEY = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
export const GOLDEN_IMAGE_REF =
  "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";
export const GOLDEN_IMAGE =
  "ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";

/** §9.3's inputs A: Buzz's default resources, given explicitly since berth's own defaults differ (issue 34). */
export const configA = {
  namespace: "buzz-agents-test",
  image: GOLDEN_IMAGE_REF,
  cpu_request: "1",
  memory_request: "2Gi",
  cpu_limit: "2",
  memory_limit: "4Gi",
};

export function agentA(): AgentSpec {
  return { relay_url: "wss://relay.example", private_key_nsec: GOLDEN_NSEC, launch: { owner_pubkey: "a".repeat(64) } };
}

export function agentB(): AgentSpec {
  return {
    relay_url: "wss://relay.example",
    private_key_nsec: GOLDEN_NSEC,
    auth_tag: '["auth","00","",""]',
    respond_to: "allowlist",
    respond_to_allowlist: ["b".repeat(64), "c".repeat(64)],
    launch: {
      owner_pubkey: "a".repeat(64),
      command: "goose",
      args: ["acp"],
      env: { GOOSE_MODEL: "m", GOOSE_PROVIDER: "p", USER_KEY: "u" },
      policy_env: {
        BUZZ_ACP_AGENTS: "1",
        BUZZ_ACP_DISPLAY_NAME: "d",
        BUZZ_ACP_LAZY_POOL: "1",
        BUZZ_ACP_MODEL: "m",
        BUZZ_ACP_PERMISSION_POLICY: "p",
        BUZZ_ACP_RELAY_OBSERVER: "o",
        BUZZ_ACP_SESSION_POLICY: "s",
        BUZZ_ACP_SESSION_TITLE: "t",
        GOOSE_MODE: "g",
      },
    },
  };
}
