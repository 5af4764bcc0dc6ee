/**
 * The create-intent fingerprint, template v1/v2 (spec/kubernetes.md §9). Recorded on the pod at create and compared
 * with a fresh computation, it is how a config change the user is waiting on reaches a never-started pod (row 8).
 *
 * Buzz hashes declaration order, not sorted keys, so the template is an object literal built in the table's order
 * and serialised with `JSON.stringify` (compact, `/` and non-ASCII unescaped) — not RFC 8785. Only env *keys* go in:
 * a low-entropy secret hashed into a readable annotation would be a dictionary oracle.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { PodOptions, ProviderConfig } from "./config.js";
import { sortKeys } from "./env.js";

export type IntentInput = Pick<
  ProviderConfig,
  | "namespace"
  | "image"
  | "cpuRequest"
  | "memoryRequest"
  | "cpuLimit"
  | "memoryLimit"
  | "serviceAccount"
  | "workspaceStorage"
  | "workspaceStorageClass"
  | "podOptions"
>;

function podOptionsTemplate(o: PodOptions): Record<string, unknown> | null {
  const out: Record<string, unknown> = {};
  if (o.nodeSelector && Object.keys(o.nodeSelector).length > 0) {
    const sorted: Record<string, string> = {};
    for (const k of sortKeys(Object.keys(o.nodeSelector))) sorted[k] = o.nodeSelector[k] as string;
    out.node_selector = sorted;
  }
  if (o.tolerations && o.tolerations.length > 0) {
    out.tolerations = o.tolerations.map((t) => {
      const each: Record<string, unknown> = {};
      if (t.key !== undefined) each.key = t.key;
      if (t.operator !== undefined) each.operator = t.operator;
      if (t.value !== undefined) each.value = t.value;
      if (t.effect !== undefined) each.effect = t.effect;
      if (t.tolerationSeconds !== undefined) each.tolerationSeconds = t.tolerationSeconds;
      return each;
    });
  }
  if (o.workspaceSizeLimit !== undefined) out.workspace_size_limit = o.workspaceSizeLimit;
  if (o.ephemeralStorageRequest !== undefined) out.ephemeral_storage_request = o.ephemeralStorageRequest;
  if (o.ephemeralStorageLimit !== undefined) out.ephemeral_storage_limit = o.ephemeralStorageLimit;
  if (o.activeDeadlineSeconds !== undefined) out.active_deadline_seconds = o.activeDeadlineSeconds;
  // Serialised only when set, last, as Buzz's PodOptions declares it (`skip_serializing_if = Not::not`).
  if (o.setupPending) out.setup_pending = true;
  return Object.keys(out).length > 0 ? out : null;
}

/**
 * Which template berth writes and which it accepts as the same intent (issue 18.2). Buzz's baseline writes v1 for an
 * ephemeral pod; Buzz's persistent-workspace line (intent.rs at block/buzz@25ddc1c, `TEMPLATE_VERSION = 2`) writes v2
 * on every pod, with `"workspace_storage":null,"workspace_storage_class":null` for an ephemeral one. berth writes
 * what the newer line writes — v2 always — and accepts an ephemeral pod's v1 fingerprint as equal, so deploys
 * alternating between berth and either Buzz line never make berth replace a pod whose intent did not change, and
 * alternating with the persistent line never replaces one on either side.
 */
export const WRITTEN_TEMPLATE_VERSION = 2;

/** The exact template text (§9.1 order). `envKeys` are the final env's keys, reserved and nonce keys included. */
export function intentTemplate(
  input: IntentInput,
  envKeys: Iterable<string>,
  version: 1 | 2 = WRITTEN_TEMPLATE_VERSION,
): string {
  if (version === 1 && input.workspaceStorage !== null)
    throw new Error("template v1 cannot describe a persistent workspace");
  const template: Record<string, unknown> = {
    template_version: version,
    namespace: input.namespace,
    image: input.image,
    cpu_request: input.cpuRequest,
    memory_request: input.memoryRequest,
    cpu_limit: input.cpuLimit,
    memory_limit: input.memoryLimit,
    service_account: input.serviceAccount,
    restart_policy: "Never",
    termination_grace_period_seconds: 60,
    env_keys: sortKeys(new Set(envKeys)),
    env_from_secret: "<per-attempt-secret>",
    workspace_mount_path: "/home/agent",
  };
  if (version === 2) {
    template.workspace_storage = input.workspaceStorage;
    template.workspace_storage_class = input.workspaceStorageClass;
  }
  template.run_as_user = 10001;
  template.run_as_group = 10001;
  const options = input.podOptions ? podOptionsTemplate(input.podOptions) : null;
  if (options) template.pod_options = options;
  return JSON.stringify(template);
}

const hash = (text: string) => bytesToHex(sha256(utf8ToBytes(text)));

/** The fingerprint berth records at create: SHA-256 of the written template's UTF-8 bytes, 64 lowercase hex. */
export function fingerprint(input: IntentInput, envKeys: Iterable<string>): string {
  return hash(intentTemplate(input, envKeys));
}

/** Recorded fingerprints that mean the same intent as `fingerprint` (an ephemeral pod's v1, as Buzz's baseline writes). */
export function equivalentFingerprints(input: IntentInput, envKeys: Iterable<string>): string[] {
  return input.workspaceStorage === null ? [hash(intentTemplate(input, [...envKeys], 1))] : [];
}

/** What a deploy asks for, as every reader of a recorded intent compares it: the written fingerprint and its equals. */
export interface DesiredIntent {
  readonly fingerprint: string;
  readonly equivalents: readonly string[];
}

export function desiredIntent(input: IntentInput, envKeys: Iterable<string>): DesiredIntent {
  const keys = [...envKeys];
  return { fingerprint: fingerprint(input, keys), equivalents: equivalentFingerprints(input, keys) };
}

/**
 * The one equality of a recorded intent with a desired one (the deploy loop's rows 7–8 and `berth k8s status` both
 * answer through it, so status never calls "diverged" a pod the loop would keep). A missing recorded intent is unequal.
 */
export function intentMatches(recorded: string | null, desired: DesiredIntent): boolean {
  return recorded !== null && (recorded === desired.fingerprint || desired.equivalents.includes(recorded));
}
