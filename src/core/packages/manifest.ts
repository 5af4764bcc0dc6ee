/**
 * Packages (spec/mesh.md §5): the signed statement, its envelope, the package id and the package trust level.
 * Pure: files are read by the shell, which passes their bytes' hashes in. The statement is what is hashed and signed;
 * signatures sit outside it, so adding one never changes the package id.
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";
import { canonicalJson, parseCanonical } from "../crypto/canonical.js";
import { type SigningKey, signTagged, verifyTagged } from "../crypto/ed25519.js";
import { taggedSha256Hex } from "../crypto/tagged.js";
import { describeIssues, HEX64 } from "../protocol/messages.js";
import type { RevocationList } from "../governance/policy.js";
import { ConfigSurfaceSchema } from "./config-surface.js";
import { loaderHookFamily } from "./loader-hooks.js";

export const PACKAGE_FORMAT = "berth.package.v1";
export const MANIFEST_FILE = "berth-package.json";
const MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024;
const PATH_COMPONENT = /^[A-Za-z0-9._-]+$/;

const keyHex = z.string().regex(HEX64, "must be 64 lowercase hex");

export const PackagePathSchema = z
  .string()
  .min(1)
  .refine((p) => Buffer.byteLength(p, "utf8") <= 255, "path longer than 255 bytes")
  .refine(
    (p) => p.split("/").every((c) => PATH_COMPONENT.test(c) && c !== "." && c !== ".."),
    "path must be relative POSIX with components [A-Za-z0-9._-]+ and no . or ..",
  );

export const PinnedFileSchema = z.strictObject({
  path: PackagePathSchema,
  sha256: z.string().regex(HEX64, "sha256 must be 64 lowercase hex"),
  size: z.number().int().min(0),
  mode: z.enum(["0644", "0755"]),
});
export type PinnedFile = z.infer<typeof PinnedFileSchema>;

const PredicateSchema = z.strictObject({
  attr: z.string().min(1).max(64),
  op: z.enum(["eq", "gte", "lte", "in", "has"]),
  value: z.union([z.string(), z.number().int(), z.boolean(), z.array(z.string())]),
});

export const RequirementSchema = z
  .strictObject({
    id: z.string().max(128).optional(),
    id_prefix: z.string().max(128).optional(),
    where: z.array(PredicateSchema).max(32).default([]),
    count: z.number().int().min(1).max(64).default(1),
    min_provenance: z.enum(["claimed", "probed", "measured"]).default("claimed"),
  })
  .refine((r) => (r.id === undefined) !== (r.id_prefix === undefined), "exactly one of id and id_prefix");

export { archOfNode } from "./arch.js";

export const VariantSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "variant id must match ^[a-z0-9][a-z0-9_.-]{0,63}$"),
  arch: z.enum(["aarch64", "armv7", "x86_64", "any"]),
  os: z.enum(["linux", "darwin", "any"]),
  entry: z.strictObject({
    /** A pinned file (mode 0755) or `@<interpreter>`. */
    program: z.string().min(1).max(255),
    args: z.array(z.string().max(4096)).max(64),
  }),
  requires: z.array(RequirementSchema).max(64),
});
export type Variant = z.infer<typeof VariantSchema>;

