/**
 * `provider_config` (spec/kubernetes.md §15): parsed in Buzz's order B1 → namespace → image (B7–B12) → resources →
 * inactivity (B5, B6) → workspace fields (B13) → context, service account → pod options, each refusal with its exact
 * text (issue 18.6). `identity_policy` is left to identity-policy.ts, which runs after the nsec decodes. Unknown top-level keys are ignored
 * (a credential-looking key has no effect); inside `pod_options` keys are strict.
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";
import { IMAGE_PREFILL, parseImage } from "./image.js";

export interface Toleration {
  readonly key?: string;
  readonly operator?: "Exists" | "Equal";
  readonly value?: string;
  readonly effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  readonly tolerationSeconds?: number;
}

export interface PodOptions {
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Toleration[];
  readonly workspaceSizeLimit?: string;
  readonly ephemeralStorageRequest?: string;
  readonly ephemeralStorageLimit?: string;
  readonly activeDeadlineSeconds?: number;
  /**
   * Buzz's pilot line (config.rs, pod.rs at block/buzz@0c7b698): expose the server-assigned pod UID to the agent as
   * `BUZZ_PILOT_POD_UID` (a fieldRef, so a Secret cannot spoof it) for the owner's bounded setup gate. Only `true` is
   * kept: `false` is the default and changes neither the pod nor the intent.
   */
  readonly setupPending?: true;
}

export interface ProviderConfig {
  readonly context: string | null;
  readonly namespace: string;
  /** Normalized `name@sha256:<hex>`. */
  readonly image: string;
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly cpuLimit: string;
  readonly memoryLimit: string;
  readonly inactivitySeconds: number;
  readonly serviceAccount: string | null;
  readonly workspaceStorage: string | null;
  readonly workspaceStorageClass: string | null;
  readonly podOptions: PodOptions | null;
}

export type ConfigResult = Result<ProviderConfig>;

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isValidNamespace(ns: string): boolean {
  return ns.length <= 63 && NAMESPACE.test(ns);
}

const fail = (error: string): { ok: false; error: string } => ({ ok: false, error });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

class Refusal extends Error {}

/** String fields: absent, null or whitespace-only = unset, else trimmed; anything else is B4. */
function stringField(raw: Record<string, unknown>, field: string): string | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw new Refusal(`provider_config.${field} must be a string, got ${JSON.stringify(v)}`);
  const t = v.trim();
  return t === "" ? null : t;
}

/** Integer fields: a non-negative JSON integer or a trimmed string of decimal digits; "" = unset; else B5. */
function integerField(raw: Record<string, unknown>, field: string): number | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === "string") {
    const t = v.trim();
    if (t === "") return null;
    if (/^[0-9]+$/.test(t) && Number.isSafeInteger(Number(t))) return Number(t);
  }
  const shown = typeof v === "number" ? String(v) : typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v);
  throw new Refusal(`provider_config.${field} must be a non-negative integer, got ${shown}`);
}

const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(["Exists", "Equal"]).optional(),
  value: z.string().optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]).optional(),
  tolerationSeconds: z.number().int().optional(),
});

const POD_OPTION_KEYS = [
  "node_selector",
  "tolerations",
  "workspace_size_limit",
  "ephemeral_storage_request",
  "ephemeral_storage_limit",
  "active_deadline_seconds",
  "setup_pending",
] as const;

