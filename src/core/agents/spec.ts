/**
 * The agent spec (issue 7): one versioned document that says "this agent should be running, once", on Kubernetes or
 * on the mesh. Parsed with one zod schema at the edge; every error names the field. YAML or JSON.
 *
 *   apiVersion: berth/v1
 *   kind: Agent
 *   metadata: { name: scout }
 *   spec:
 *     target: mesh                       # or kubernetes
 *     package: ./packages/scout          # mesh: a package directory (signed by `berth package sign`)
 *     image: ghcr.io/acme/scout@sha256:… # kubernetes: a digest-pinned image
 *     config: { args: [], env: { LOG_LEVEL: info, API_KEY: { valueFrom: { file: ./api.key } },
 *                                TOKEN: { valueFrom: { env: SCOUT_TOKEN } } } }
 *     restart: always                    # or on-failure, never (issue 15; default always: an agent is long-lived)
 *     mesh: { pin: null, prefer: [], avoid: [], allow_emulated: false }
 *     kubernetes: { relay_url: wss://…, nsec_file: ./scout.nsec, command: scout, owner_pubkey: <hex>,
 *                   workspace_storage: 20Gi, workspace_storage_class: null,
 *                   provider_config: { namespace: agents } }
 *
 * Secrets never sit in the spec itself: the Nostr identity is read from a file (`nsec_file`) or an environment
 * variable (`nsec_env`) by the shell, and so is a mesh agent's secret env value (`valueFrom: {file}` relative to the
 * spec, or `valueFrom: {env}` from the deploying process's environment; src/agents/secret-env.ts), so a spec can be
 * committed and shared. Such a value reaches the node and the agent only; see docs/security.md.
 */
import type { Result } from "../../kit/result.js";
import { LabelsSchema } from "./labels.js";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { canonicalJson, type JsonObject } from "../crypto/canonical.js";
import { taggedSha256Hex } from "../crypto/tagged.js";
import { AGENT_RESTART_DEFAULT, RestartPolicySchema } from "../node/restart-policy.js";
import { PLACEMENT_STRATEGIES } from "../placement/inputs.js";
import { specIssueLines, specIssues } from "./spec-issues.js";

export const AGENT_API_VERSION = "berth/v1";

const Name = z
  .string()
  .regex(
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    "must be a DNS label: lowercase letters, digits and '-', at most 63 characters",
  );
const EnvKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "environment keys must be POSIX names ([A-Za-z_][A-Za-z0-9_]*)");
const NodeRef = z.string().min(1, "must name a node id or label");

/** Where a secret env value comes from (issue 17): a file (relative to the spec) or the deploying process's environment. */
const ValueFrom = z.union(
  [
    z.strictObject({ file: z.string().min(1, "must name a file") }),
    z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name") }),
  ],
  { error: "must be { file: PATH } or { env: NAME }" },
);
export type EnvValueFrom = z.infer<typeof ValueFrom>;

const EnvValue = z.union([z.string(), z.strictObject({ valueFrom: ValueFrom })], {
  error: "must be a string or { valueFrom: { file: PATH } | { env: NAME } }",
});
export type SpecEnvValue = z.infer<typeof EnvValue>;

const ConfigSchema = z.strictObject({
  args: z.array(z.string()).default([]),
  env: z.record(EnvKey, EnvValue).default({}),
});

/** The env entries given inline (plain strings), and those read from elsewhere (by name): pure, for both shells. */
export function splitSpecEnv(env: Readonly<Record<string, SpecEnvValue>>): {
  inline: Record<string, string>;
  from: Record<string, EnvValueFrom>;
} {
  const inline: Record<string, string> = {};
  const from: Record<string, EnvValueFrom> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value === "string") inline[name] = value;
    else from[name] = value.valueFrom;
  }
  return { inline, from };
}

const MeshSchema = z.strictObject({
  pin: NodeRef.nullable().default(null),
  prefer: z.array(NodeRef).default([]),
  avoid: z.array(NodeRef).default([]),
  allow_emulated: z.boolean().default(false),
  start: z.boolean().default(true),
  /** Issue 16: `spread` (default) shares equal nodes between agents; `binpack` fills one node first. */
  strategy: z.enum(PLACEMENT_STRATEGIES, { error: 'must be "spread" or "binpack"' }).default("spread"),
});

