import { describe, expect, it } from "vitest";
import { type AgentDeployResult, deployEventDraft } from "./deploy-event.js";
import { kubernetesDeployRequest } from "./kubernetes-request.js";
import { parseAgentSpec } from "./spec.js";

function result(target: "mesh" | "kubernetes"): AgentDeployResult {
  return {
    agent: "scout",
    target,
    intent: "f".repeat(64),
    ok: true,
    outcome: "started",
    message: "scout: started",
    instance: "i",
    pendingEdit: false,
    rounds: [
      {
        row: "terminated",
        action: "replace (terminated)",
        fence: { instance_id: "i0", generation: 2 },
        observation: { instances: [] },
      },
      { row: "no-instance", action: "place", fence: null, observation: { instances: [] } },
    ],
  };
}

describe("the agent.deploy audit event", () => {
  it("has the same kind and payload keys on both targets, with the first row and the fence a mutation used", () => {
    const mesh = deployEventDraft(result("mesh"));
    const k8s = deployEventDraft(result("kubernetes"));
    expect([mesh.source, mesh.kind, k8s.source, k8s.kind]).toEqual([
      "placement",
      "agent.deploy",
      "k8s",
      "agent.deploy",
    ]);
    expect(Object.keys(mesh.payload).sort()).toEqual(Object.keys(k8s.payload).sort());
    expect(mesh.payload.row).toBe("terminated");
    expect(mesh.payload.fence).toEqual({ instance_id: "i0", generation: 2 });
    expect(mesh.payload.rounds).toHaveLength(2);
  });
});

describe("a Kubernetes agent spec as the backend's deploy request", () => {
  it("maps every field and lets spec.image win over provider_config", () => {
    const spec = parseAgentSpec(`apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: kubernetes
  image: ghcr.io/a/b@sha256:${"a".repeat(64)}
  config: { args: ["--x"], env: { A: "1" } }
  kubernetes: { relay_url: "wss://r", nsec_env: K, command: scout, owner_pubkey: ${"b".repeat(64)}, provider_config: { namespace: agents, image: old } }
`);
    if (!spec.ok) throw new Error(spec.error.join("\n"));
    expect(kubernetesDeployRequest(spec.value, "nsec1x")).toEqual({
      op: "deploy",
      agent: {
        relay_url: "wss://r",
        private_key_nsec: "nsec1x",
        launch: { command: "scout", args: ["--x"], env: { A: "1" }, owner_pubkey: "b".repeat(64) },
      },
      provider_config: { namespace: "agents", image: `ghcr.io/a/b@sha256:${"a".repeat(64)}` },
    });
  });
});
