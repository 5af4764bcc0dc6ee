/**
 * Package directories on disk (spec/mesh.md §5.1, §5.5): the source manifest an operator edits, `build` (pin every
 * listed file by SHA-256, size and mode into the statement), `sign` (add a signature; the id does not change) and
 * `verify` (the same rules a node applies, reading local files).
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import { z } from "zod";
import type { RevocationList } from "../../core/governance/policy.js";
import {
  type Envelope,
  MANIFEST_FILE,
  PACKAGE_FORMAT,
  PackagePathSchema,
  packageIdOf,
  parseEnvelope,
  RequirementSchema,
  type Statement,
  StatementSchema,
  signStatement,
  VariantSchema,
  verifyEnvelope,
} from "../../core/packages/manifest.js";
import type { SigningKey } from "../../core/crypto/ed25519.js";
import { err, ok, type Result } from "../../kit/result.js";
import { ConfigSurfaceSchema } from "../../core/packages/config-surface.js";
import { describeIssues } from "../../core/protocol/messages.js";

export const SOURCE_FILE = "berth-package.src.json";

/** The operator-written source: the statement without hashes; `files` lists paths only. */
export const SourceManifestSchema = z.strictObject({
  name: z.string(),
  version: z.string().default("0.1.0"),
  kind: z.string().default("agent"),
  description: z.string().default(""),
  files: z.array(PackagePathSchema).min(1).max(1024),
  variants: z.array(VariantSchema).min(1).max(16),
  resources: z
    .strictObject({ memory_mb: z.number().int().min(0), cpu_millis: z.number().int().min(0) })
    .default({ memory_mb: 0, cpu_millis: 0 }),
  network: z.enum(["none", "lan", "egress"]).default("none"),
  secrets: z.array(z.string()).default([]),
  requirements: z.array(RequirementSchema).default([]),
  preferences: z.array(z.strictObject({ requirement: RequirementSchema, weight: z.number().int() })).default([]),
  policy: z
    .strictObject({
      min_tier: z.enum(["discovered", "paired", "pinned"]).default("paired"),
      labels: z.array(z.string()).default([]),
      excludes: z.array(z.string()).default([]),
      sticky: z.boolean().default(false),
      migratable: z.boolean().default(true),
    })
    .default({ min_tier: "paired", labels: [], excludes: [], sticky: false, migratable: true }),
  health: z
    .strictObject({ exec: z.array(z.string()), interval_s: z.number().int(), misses: z.number().int() })
    .nullable()
    .default(null),
  config: ConfigSurfaceSchema.optional(),
});
export type SourceManifest = z.input<typeof SourceManifestSchema>;

export class PackageError extends Error {
  override name = "PackageError";
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new PackageError(`${path} is missing or not valid JSON`);
  }
}

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text, { mode: 0o644 });
  renameSync(`${path}.tmp`, path);
}

export function initPackage(dir: string, source: SourceManifest): string {
  const path = join(dir, SOURCE_FILE);
  if (existsSync(path)) throw new PackageError(`${path} already exists; edit it instead`);
  writeAtomic(path, `${JSON.stringify(source, null, 2)}\n`);
  return path;
}