const KubernetesSchema = z
  .strictObject({
    relay_url: z.string().min(1, "must not be empty"),
    nsec_file: z.string().min(1).optional(),
    nsec_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .optional(),
    /** The agent harness command inside the image (the provider's `launch.command`); required, see below. */
    command: z.string().min(1, "must not be empty").optional(),
    /** Who may send the agent `!shutdown` (`launch.owner_pubkey`): 64 lowercase hex. */
    owner_pubkey: z
      .string({
        // Issue 36: YAML reads an unquoted all-digit key as a number (and loses digits); say so instead of "expected string".
        error: (issue) =>
          typeof issue.input === "number" || typeof issue.input === "bigint"
            ? 'YAML read this unquoted all-digit key as a number; quote it: owner_pubkey: "…" (64 lowercase hex characters)'
            : "must be a string of 64 lowercase hex characters (a Nostr public key)",
      })
      .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (a Nostr public key)")
      .optional(),
    /**
     * Issue 15: the persistent workspace claim (Buzz's `workspace_storage`, e.g. `20Gi`), so a Kubernetes agent keeps
     * its `$HOME` across pod replacement as a mesh agent keeps its workspace on its node. Unset: an ephemeral workspace.
     */
    workspace_storage: z
      .string()
      .trim()
      .min(1, "must not be empty (leave it out for an ephemeral workspace)")
      .optional(),
    workspace_storage_class: z
      .string()
      .trim()
      .min(1, "must not be empty (leave it out for the cluster default)")
      .optional(),
    provider_config: z.record(z.string(), z.unknown()).nullable().default(null),
  })
  .refine((k) => (k.nsec_file === undefined) !== (k.nsec_env === undefined), {
    message: "give exactly one of nsec_file or nsec_env (the agent's Nostr identity; never inline in the spec)",
    path: ["nsec_file"],
  })
  .refine((k) => k.workspace_storage_class === undefined || k.workspace_storage !== undefined, {
    message: "workspace_storage_class needs workspace_storage (the size of the persistent workspace claim)",
    path: ["workspace_storage_class"],
  })
  .superRefine((k, ctx) => {
    // One source per setting: the spec's own field, or provider_config's, never two that disagree.
    for (const field of ["workspace_storage", "workspace_storage_class"] as const) {
      const own = k[field];
      const inConfig = k.provider_config?.[field];
      if (own !== undefined && inConfig !== undefined && inConfig !== null && inConfig !== own) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: `conflicts with provider_config.${field}; set it in one place`,
        });
      }
    }
  });

const SpecBody = z
  .strictObject({
    target: z.enum(["mesh", "kubernetes"], { error: 'must be "mesh" or "kubernetes"' }),
    package: z.string().min(1).optional(),
    image: z.string().min(1).optional(),
    config: ConfigSchema.default({ args: [], env: {} }),
    /** Issue 15: how the agent is kept alive (core/node/restart-policy.ts); an agent is long-lived, so `always`. */
    restart: RestartPolicySchema.default(AGENT_RESTART_DEFAULT),
    mesh: MeshSchema.optional(),
    kubernetes: KubernetesSchema.optional(),
  })
  .superRefine((s, ctx) => {
    if (s.target === "mesh" && s.package === undefined)
      ctx.addIssue({ code: "custom", path: ["package"], message: "a mesh agent needs a package directory" });
    if (s.target === "mesh") {
      // The node's run config is stricter than POSIX (spec/mesh.md §9.1): upper case, and BERTH_ is the node's own prefix.
      for (const key of Object.keys(s.config.env)) {
        if (!/^[A-Z_][A-Z0-9_]*$/.test(key) || key.startsWith("BERTH_")) {
          ctx.addIssue({
            code: "custom",
            path: ["config", "env", key],
            message: "a mesh agent's env names must match ^[A-Z_][A-Z0-9_]*$ and must not start with BERTH_",
          });
        }
      }
    }
    if (s.target === "kubernetes") {
      // A pod's env is readable by whoever reads the pod: a Kubernetes agent's secrets belong in a Secret (nsec_file).
      for (const [key, value] of Object.entries(s.config.env)) {
        if (typeof value !== "string")
          ctx.addIssue({
            code: "custom",
            path: ["config", "env", key, "valueFrom"],
            message:
              "valueFrom is for mesh agents; a Kubernetes agent's env is part of its pod spec (secrets: nsec_file or nsec_env)",
          });
      }
      if (s.image === undefined)
        ctx.addIssue({ code: "custom", path: ["image"], message: "a Kubernetes agent needs an image" });
      if (s.kubernetes === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["kubernetes"],
          message: "a Kubernetes agent needs a kubernetes section (relay_url and nsec_file or nsec_env)",
        });
      // As for `berth k8s deploy` (P-19): without it the harness runs a default binary the stock image lacks.
      else if (s.kubernetes.command === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["kubernetes", "command"],
          message: "a Kubernetes agent needs the command the harness runs in its image",
        });
    }
  });

