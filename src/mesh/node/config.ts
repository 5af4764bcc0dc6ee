/**
 * The node's configuration files in its data directory (spec/mesh.md §3.2, §5.3, §7.2, §7.5): node.json, signers.json,
 * permits.json, revocations.json. Loading never half-succeeds: an invalid file has its fail-closed meaning
 * (no authorised controllers, no trusted signers, no permits, revocations unreadable) and the error is reported
 * so the daemon can chain `policy.load` with `ok: false`.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { sha256 } from "../../core/crypto/tagged.js";
import {
  type Loaded,
  type PermitRule,
  type PermitRuleInput,
  PermitsFileSchema,
  parsePermits,
  parseRevocations,
  type RevocationList,
} from "../../core/governance/policy.js";
import { describeIssues, HEX64 } from "../../core/protocol/messages.js";

const key = z.string().regex(HEX64, "key must be 64 lowercase hex");

export const NodeConfigSchema = z.strictObject({
  name: z.string().max(64).default("node"),
  controllers: z.array(z.strictObject({ key, name: z.string().max(64).optional() })).max(256).default([]),
  self_tier: z.enum(["discovered", "paired", "pinned"]).default("paired"),
  board: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/, "board must match ^[a-z0-9-]{1,32}$")
    .nullable()
    .default(null),
  labels: z
    .record(z.string().regex(/^[a-z0-9][a-z0-9./_-]{0,62}$/, "label keys must match ^[a-z0-9][a-z0-9./_-]{0,62}$"), z.string().max(256))
    .default({}),
  interpreters: z.array(z.strictObject({ name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,31}$/), path: z.string().min(1) })).max(16).default([]),
  max_instances: z.number().int().min(0).max(4096).default(64),
  facts_ttl_s: z.number().int().min(10).max(86_400).default(300),
  gate: z
    .strictObject({
      threshold_milli: z.number().int().min(0).max(10_000).default(950),
      builtin_teardown: z.boolean().default(true),
      human_approval: z.boolean().default(false),
    })
    .default({ threshold_milli: 950, builtin_teardown: true, human_approval: false }),
  limits: z
    .strictObject({
      first_frame_ms: z.number().int().min(10).default(10_000),
      idle_ms: z.number().int().min(10).default(60_000),
      nonce_guard: z.number().int().min(1).max(1_000_000).default(8192),
      max_connections: z.number().int().min(1).max(1024).default(32),
    })
    .default({ first_frame_ms: 10_000, idle_ms: 60_000, nonce_guard: 8192, max_connections: 32 }),
});
export type NodeConfig = z.infer<typeof NodeConfigSchema>;

export const SignersFileSchema = z.array(z.strictObject({ key, name: z.string().max(64) })).max(64);

export const FILES = {
  config: "node.json",
  key: "node.key",
  db: "node.db",
  signers: "signers.json",
  permits: "permits.json",
  revocations: "revocations.json",
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
  const parsed = NodeConfigSchema.safeParse(raw);
  if (!parsed.success) throw new NodeConfigError(`${describeIssues(path, parsed.error.issues)}; fix the file and start again`);
  return parsed.data;
}

export interface PolicyFile<T> {
  readonly file: string;
  readonly sha256: string | null;
  readonly loaded: Loaded<T>;
}

function readPolicy<T>(dataDir: string, name: string, parse: (text: string) => Loaded<T>, missing: T): PolicyFile<T> {
  const path = join(dataDir, name);
  if (!existsSync(path)) return { file: name, sha256: null, loaded: { ok: true, value: missing } };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return { file: name, sha256: null, loaded: { ok: false, error: `cannot read ${name}: ${(error as Error).message}` } };
  }
  return { file: name, sha256: sha256(text).toString("hex"), loaded: parse(text) };
}

export function loadSigners(dataDir: string): PolicyFile<string[]> {
  return readPolicy(
    dataDir,
    FILES.signers,
    (text) => {
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        return { ok: false, error: "signers file is not valid JSON" };
      }
      const parsed = SignersFileSchema.safeParse(raw);
      return parsed.success ? { ok: true, value: parsed.data.map((s) => s.key) } : { ok: false, error: describeIssues("signers", parsed.error.issues) };
    },
    [],
  );
}

export function loadPermits(dataDir: string): PolicyFile<PermitRule[]> {
  return readPolicy(dataDir, FILES.permits, parsePermits, []);
}

export function loadRevocations(dataDir: string): PolicyFile<RevocationList> {
  return readPolicy(dataDir, FILES.revocations, parseRevocations, { generation: 0, subjects: [] });
}

/**
 * The permits API (§7.2): validates rules and replaces permits.json atomically; the daemon picks the new file up on
 * its next request and chains `policy.load`. An invalid rule set is refused and the old file stays.
 */
export function savePermits(dataDir: string, rules: readonly PermitRuleInput[]): PermitRule[] {
  const parsed = PermitsFileSchema.safeParse(rules);
  if (!parsed.success) throw new NodeConfigError(describeIssues("permits", parsed.error.issues));
  const path = join(dataDir, FILES.permits);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(parsed.data, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
  return parsed.data;
}