export const StatementSchema = z
  .strictObject({
    format: z.literal(PACKAGE_FORMAT),
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "name must match ^[a-z0-9][a-z0-9-]{0,62}$"),
    version: z
      .string()
      .max(64)
      .regex(
        /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/,
        "version must be SemVer 2.0.0",
      ),
    kind: z.string().regex(/^[a-z0-9_-]{1,64}$/, "kind must match ^[a-z0-9_-]{1,64}$"),
    description: z.string().refine((d) => Buffer.byteLength(d, "utf8") <= 1024, "description longer than 1024 bytes"),
    files: z.array(PinnedFileSchema).min(1).max(1024),
    variants: z.array(VariantSchema).min(1).max(16),
    resources: z.strictObject({ memory_mb: z.number().int().min(0), cpu_millis: z.number().int().min(0) }),
    network: z.enum(["none", "lan", "egress"]),
    secrets: z
      .array(z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, "secret names must match ^[A-Z][A-Z0-9_]{0,63}$"))
      .max(32),
    requirements: z.array(RequirementSchema).max(64),
    preferences: z
      .array(z.strictObject({ requirement: RequirementSchema, weight: z.number().int().min(1).max(1000) }))
      .max(16),
    policy: z.strictObject({
      min_tier: z.enum(["discovered", "paired", "pinned"]),
      labels: z.array(z.string().max(256)).max(64),
      excludes: z.array(z.string().max(256)).max(64),
      sticky: z.boolean(),
      migratable: z.boolean(),
    }),
    health: z
      .strictObject({
        exec: z.array(z.string()).min(1).max(64),
        interval_s: z.number().int().min(1).max(3600),
        misses: z.number().int().min(1).max(100),
      })
      .nullable(),
    /** Issue 12: the env names and flags a placement may set (config-surface.ts); absent = none. */
    config: ConfigSurfaceSchema.optional(),
  })
  .superRefine((s, ctx) => {
    // A secret becomes an environment variable of the same name: a loader hook is refused there too.
    for (const [i, name] of s.secrets.entries()) {
      const family = loaderHookFamily(name);
      if (family !== null)
        ctx.addIssue({
          code: "custom",
          path: ["secrets", i],
          message: `${name} is a ${family} hook and cannot be a secret's name`,
        });
    }
    const paths = new Set<string>();
    let total = 0;
    for (const [i, f] of s.files.entries()) {
      if (paths.has(f.path))
        ctx.addIssue({ code: "custom", path: ["files", i, "path"], message: `duplicate path ${f.path}` });
      paths.add(f.path);
      total += f.size;
    }
    if (total > MAX_TOTAL_BYTES) ctx.addIssue({ code: "custom", path: ["files"], message: "total size above 2 GiB" });
    const ids = new Set<string>();
    for (const [i, v] of s.variants.entries()) {
      if (ids.has(v.id))
        ctx.addIssue({ code: "custom", path: ["variants", i, "id"], message: `duplicate variant ${v.id}` });
      ids.add(v.id);
      const program = v.entry.program;
      if (program.startsWith("@")) {
        if (!/^@[a-z0-9][a-z0-9_.-]{0,31}$/.test(program)) {
          ctx.addIssue({
            code: "custom",
            path: ["variants", i, "entry", "program"],
            message: "interpreter must match @[a-z0-9][a-z0-9_.-]{0,31}",
          });
        }
      } else {
        const file = s.files.find((f) => f.path === program);
        if (!file)
          ctx.addIssue({
            code: "custom",
            path: ["variants", i, "entry", "program"],
            message: `${program} is not a pinned file`,
          });
        else if (file.mode !== "0755")
          ctx.addIssue({
            code: "custom",
            path: ["variants", i, "entry", "program"],
            message: `${program} must have mode 0755`,
          });
      }
    }
  });
export type Statement = z.infer<typeof StatementSchema>;

export const PackageSignatureSchema = z.strictObject({
  key: keyHex,
  sig: z.string().regex(/^[0-9a-f]{128}$/, "sig must be 128 lowercase hex"),
});

/** The envelope as stored in `berth-package.json`. `berth package build` writes it with no signatures yet. */
export const EnvelopeSchema = z.strictObject({
  statement: z.unknown(),
  signatures: z.array(PackageSignatureSchema).max(8),
});
export type Envelope = { statement: Statement; signatures: Array<{ key: string; sig: string }> };

export type PackageTrust = "unsigned" | "signed_unpinned" | "pinned_signer";

export function packageIdOf(statement: Statement): string {
  return taggedSha256Hex("berth.package.id.v1", canonicalJson(statement));
}

export function signStatement(key: SigningKey, statement: Statement): { key: string; sig: string } {
  return { key: key.publicKey, sig: signTagged(key, "berth.package.v1", canonicalJson(statement)) };
}

export type ParsedEnvelope = Result<{ readonly envelope: Envelope; readonly packageId: string }>;

/** §5.4 step 2: exact members and field rules. Accepts text (as fetched) or an already parsed value. */
export function parseEnvelope(input: string | unknown): ParsedEnvelope {
  let value: unknown = input;
  if (typeof input === "string") {
    if (Buffer.byteLength(input, "utf8") > 1024 * 1024) return { ok: false, error: "manifest larger than 1 MiB" };
    try {
      value = JSON.parse(input);
    } catch {
      return { ok: false, error: "manifest is not valid JSON" };
    }
  }
  const outer = EnvelopeSchema.safeParse(value);
  if (!outer.success) return { ok: false, error: describeIssues("manifest", outer.error.issues) };
  const statement = StatementSchema.safeParse(outer.data.statement);
  if (!statement.success) return { ok: false, error: describeIssues("manifest.statement", statement.error.issues) };
  // Integers only and representable: the statement must survive canonicalisation to have an id at all.
  try {
    const text = canonicalJson(statement.data);
    if (!parseCanonical(text).ok) return { ok: false, error: "manifest.statement is not canonicalisable" };
  } catch (error) {
    return {
      ok: false,
      error: `manifest.statement: ${error instanceof Error ? error.message : "not canonicalisable"}`,
    };
  }
  const envelope: Envelope = { statement: statement.data, signatures: outer.data.signatures };
  return { ok: true, value: { envelope, packageId: packageIdOf(statement.data) } };
}