export const AgentSpecSchema = z.strictObject({
  /** Issue 36: the JSON Schema an editor checks the spec against (docs/agent-spec.schema.json); berth ignores it. */
  $schema: z.string().optional(),
  apiVersion: z.literal(AGENT_API_VERSION, { error: `must be "${AGENT_API_VERSION}"` }),
  kind: z.literal("Agent", { error: 'must be "Agent"' }),
  // Issue 36: labels in Kubernetes' syntax, which `-l` and `?labelSelector=` select on.
  metadata: z.strictObject({ name: Name, labels: LabelsSchema.optional() }),
  spec: SpecBody,
});
export type AgentSpecDocument = z.infer<typeof AgentSpecSchema>;

/** The failure is every issue found, one line each. */
export type AgentSpecParse = Result<AgentSpecDocument, string[]>;

/**
 * Parses YAML (a superset of JSON) and validates; errors name the field, e.g. `scout.yaml: spec.mesh.prefer[0]: …`
 * (spec-issues.ts: the same lines from the CLI, through a server, and from the API). `source` names the spec in
 * them; null leaves it out (a body posted to the API has no file).
 */
export function parseAgentSpec(text: string, source: string | null = "agent spec"): AgentSpecParse {
  let raw: unknown;
  try {
    raw = parseYaml(text, { uniqueKeys: true, maxAliasCount: 50, logLevel: "error" });
  } catch (error) {
    return {
      ok: false,
      error: [
        `${source === null ? "" : `${source}: `}not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`,
      ],
    };
  }
  return validateAgentSpec(raw, source);
}

/** parseAgentSpec, and the document as read (before defaults), for a caller that sends it on (the CLI to a server). */
export function validateAgentSpecText(text: string, source: string | null): Result<Record<string, unknown>, string[]> {
  const parsed = parseAgentSpec(text, source);
  if (!parsed.ok) return parsed;
  return {
    ok: true,
    value: parseYaml(text, { uniqueKeys: true, maxAliasCount: 50, logLevel: "error" }) as Record<string, unknown>,
  };
}

/** Validates a document already read (a JSON body, a parsed file) with the schema; errors as parseAgentSpec's. */
export function validateAgentSpec(raw: unknown, source: string | null): AgentSpecParse {
  const parsed = AgentSpecSchema.safeParse(raw);
  if (!parsed.success)
    return { ok: false, error: specIssueLines(source, specIssues(AgentSpecSchema, parsed.error.issues)) };
  return { ok: true, value: parsed.data };
}

/**
 * The mesh create-intent fingerprint: what the user asked to run and how. A never-started instance whose recorded
 * fingerprint differs is replaced; a started one never is. Placement preferences are not part of it (moving a
 * healthy agent is not an edit of the agent), and neither is the package's location on disk, only its id.
 */
export function meshIntentFingerprint(args: {
  agent: string;
  packageId: string;
  config: { args: readonly string[]; env: Readonly<Record<string, string>> };
}): string {
  const doc: JsonObject = {
    agent: args.agent,
    args: [...args.config.args],
    env: { ...args.config.env },
    package_id: args.packageId,
    template: "berth.mesh.v1",
  };
  return taggedSha256Hex("berth.agent.intent.v1", canonicalJson(doc));
}
