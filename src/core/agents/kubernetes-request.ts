/**
 * An agent spec as the Kubernetes backend's deploy request (spec/kubernetes.md §3.4), so that `berth deploy` of a
 * Kubernetes agent runs exactly the converge loop `berth k8s deploy` and the provider protocol run: the same
 * validation texts, the same create-intent fingerprint, the same audit records. Pure: the nsec is read by the shell.
 *
 *   spec.image                     → provider_config.image (the spec's own field wins over provider_config)
 *   spec.kubernetes.provider_config → provider_config (namespace, resources, pod options …)
 *   spec.kubernetes.workspace_storage(_class) → provider_config.workspace_storage(_class) (the persistent claim)
 *   spec.kubernetes.relay_url      → agent.relay_url
 *   spec.kubernetes.command        → agent.launch.command
 *   spec.kubernetes.owner_pubkey   → agent.launch.owner_pubkey
 *   spec.config.args / env         → agent.launch.args / env
 */
import { type AgentSpecDocument, splitSpecEnv } from "./spec.js";

export function kubernetesDeployRequest(spec: AgentSpecDocument, nsec: string): Record<string, unknown> {
  const s = spec.spec;
  const k = s.kubernetes;
  return {
    op: "deploy",
    agent: {
      relay_url: k?.relay_url ?? "",
      private_key_nsec: nsec,
      launch: {
        command: k?.command ?? null,
        args: [...s.config.args],
        env: splitSpecEnv(s.config.env).inline, // valueFrom is refused for Kubernetes agents by the schema
        owner_pubkey: k?.owner_pubkey ?? null,
      },
    },
    provider_config: {
      ...(k?.provider_config ?? {}),
      ...(s.image !== undefined ? { image: s.image } : {}),
      ...(k?.workspace_storage !== undefined ? { workspace_storage: k.workspace_storage } : {}),
      ...(k?.workspace_storage_class !== undefined ? { workspace_storage_class: k.workspace_storage_class } : {}),
    },
  };
}
