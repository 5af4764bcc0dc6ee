/**
 * Issue 36 item 6: the agent spec documented from its schema, so the document cannot drift from what berth accepts.
 * `agentSpecJsonSchema()` is the JSON Schema editors use (docs/agent-spec.schema.json: `$schema` in a JSON spec, the
 * YAML language server's modeline in a YAML one); `agentSpecMarkdown()` is docs/agent-spec.md, every field with its
 * type, default and description, for both targets. Written by src/agents/spec-doc-write.ts; spec-doc.test.ts fails
 * when either file is stale. Pure.
 */
import { z } from "zod";
import { AgentSpecSchema } from "./spec.js";

export const AGENT_SPEC_SCHEMA_ID = "https://berth.invalid/schemas/agent-spec.schema.json";

type Json = { [k: string]: unknown };

/** The schema as JSON Schema (draft 2020-12), with the input's view: fields with a default are optional. */
export function agentSpecJsonSchema(): Json {
  const schema = z.toJSONSchema(AgentSpecSchema, { io: "input", unrepresentable: "any" }) as Json;
  return { ...schema, $id: AGENT_SPEC_SCHEMA_ID, title: "berth agent spec (apiVersion berth/v1, kind Agent)" };
}

const DESCRIPTIONS: Record<string, string> = {
  $schema: "the JSON Schema an editor checks this file against; berth ignores it",
  apiVersion: "always `berth/v1`",
  kind: "always `Agent`",
  "metadata.name":
    "the agent's name: a DNS label (lowercase letters, digits, `-`, at most 63); one agent per name per home",
  "spec.target": "where the agent runs: `mesh` (a process on a node daemon) or `kubernetes` (a bare Pod)",
  "spec.package":
    "mesh: the package directory (built and signed with `berth package build`/`sign`), relative to this file",
  "spec.image": "kubernetes: the container image, pinned by digest (`repo@sha256:…`)",
  "spec.config.args": "arguments appended to the package's entry (mesh) or the harness command (kubernetes)",
  "spec.config.env":
    "environment: a string, or `{ valueFrom: { file: PATH } }` / `{ valueFrom: { env: NAME } }` for a secret (mesh only; never inline for a key the package types secret)",
  "spec.restart": "what happens when the agent ends: `always` (default), `on-failure`, `never`",
  "spec.mesh.pin": "run only on this node (id, name or address)",
  "spec.mesh.prefer": "nodes to choose first",
  "spec.mesh.avoid": "nodes to choose last",
  "spec.mesh.allow_emulated": "allow a node that runs the package's architecture only under emulation",
  "spec.mesh.start": "start the instance once placed (false: place and load only)",
  "spec.mesh.strategy": "`spread` (default) shares equal nodes between agents; `binpack` fills one node first",
  "spec.kubernetes.relay_url": "the Nostr relay the agent talks through",
  "spec.kubernetes.nsec_file":
    "a file holding the agent's Nostr secret (`berth keys new --nsec FILE` makes one), relative to this file; exactly one of nsec_file, nsec_env",
  "spec.kubernetes.nsec_env": "an environment variable of the deploying process holding the agent's nsec",
  "spec.kubernetes.command": "the command the harness runs inside the image (required)",
  "spec.kubernetes.owner_pubkey":
    "who may send the agent `!shutdown`: 64 lowercase hex. Quote it in YAML: an all-digit key unquoted is a number",
  "spec.kubernetes.workspace_storage":
    "size of a persistent workspace claim (e.g. `20Gi`); unset: an ephemeral workspace",
  "spec.kubernetes.workspace_storage_class":
    "the claim's storage class (needs workspace_storage); unset: the cluster default",
  "spec.kubernetes.provider_config": "the provider's own settings (e.g. `{ namespace: agents }`)",
};

function typeOf(s: Json): string {
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.anyOf)) return (s.anyOf as Json[]).map(typeOf).join(" or ");
  if (s.type === "array") return `list of ${typeOf((s.items as Json) ?? {})}`;
  if (s.type === "object" && s.properties === undefined) return "map";
  return typeof s.type === "string" ? s.type : Array.isArray(s.type) ? s.type.join(" or ") : "any";
}

function rows(s: Json, path: string, required: boolean, out: string[][]): void {
  const props = s.properties as Record<string, Json> | undefined;
  if (path !== "") {
    const def = s.default === undefined ? "" : `\`${JSON.stringify(s.default)}\``;
    out.push([`\`${path}\``, typeOf(s), required ? "yes" : "", def, DESCRIPTIONS[path] ?? ""]);
  }
  if (!props) return;
  const req = new Set((s.required as string[] | undefined) ?? []);
  for (const [k, v] of Object.entries(props)) rows(v, path === "" ? k : `${path}.${k}`, req.has(k), out);
}

const MESH_EXAMPLE = `# yaml-language-server: $schema=agent-spec.schema.json
apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: mesh
  package: ./packages/scout
  config:
    args: ["--once"]
    env: { LOG_LEVEL: info, API_KEY: { valueFrom: { file: ./api.key } } }
  restart: always
  mesh: { prefer: [pi5], strategy: spread }`;

const KUBERNETES_EXAMPLE = `# yaml-language-server: $schema=agent-spec.schema.json
apiVersion: berth/v1
kind: Agent
metadata: { name: relay-bot }
spec:
  target: kubernetes
  image: ghcr.io/acme/relay-bot@sha256:<64 hex>
  kubernetes:
    relay_url: wss://relay.example
    nsec_file: ./relay-bot.nsec          # berth keys new --nsec ./relay-bot.nsec
    command: relay-bot
    owner_pubkey: "<64 hex, quoted>"
    workspace_storage: 20Gi
    provider_config: { namespace: agents }`;

export function agentSpecMarkdown(): string {
  const table: string[][] = [];
  rows(agentSpecJsonSchema(), "", true, table);
  return [
    "# The agent spec",
    "",
    "<!-- Generated from src/core/agents/spec.ts by `node dist/src/agents/spec-doc-write.js`; do not edit by hand (src/core/agents/spec-doc.test.ts fails when it is stale). -->",
    "",
    'One file says "this agent should be running, once", on the mesh or on Kubernetes: `berth deploy FILE` (YAML or JSON).',
    "Deploying the same file again does nothing; a changed one replaces the agent only once its instance has ended.",
    "Secrets never sit in the spec: a Kubernetes agent's identity is a file (`nsec_file`) or a variable (`nsec_env`), a",
    "mesh agent's secret env values `valueFrom` a file or a variable.",
    "",
    "Editors check a spec against [agent-spec.schema.json](agent-spec.schema.json) (JSON Schema 2020-12): in JSON with",
    '`"$schema": "<path or URL of agent-spec.schema.json>"`, in YAML with the YAML language server\'s first-line modeline',
    "`# yaml-language-server: $schema=<path or URL>`.",
    "",
    "## Fields",
    "",
    "| field | type | required | default | what |",
    "|---|---|---|---|---|",
    ...table.map((r) => `| ${r.join(" | ")} |`),
    "",
    "## A mesh agent",
    "",
    "```yaml",
    MESH_EXAMPLE,
    "```",
    "",
    "## A Kubernetes agent",
    "",
    "```yaml",
    KUBERNETES_EXAMPLE,
    "```",
    "",
    "A mistake is named by its field, the same from the CLI on its files, through a `berth serve`, and in the API's",
    "`error.failure`: `scout.yaml: spec.restrat: unknown field (did you mean restart?); remove it or correct its spelling`.",
    "",
  ].join("\n");
}