function podOptionsField(raw: unknown, withClaim: boolean): PodOptions | null {
  if (raw === undefined || raw === null) return null;
  const b14 = (detail: string) => new Refusal(`provider_config.pod_options: ${detail}`);
  if (!isObject(raw)) throw b14("must be an object");
  for (const key of Object.keys(raw)) {
    if (!(POD_OPTION_KEYS as readonly string[]).includes(key)) throw b14(`unknown key ${JSON.stringify(key)}`);
  }
  const out: {
    nodeSelector?: Record<string, string>;
    tolerations?: Toleration[];
    workspaceSizeLimit?: string;
    ephemeralStorageRequest?: string;
    ephemeralStorageLimit?: string;
    activeDeadlineSeconds?: number;
    setupPending?: true;
  } = {};
  const ns = raw.node_selector;
  if (ns !== undefined && ns !== null) {
    const parsed = z.record(z.string(), z.string()).safeParse(ns);
    if (!parsed.success) throw b14("node_selector must be an object of strings");
    if (Object.keys(parsed.data).length > 0) out.nodeSelector = parsed.data;
  }
  const tol = raw.tolerations;
  if (tol !== undefined && tol !== null) {
    const parsed = z.array(TolerationSchema).safeParse(tol);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw b14(
        `tolerations${issue?.path.length ? `.${issue.path.map(String).join(".")}` : ""}: ${issue?.message ?? "invalid"}`,
      );
    }
    if (parsed.data.length > 0) out.tolerations = parsed.data;
  }
  for (const [key, prop] of [
    ["workspace_size_limit", "workspaceSizeLimit"],
    ["ephemeral_storage_request", "ephemeralStorageRequest"],
    ["ephemeral_storage_limit", "ephemeralStorageLimit"],
  ] as const) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") throw b14(`${key} must be a string`);
    if (v.trim() === "") throw new Refusal("provider_config.pod_options storage quantities must not be empty");
    out[prop] = v.trim();
  }
  const ads = raw.active_deadline_seconds;
  if (ads !== undefined && ads !== null) {
    if (typeof ads !== "number" || !Number.isSafeInteger(ads)) throw b14("active_deadline_seconds must be an integer");
    if (ads <= 0) throw new Refusal("provider_config.pod_options.active_deadline_seconds must be positive");
    out.activeDeadlineSeconds = ads;
  }
  // serde's `bool` with `#[serde(default)]`: absent is false, null is a type error, as in Buzz's PodOptions.
  const sp = raw.setup_pending;
  if (sp !== undefined && typeof sp !== "boolean")
    throw b14(`setup_pending must be a boolean, got ${JSON.stringify(sp)}`);
  if (sp === true) out.setupPending = true;
  if (withClaim && out.workspaceSizeLimit !== undefined)
    throw b14("workspace_size_limit conflicts with workspace_storage (the workspace is a claim, not an emptyDir)");
  return Object.keys(out).length > 0 ? out : null;
}

/**
 * The structured pod options from either spelling: `pod_options_json` (a JSON text, what Desktop's scalar form can
 * submit) or `pod_options` (an object, from callers that send structure, such as Buzz's pilot line). A blank string
 * in either is unset: Desktop submits "" for an untouched field.
 */
function structuredPodOptions(raw: Record<string, unknown>): unknown {
  const blank = (v: unknown) => v === undefined || v === null || (typeof v === "string" && v.trim() === "");
  const object = blank(raw.pod_options) ? null : raw.pod_options;
  const text = raw.pod_options_json;
  if (blank(text)) return object;
  if (typeof text !== "string")
    throw new Refusal(`provider_config.pod_options_json must be a string, got ${JSON.stringify(text)}`);
  if (object !== null)
    throw new Refusal("provider_config.pod_options and provider_config.pod_options_json are both set; use one");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The text is not echoed: it is the user's, and V8's message quotes it.
    throw new Refusal("provider_config.pod_options_json is not valid JSON");
  }
  if (!isObject(parsed)) throw new Refusal("provider_config.pod_options_json must hold a JSON object");
  return parsed;
}