export interface SignatureReport {
  readonly trust: PackageTrust;
  /** Keys whose signature verifies, trusted or not. */
  readonly validKeys: readonly string[];
  readonly trustedKeys: readonly string[];
}

/** The keys whose signature over the statement verifies, trusted or not: a function of the envelope's bytes alone. */
export function validSignatureKeys(envelope: Envelope): string[] {
  const text = canonicalJson(envelope.statement);
  return envelope.signatures.filter((s) => verifyTagged(s.key, "berth.package.v1", text, s.sig)).map((s) => s.key);
}

export function signatureReport(
  envelope: Envelope,
  trustedSigners: ReadonlySet<string>,
  validKeys: readonly string[] = validSignatureKeys(envelope),
): SignatureReport {
  const trustedKeys = validKeys.filter((k) => trustedSigners.has(k));
  const trust: PackageTrust =
    trustedKeys.length > 0 ? "pinned_signer" : validKeys.length > 0 ? "signed_unpinned" : "unsigned";
  return { trust, validKeys, trustedKeys };
}

export type EnvelopeVerdict = Result<{
  readonly envelope: Envelope;
  readonly packageId: string;
  readonly signers: readonly string[];
}>;

/**
 * §5.4 steps 2–5 on the node (and §5.5 on the controller): parse, recompute the id, at least one trusted signature,
 * no revoked signing key, package id or pinned file hash. An unreadable revocation list (`null`) fails closed.
 */
export function verifyEnvelope(input: string | unknown, opts: EnvelopeTrust): EnvelopeVerdict {
  return verifyParsedEnvelope(parseEnvelope(input), opts);
}

export interface EnvelopeTrust {
  readonly expectedId?: string;
  readonly trustedSigners: ReadonlySet<string>;
  readonly revocations: RevocationList | null;
  /**
   * `validSignatureKeys` of this very envelope, when the caller kept it from an earlier check of the same bytes (the
   * controller, per manifest digest: issue 35). Trust and revocations are judged against it every time.
   */
  readonly validKeys?: readonly string[];
}

/** §5.4 steps 3–5 over the result of `parseEnvelope` (step 2), for a caller that keeps a parse (the node, issue 19). */
export function verifyParsedEnvelope(parsed: ParsedEnvelope, opts: EnvelopeTrust): EnvelopeVerdict {
  if (!parsed.ok) return parsed;
  if (opts.expectedId !== undefined && parsed.value.packageId !== opts.expectedId) {
    return { ok: false, error: `package id ${parsed.value.packageId} does not match the requested ${opts.expectedId}` };
  }
  const report = signatureReport(parsed.value.envelope, opts.trustedSigners, opts.validKeys);
  if (report.trust !== "pinned_signer") {
    return {
      ok: false,
      error:
        report.trust === "unsigned"
          ? "package is unsigned: no signature verifies"
          : "package is not signed by a trusted signer of this host (signed_unpinned)",
    };
  }
  if (opts.revocations === null) return { ok: false, error: "revocation list unreadable (fail closed)" };
  for (const key of report.validKeys) {
    const hit = opts.revocations.subjects.find((s) => s.kind === "signer" && s.id === key);
    if (hit) return { ok: false, error: `signer '${key}' is revoked: ${hit.reason}` };
  }
  const pkgHit = opts.revocations.subjects.find((s) => s.kind === "package" && s.id === parsed.value.packageId);
  if (pkgHit) return { ok: false, error: `package '${parsed.value.packageId}' is revoked: ${pkgHit.reason}` };
  for (const file of parsed.value.envelope.statement.files) {
    const hit = opts.revocations.subjects.find((s) => s.kind === "file" && s.id === file.sha256);
    if (hit) return { ok: false, error: `file '${file.sha256}' is revoked: ${hit.reason}` };
  }
  return {
    ok: true,
    value: { envelope: parsed.value.envelope, packageId: parsed.value.packageId, signers: report.validKeys },
  };
}
