/**
 * The node's own configuration in its data directory (spec/mesh.md §3.2): node.json and the names of its files. The
 * policy files a node shares with the controller (signers, permits, revocations) are read by `src/mesh/policy/`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { DEFAULT_THRESHOLD_MILLI } from "../../core/governance/gate.js";
import { LEASE_MAX_MS, LEASE_MIN_MS } from "../../core/mesh/lease.js";
import { describeIssues, HEX64 } from "../../core/protocol/messages.js";
import { POLICY_FILES } from "../policy/files.js";

/**
 * node.json's schema, built for each read rather than kept: the daemon reads node.json once, at start, and a schema
 * kept for its life would stay resident with it (issue 19: memory; src/mesh/node/README.md).
 */
const nodeConfigSchema = () =>
  z.strictObject({
    name: z.string().max(64).default("node"),
    controllers: z
      .array(
        z.strictObject({
          key: z.string().regex(HEX64, "key must be 64 lowercase hex"),
          name: z.string().max(64).optional(),
        }),
      )
      .max(256)
      .default([]),
    self_tier: z.enum(["discovered", "paired", "pinned"]).default("paired"),
    board: z
      .string()
      .regex(/^[a-z0-9-]{1,32}$/, "board must match ^[a-z0-9-]{1,32}$")
      .nullable()
      .default(null),
    labels: z
      .record(
        z.string().regex(/^[a-z0-9][a-z0-9./_-]{0,62}$/, "label keys must match ^[a-z0-9][a-z0-9./_-]{0,62}$"),
        z.string().max(256),
      )
      .default({}),
    interpreters: z
      .array(z.strictObject({ name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,31}$/), path: z.string().min(1) }))
      .max(16)
      .default([]),
    // spec/mesh.md §4.11 (issue 17): TLS unless the operator opts in to plaintext here or with --transport plaintext.
    transport: z.enum(["tls", "plaintext"], { error: 'must be "tls" or "plaintext"' }).default("tls"),
    max_instances: z.number().int().min(0).max(4096).default(64),
    facts_ttl_s: z.number().int().min(10).max(86_400).default(300),
    // Issue 16: opt-in node lease (mesh/node/lease.ts, docs/concepts.md "The node lease"); null runs without one.
    lease_ms: z
      .number()
      .int()
      .min(LEASE_MIN_MS, `lease_ms must be at least ${LEASE_MIN_MS}`)
      .max(LEASE_MAX_MS, `lease_ms must be at most ${LEASE_MAX_MS}`)
      .nullable()
      .default(null),
    gate: z
      .strictObject({
        threshold_milli: z.number().int().min(0).max(10_000).default(DEFAULT_THRESHOLD_MILLI),
        builtin_teardown: z.boolean().default(true),
        human_approval: z.boolean().default(false),
      })
      .default({ threshold_milli: DEFAULT_THRESHOLD_MILLI, builtin_teardown: true, human_approval: false }),
    // Issue 15: who agents run as when the daemon is root, and what contains them (docs/concepts.md "Confinement").
    agent_user: z
      .string()
      .regex(/^[a-z_][a-z0-9_-]{0,31}$/, "agent_user must be a user name (^[a-z_][a-z0-9_-]{0,31}$)")
      .nullable()
      .default(null),
    allow_root_agents: z.boolean().default(false),
    confinement: z
      .strictObject({
        /** `off`: no cgroups even where the node could make them (the process group only); `v1`: ignore v2. */
        cgroups: z.enum(["auto", "v1", "off"]).default("auto"),
        /** `off`: no network namespace for `network: "none"` packages (the gate is then fed `egress`). */
        network_namespace: z.enum(["auto", "off"]).default("auto"),
        /**
         * Issue 33 item 7: `off`: no seccomp seal of local sockets for `network: "none"` packages (mesh/node/seal.ts);
         * the gate is then fed `lan` for them, as on a node that cannot build the seal.
         */
        local_sockets: z.enum(["auto", "off"]).default("auto"),
        /** The pids limit of every instance's cgroup (packages declare memory, not processes); 0 sets none. */
        pids_max: z.number().int().min(0).max(4_194_304).default(1024),
      })
      .prefault({}),
    // Issue 12: a peer that has not authenticated holds no slot for long (first_bytes_ms, eviction past
    // unauthenticated_grace_ms) and never more than its share (the per-address cap); see transport/admission.ts.
    limits: z
      .strictObject({
        first_bytes_ms: z.number().int().min(10).max(60_000).default(1500),
        first_frame_ms: z.number().int().min(10).default(5000),
        idle_ms: z.number().int().min(10).default(60_000),
        nonce_guard: z.number().int().min(1).max(1_000_000).default(8192),
        max_connections: z.number().int().min(1).max(65_536).default(1024),
        max_unauthenticated: z.number().int().min(1).max(65_536).default(256),
        max_unauthenticated_per_address: z.number().int().min(1).max(65_536).default(64),
        unauthenticated_grace_ms: z.number().int().min(0).max(10_000).default(250),
      })
      .prefault({}),
  });
export type NodeConfig = z.infer<ReturnType<typeof nodeConfigSchema>>;

export const FILES = {
  config: "node.json",
  key: "node.key",
  db: "node.db",
  ...POLICY_FILES,
} as const;

export class NodeConfigError extends Error {
  override name = "NodeConfigError";
}

/** node.json must be valid: a node with a broken configuration refuses to start rather than guess. */
export function loadNodeConfig(dataDir: string): NodeConfig {
  const path = join(dataDir, FILES.config);
  let raw: unknown = {};
  if (existsSync(path)) {
    try {
      raw = JSON.parse(readFileSync(path, "utf8"));
    } catch {
      throw new NodeConfigError(`${path} is not valid JSON; fix it or recreate it with \`berth node init\``);
    }
  }
  const parsed = nodeConfigSchema().safeParse(raw);
  if (!parsed.success)
    throw new NodeConfigError(`${describeIssues(path, parsed.error.issues)}; fix the file and start again`);
  return parsed.data;
}