export function parseProviderConfig(raw: unknown): ConfigResult {
  if (raw === null || raw === undefined) {
    return fail(
      "provider_config.namespace is required: the info schema supplies a generated default, so an empty value means the form was cleared",
    );
  }
  if (!isObject(raw)) return fail("provider_config must be a JSON object");
  try {
    const namespace = stringField(raw, "namespace");
    if (namespace === null) {
      return fail(
        "provider_config.namespace is required: the info schema supplies a generated default, so an empty value means the form was cleared",
      );
    }
    if (!isValidNamespace(namespace)) {
      return fail(
        `provider_config.namespace ${JSON.stringify(namespace)} is not a valid Kubernetes namespace (lowercase alphanumerics and '-', ≤63 characters)`,
      );
    }
    // Buzz's order from here (config.rs `parse` at block/buzz@906578e): image, the four resources, inactivity (B6
    // included), the workspace fields and B13, then context and service account. With more than one fault the first
    // error is Buzz's.
    const imageRef = stringField(raw, "image");
    if (imageRef === null) {
      return fail(
        "provider_config.image is required: no image is assumed at parse time, so the digest-pinned image to run must be given explicitly",
      );
    }
    const image = parseImage(imageRef);
    if (!image.ok) return image;
    const cpuRequest = stringField(raw, "cpu_request") ?? DEFAULT_RESOURCES.cpuRequest;
    const memoryRequest = stringField(raw, "memory_request") ?? DEFAULT_RESOURCES.memoryRequest;
    const cpuLimit = stringField(raw, "cpu_limit") ?? DEFAULT_RESOURCES.cpuLimit;
    const memoryLimit = stringField(raw, "memory_limit") ?? DEFAULT_RESOURCES.memoryLimit;
    const inactivitySeconds = integerField(raw, "inactivity_seconds") ?? 7200;
    if (inactivitySeconds === 0) {
      return fail(
        "provider_config.inactivity_seconds: 0 (indefinite lifetime) is not supported in this version: it requires restartPolicy OnFailure, which is gated on the harness exit-code contract. Set a positive number of seconds.",
      );
    }
    const workspaceStorage = stringField(raw, "workspace_storage");
    const workspaceStorageClass = stringField(raw, "workspace_storage_class");
    if (workspaceStorageClass !== null && workspaceStorage === null)
      return fail("provider_config.workspace_storage_class requires workspace_storage");
    // Pod options where Buzz's pilot line reads them (config.rs at block/buzz@0c7b698): after inactivity, before the
    // context and the service account. No Buzz line has both them and the workspace fields, so both orders hold.
    const podOptions = podOptionsField(structuredPodOptions(raw), workspaceStorage !== null);
    const context = stringField(raw, "context");
    const serviceAccount = stringField(raw, "service_account");
    // `identity_policy` is checked after the nsec decodes, by identity-policy.ts (Buzz's order: config, then identity).
    return {
      ok: true,
      value: {
        context,
        namespace,
        image: image.value,
        cpuRequest,
        memoryRequest,
        cpuLimit,
        memoryLimit,
        inactivitySeconds,
        serviceAccount,
        workspaceStorage,
        workspaceStorageClass,
        podOptions,
      },
    };
  } catch (error) {
    if (error instanceof Refusal) return fail(error.message);
    throw error;
  }
}

/** 6 × [a-z0-9] for the namespace prefill; the caller supplies the random indices (0..35). */
export function namespacePrefill(random: readonly number[]): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return `buzz-agents-${random
    .slice(0, 6)
    .map((r) => alphabet[Math.abs(Math.trunc(r)) % 36])
    .join("")}`;
}

/**
 * The container resources when `provider_config` leaves them unset (issue 34, which wins over Buzz's 1 CPU / 2Gi
 * requests). Requests are what the scheduler reserves, limits what the agent may burst to. The harness mostly waits on
 * its relay socket between turns, and reserving a whole core and 2 GiB for it left a small node (a 2-core kind or k3s
 * node, a Raspberry Pi, this project's CI node) with room for one agent and nothing else: the next pod stayed
 * `Unschedulable` until the deadline. 250m / 512Mi keep the pod Burstable (requests < limits), fit several agents on a
 * 2-core, 4 GiB node, and leave the limits, and so the room to work, as Buzz's.
 *
 * Interop: a never-started pod that Buzz's provider made with its own defaults records another intent, so berth
 * replaces it once (fenced, never a started pod), as it would for any changed field (§9.2); the advertised `info`
 * defaults are these, so Buzz Desktop's form prefills them.
 */