/** Pins every listed file and writes the envelope with no signatures (sign adds them). Returns the package id. */
export function buildPackage(dir: string): { packageId: string; statement: Statement } {
  const parsed = SourceManifestSchema.safeParse(readJson(join(dir, SOURCE_FILE)));
  if (!parsed.success) throw new PackageError(describeIssues(SOURCE_FILE, parsed.error.issues));
  const src = parsed.data;
  const root = realpathSync(dir);
  const files = src.files.map((path) => {
    const real = insidePackage(dir, root, path);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(real);
    } catch {
      throw new PackageError(`${SOURCE_FILE}: field files: ${path} does not exist in ${dir}`);
    }
    if (!st.isFile()) throw new PackageError(`${SOURCE_FILE}: field files: ${path} is not a regular file`);
    // Hash and size come from the same read, so the pinned pair always describes one version of the file.
    const bytes = readFileSync(real);
    return {
      path,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      size: bytes.length,
      mode: (st.mode & 0o111) !== 0 ? ("0755" as const) : ("0644" as const),
    };
  });
  const candidate = { format: PACKAGE_FORMAT, ...src, files };
  const statement = StatementSchema.safeParse(candidate);
  if (!statement.success) throw new PackageError(describeIssues("statement", statement.error.issues));
  const envelope: Envelope = { statement: statement.data, signatures: [] };
  writeAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify(envelope, null, 2)}\n`);
  return { packageId: packageIdOf(statement.data), statement: statement.data };
}

/**
 * The real path of a listed file, refusing one that a symbolic link takes out of the package directory (issue 12:
 * an outside file would be signed and shipped). A link that stays inside is followed: the package pins the bytes
 * it points to, at the listed path, and a node materialises a regular file. Names the link and where it points.
 */
function insidePackage(dir: string, root: string, path: string): string {
  let real: string;
  try {
    real = realpathSync(join(dir, path));
  } catch {
    return join(dir, path); // missing: the caller's stat names it
  }
  const rel = relative(root, real);
  if (rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel)) return real;
  const parts = path.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const link = parts.slice(0, i).join("/");
    if (lstatSync(join(dir, link)).isSymbolicLink()) {
      throw new PackageError(
        `${SOURCE_FILE}: field files: ${path}: ${link} is a symbolic link to ${readlinkSync(join(dir, link))}, which resolves to ${real}, outside the package directory ${root}; copy the file into the package instead`,
      );
    }
  }
  throw new PackageError(
    `${SOURCE_FILE}: field files: ${path} resolves to ${real}, outside the package directory ${root}`,
  );
}

export function readEnvelope(dir: string): { envelope: Envelope; packageId: string } {
  const parsed = parseEnvelope(readJson(join(dir, MANIFEST_FILE)));
  if (!parsed.ok) throw new PackageError(`${join(dir, MANIFEST_FILE)}: ${parsed.error}`);
  return parsed.value;
}

/** Adds (or replaces) this key's signature; the package id is unchanged. */
export function signPackage(dir: string, key: SigningKey): { packageId: string; signatures: number } {
  const { envelope, packageId } = readEnvelope(dir);
  if (envelope.signatures.length >= 8 && !envelope.signatures.some((s) => s.key === key.publicKey)) {
    throw new PackageError("a package carries at most 8 signatures");
  }
  const signatures = [
    ...envelope.signatures.filter((s) => s.key !== key.publicKey),
    signStatement(key, envelope.statement),
  ];
  writeAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify({ statement: envelope.statement, signatures }, null, 2)}\n`);
  return { packageId, signatures: signatures.length };
}

/** The package's id and the trusted keys that signed it, or why the directory is refused. */
export type DirVerdict = Result<{ packageId: string; signers: readonly string[] }>;

/** The node's rules against local files: envelope, trusted signature, revocations, then every file's size and hash. */
export function verifyPackageDir(
  dir: string,
  trustedSigners: ReadonlySet<string>,
  revocations: RevocationList | null,
): DirVerdict {
  let text: string;
  try {
    text = readFileSync(join(dir, MANIFEST_FILE), "utf8");
  } catch {
    return err(`${join(dir, MANIFEST_FILE)} is missing`);
  }
  const v = verifyEnvelope(text, { trustedSigners, revocations });
  if (!v.ok) return err(v.error);
  for (const f of v.value.envelope.statement.files) {
    const full = join(dir, f.path);
    let bytes: Buffer;
    try {
      bytes = readFileSync(full);
    } catch {
      return err(`${f.path} is missing`);
    }
    if (bytes.length !== f.size) return err(`${f.path} has ${bytes.length} bytes, pinned ${f.size}`);
    if (createHash("sha256").update(bytes).digest("hex") !== f.sha256)
      return err(`${f.path} does not match its pinned sha256`);
  }
  return ok({ packageId: v.value.packageId, signers: v.value.signers });
}
