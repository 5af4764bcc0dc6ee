import { describe, expect, it } from "vitest";
import { type ProviderConfig, parseProviderConfig } from "./config.js";
import { buildEnv } from "./env.js";
import { claimManifest, podManifest, secretManifest } from "./manifests.js";
import { agentA, configA, GOLDEN_IMAGE } from "../../../test/support/kubernetes/fixtures.js";
import { WHO } from "../../../test/support/kubernetes/pods.js";

function cfg(extra: Record<string, unknown> = {}): ProviderConfig {
  const r = parseProviderConfig({ ...configA, ...extra });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}
type Obj = Record<string, unknown> & {
  metadata: Record<string, Record<string, string>>;
  spec: Record<string, unknown>;
};

describe("pod, Secret and claim shape (spec/kubernetes.md §14)", () => {
  const pod = podManifest(WHO, cfg(), "0f3a91cc", "f".repeat(64)) as Obj;
  const spec = pod.spec as Record<string, unknown> & { containers: Array<Record<string, unknown>>; volumes: unknown[] };

  it("carries exactly the three labels and three annotations", () => {
    expect(pod.metadata.labels).toEqual({
      "buzz.block.xyz/agent-pubkey": WHO.pubkeyLabel,
      "app.kubernetes.io/managed-by": "buzz-backend-kubernetes",
      "buzz.block.xyz/binding-version": "1",
    });
    expect(pod.metadata.annotations).toEqual({
      "buzz.block.xyz/agent-pubkey-full": WHO.pubkey,
      "buzz.block.xyz/create-intent": "f".repeat(64),
      "buzz.block.xyz/image": GOLDEN_IMAGE,
    });
  });

  it("is a bare pod that never restarts, keeps a 60 s grace and mounts no token", () => {
    expect(spec.restartPolicy).toBe("Never");
    expect(spec.terminationGracePeriodSeconds).toBe(60);
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect((pod.metadata as Record<string, unknown>).ownerReferences).toBeUndefined();
  });

  it("runs one agent container with a required envFrom of exactly this attempt's Secret", () => {
    expect(spec.containers).toHaveLength(1);
    const c = spec.containers[0] as Record<string, unknown>;
    expect(c.name).toBe("agent");
    expect(c.image).toBe(GOLDEN_IMAGE);
    expect(c.envFrom).toEqual([{ secretRef: { name: "buzz-agent-7e7e9c42a91b-0f3a91cc", optional: false } }]);
    expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
    expect(spec.volumes).toEqual([{ name: "workspace", emptyDir: {} }]);
  });

  it("has none of the fields that must be absent", () => {
    const text = JSON.stringify(pod);
    for (const field of [
      "imagePullPolicy",
      "imagePullSecrets",
      "hostNetwork",
      "hostPID",
      "hostPath",
      "privileged",
      '"env"',
      "affinity",
      "priorityClassName",
      "readOnlyRootFilesystem",
      "enableServiceLinks",
      "livenessProbe",
      "readinessProbe",
      "ports",
      '"command"',
      '"args"',
      "serviceAccountName",
      "nodeSelector",
      "tolerations",
      "activeDeadlineSeconds",
    ]) {
      expect(text, field).not.toContain(field);
    }
  });

  it("maps each pod option to its field only when set", () => {
    const p = podManifest(
      WHO,
      cfg({
        service_account: "runner",
        pod_options: {
          node_selector: { a: "b" },
          tolerations: [{ key: "k", operator: "Exists" }],
          workspace_size_limit: "5Gi",
          ephemeral_storage_request: "1Gi",
          ephemeral_storage_limit: "2Gi",
          active_deadline_seconds: 60,
        },
      }),
      "00000000",
      "0".repeat(64),
    ) as Obj;
    const s = p.spec as Record<string, unknown> & {
      containers: Array<{ resources: { requests: Record<string, string>; limits: Record<string, string> } }>;
    };
    expect(s.serviceAccountName).toBe("runner");
    expect(s.automountServiceAccountToken).toBe(false);
    expect(s.nodeSelector).toEqual({ a: "b" });
    expect(s.tolerations).toEqual([{ key: "k", operator: "Exists" }]);
    expect(s.activeDeadlineSeconds).toBe(60);
    expect(s.volumes).toEqual([{ name: "workspace", emptyDir: { sizeLimit: "5Gi" } }]);
    expect(s.containers[0]?.resources.requests["ephemeral-storage"]).toBe("1Gi");
    expect(s.containers[0]?.resources.limits["ephemeral-storage"]).toBe("2Gi");
  });

  // pod.rs at block/buzz@0c7b698, setup_uid_is_opt_in_and_comes_from_the_api_not_the_secret.
  it("setup_uid_is_opt_in_and_comes_from_the_api_not_the_secret: setup_pending adds BUZZ_PILOT_POD_UID from metadata.uid", () => {
    expect((spec.containers[0] as Record<string, unknown>).env).toBeUndefined();
    expect(
      (podManifest(WHO, cfg({ pod_options: { setup_pending: false } }), "0f3a91cc", "f".repeat(64)) as Obj).spec
        .containers,
    ).toEqual(spec.containers);
    const p = podManifest(WHO, cfg({ pod_options: { setup_pending: true } }), "00000000", "0".repeat(64)) as Obj;
    const c = (p.spec as { containers: Array<Record<string, unknown>> }).containers[0];
    expect(c?.env).toEqual([
      { name: "BUZZ_PILOT_POD_UID", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.uid" } } },
    ]);
    expect(c?.envFrom).toEqual([{ secretRef: { name: `${WHO.podName}-00000000`, optional: false } }]);
  });

  it("uses binding 2 and the claim as the workspace when persistent storage is set", () => {
    const c = cfg({ workspace_storage: "20Gi", workspace_storage_class: "fast" });
    const p = podManifest(WHO, c, "00000000", "0".repeat(64)) as Obj;
    expect(p.metadata.labels?.["buzz.block.xyz/binding-version"]).toBe("2");
    expect((p.spec as { volumes: unknown[] }).volumes).toEqual([
      { name: "workspace", persistentVolumeClaim: { claimName: "buzz-agent-7e7e9c42a91b-workspace", readOnly: false } },
    ]);
    const claim = claimManifest(WHO, c, "20Gi") as Obj;
    expect(claim.spec).toEqual({
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "20Gi" } },
      storageClassName: "fast",
    });
    expect(claim.metadata.labels?.["buzz.block.xyz/binding-version"]).toBe("2");
  });

  it("writes the Secret immutable, as stringData, with only the identity annotation", () => {
    const env = buildEnv(agentA(), cfg(), "0f3a91cc");
    if (!env.ok) throw new Error(env.error);
    const s = secretManifest(WHO, cfg(), "0f3a91cc", env.value) as Obj;
    expect(s.immutable).toBe(true);
    expect(s.data).toBeUndefined();
    expect(s.type).toBeUndefined();
    expect(s.stringData).toEqual(env.value);
    expect(s.metadata.annotations).toEqual({ "buzz.block.xyz/agent-pubkey-full": WHO.pubkey });
    expect(s.metadata.name).toBe("buzz-agent-7e7e9c42a91b-0f3a91cc");
  });
});
