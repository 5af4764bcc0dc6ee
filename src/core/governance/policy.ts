/**
 * The governance policy files (spec/mesh.md §7.2, §7.5): permit rules and revocations, validated strictly. An invalid
 * file is never half-loaded: the caller gets a reason and applies the fail-closed meaning (no permits; revocations
 * unreadable).
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";
import { TIERS } from "../identity/tier.js";
import { describeIssues } from "../protocol/messages.js";

export const GOVERNED_ACTIONS = [
  "workload.place",
  "workload.load",
  "workload.start",
  "workload.stop",
  "workload.unload",
  "workload.migrate",
] as const;
export const TEARDOWN_ACTIONS: ReadonlySet<string> = new Set(["workload.stop", "workload.unload"]);
export const REF_CARRYING_ACTIONS: ReadonlySet<string> = new Set([
  "workload.place",
  "workload.load",
  "workload.start",
  "workload.migrate",
]);

export const TRUST_LEVELS = ["unsigned", "signed_unpinned", "pinned_signer"] as const;
export const NETWORKS = ["none", "lan", "egress"] as const;
export type Network = (typeof NETWORKS)[number];
export type PackageTrustLevel = (typeof TRUST_LEVELS)[number];

export const PermitRuleSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "id must match ^[A-Za-z0-9._-]{1,64}$"),
  description: z.string().max(1024).default(""),
  actions: z
    .array(
      z
        .string()
        .regex(/^workload\.([a-z]+|[a-z]*\*)$/, "actions are workload.<action>, workload.* or workload.<prefix>*"),
    )
    .min(1)
    .max(16),
  kinds: z
    .array(z.string().regex(/^([a-z0-9_-]{1,64}|\*)$/, "kinds are exact kinds or *"))
    .min(1)
    .max(64),
  controllers: z.array(z.string().max(64)).max(64).default([]),
  min_package_trust: z.enum(TRUST_LEVELS).default("pinned_signer"),
  min_node_tier: z.enum(TIERS).default("paired"),
  max_network: z.enum(NETWORKS).default("lan"),
  allow_secrets: z.boolean().default(false),
  allow_emulated: z.boolean().default(false),
  accelerators: z.array(z.string().max(128)).max(64).default([]),
  max_resource_cost_milli: z.number().int().min(0).max(1000).default(1000),
});
export type PermitRule = z.infer<typeof PermitRuleSchema>;
export type PermitRuleInput = z.input<typeof PermitRuleSchema>;

export const PermitsFileSchema = z
  .array(PermitRuleSchema)
  .max(256)
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    for (const [i, r] of rules.entries()) {
      if (seen.has(r.id)) ctx.addIssue({ code: "custom", path: [i, "id"], message: `duplicate rule id ${r.id}` });
      seen.add(r.id);
    }
  });

export const RevocationSubjectSchema = z.strictObject({
  kind: z.enum(["package", "signer", "file", "node"]),
  // Issue 12: ids are compared as berth writes them (lowercase hex), so a hex id is normalised here, at parse time;
  // an uppercase package id in revocations.json revoked nothing before.
  id: z
    .string()
    .min(1)
    .max(128)
    .transform((id) => (/^[0-9a-fA-F]+$/.test(id) ? id.toLowerCase() : id)),
  reason: z.string().max(1024),
  at_ms: z.number().int().min(0),
});
export const RevocationListSchema = z.strictObject({
  generation: z.number().int().min(0),
  subjects: z.array(RevocationSubjectSchema).max(65_536),
});
export type RevocationList = z.infer<typeof RevocationListSchema>;
export const EMPTY_REVOCATIONS: RevocationList = { generation: 0, subjects: [] };

export type Loaded<T> = Result<T>;

/** Parses permits.json text; an invalid file loads no permits (§7.2). */
export function parsePermits(text: string): Loaded<PermitRule[]> {
  if (Buffer.byteLength(text, "utf8") > 256 * 1024) return { ok: false, error: "permits file larger than 256 KiB" };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: "permits file is not valid JSON" };
  }
  const parsed = PermitsFileSchema.safeParse(raw);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: describeIssues("permits", parsed.error.issues) };
}

export function parseRevocations(text: string): Loaded<RevocationList> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: "revocations file is not valid JSON" };
  }
  const parsed = RevocationListSchema.safeParse(raw);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: describeIssues("revocations", parsed.error.issues) };
}