export const DEFAULT_RESOURCES = {
  cpuRequest: "250m",
  memoryRequest: "512Mi",
  cpuLimit: "2",
  memoryLimit: "4Gi",
} as const;

/**
 * §15.2: the JSON schema Buzz Desktop renders as a form (issue 18.4). Scalars only: Desktop's form submits scalars and
 * its `validate_provider_config` refuses objects, so a structured property would make every deploy fail. The eleven
 * fields and their texts are Buzz's own (crates/buzz-backend-kubernetes/src/config.rs at block/buzz@906578e, the
 * persistent-workspace line: the nine v1 fields plus `workspace_storage` and `workspace_storage_class`); berth adds
 * one, `pod_options_json`, a JSON text carrying the structured pod options. No property name may read like a
 * credential.
 */
export function configSchema(namespaceDefault: string): Record<string, unknown> {
  return {
    type: "object",
    properties: {
      context: {
        type: "string",
        title: "Kubeconfig context",
        description: "Context from your kubeconfig. Leave empty to use the current context.",
      },
      namespace: {
        type: "string",
        title: "Namespace",
        description: "Created if it does not exist.",
        default: namespaceDefault,
      },
      image: {
        type: "string",
        title: "Agent image",
        description:
          "Digest-pinned image containing the buzz-acp runtime ABI, e.g. ghcr.io/block/buzz-sprig@sha256:<digest>. Tags alone are not accepted: this pod holds the agent's private key.",
        default: IMAGE_PREFILL,
      },
      cpu_request: { type: "string", title: "CPU request", default: DEFAULT_RESOURCES.cpuRequest },
      memory_request: { type: "string", title: "Memory request", default: DEFAULT_RESOURCES.memoryRequest },
      cpu_limit: { type: "string", title: "CPU limit", default: DEFAULT_RESOURCES.cpuLimit },
      memory_limit: { type: "string", title: "Memory limit", default: DEFAULT_RESOURCES.memoryLimit },
      inactivity_seconds: {
        type: "number",
        title: "Stop after inactivity (seconds)",
        description: "The agent exits after this long with no work, and can be started again at any time.",
        default: 7200,
      },
      service_account: {
        type: "string",
        title: "Service account",
        description: "Scheduling/RBAC identity only. No API token is mounted.",
      },
      workspace_storage: {
        type: "string",
        title: "Persistent workspace size",
        description:
          "Optional Kubernetes storage request such as 20Gi. When set, Buzz creates one identity-owned claim that survives pod replacement. Leave empty for an ephemeral workspace.",
      },
      workspace_storage_class: {
        type: "string",
        title: "Workspace storage class",
        description:
          "Optional StorageClass for the persistent workspace claim. Leave empty to use the cluster default.",
      },
      pod_options_json: {
        type: "string",
        title: "Pod options (JSON)",
        description:
          'Optional JSON object: node_selector, tolerations, workspace_size_limit, ephemeral_storage_request, ephemeral_storage_limit, active_deadline_seconds, setup_pending. For example {"node_selector":{"kubernetes.io/arch":"arm64"}}. Leave empty for the default pod.',
      },
    },
    required: ["namespace", "image"],
  };
}

/** Words Buzz Desktop refuses in a config property name, after splitting on `_`, `-`, `.` and camelCase. */
export const CREDENTIAL_WORDS = ["secret", "password", "token", "key", "credential"] as const;

export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[_\-. ]+/)
    .filter((w) => w !== "")
    .map((w) => w.toLowerCase());
}
