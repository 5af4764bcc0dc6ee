/**
 * Preparing a package for placement (spec/mesh.md §5.5, §9.2 step 2): the controller verifies the package against its
 * own signers and revocations with the same rules a node applies, copies it into its package store
 * (`packages/<package_id>/`), and derives from the verified statement everything the engine and the gate need.
 * Nodes fetch from that store copy only, over the request's own connection, and each file is re-checked before it
 * is served.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type EnvelopeVerdict,
  MANIFEST_FILE,
  type ParsedEnvelope,
  parseEnvelope,
  type Statement,
  validSignatureKeys,
  verifyParsedEnvelope,
} from "../../core/packages/manifest.js";
import { ParseMemo } from "../../core/parse-memo.js";
import type { WorkloadSpec } from "../../core/placement/index.js";
import { err, ok, type Result } from "../../kit/result.js";
import { PackageDirSource } from "../client/package-source.js";
import { isPackageId } from "./order.js";
import type { ControllerPolicy } from "./policy.js";
import type { WorkloadRecord } from "./store.js";

export const PACKAGE_STORE = "packages";

export interface PreparedPackage {
  readonly packageId: string;
  readonly statement: Statement;
  readonly source: PackageDirSource;
  readonly signers: readonly string[];
}

export type Prepared = Result<PreparedPackage>;

/**
 * Verifies `ref` (a directory, or a package id in the store) and makes sure the store holds a copy. Issue 12: the
 * manifest and each pinned file are read once; the store copy is written from those same verified bytes, so a package
 * rewritten after its check can never land under the id that was verified. `afterVerify` is a test seam.
 */
export function preparePackage(
  ref: string,
  dataDir: string,
  policy: ControllerPolicy,
  afterVerify?: () => void,
): Prepared {
  const storeRoot = join(dataDir, PACKAGE_STORE);
  const stored = storedPackageDir(ref, dataDir);
  const dir = stored ?? resolve(ref);
  if (!existsSync(join(dir, MANIFEST_FILE))) {
    return err(`package ${ref}: no ${MANIFEST_FILE} there, and no package with that id in ${storeRoot}`);
  }
  // Issue 19: a store copy is prepared from its manifest alone, checked against today's signers and revocations; its
  // files were checked when they were stored, and each is checked again before it is served (PackageDirSource), by
  // the node that receives it too. Re-reading and re-hashing every file on every placement bought nothing more.
  const read = stored ? readVerifiedManifest(dir, policy) : readVerified(dir, policy);
  if (!read.ok) return err(`package ${ref} does not verify on this controller: ${read.error}`);
  afterVerify?.();
  const { verdict, manifest, files } = read.value;
  if (stored && verdict.value.packageId !== ref)
    return err(`package ${ref}: the store copy holds package ${verdict.value.packageId}`);
  const statement = verdict.value.envelope.statement;
  const target = join(storeRoot, verdict.value.packageId);
  if (resolve(dir) !== resolve(target) && !existsSync(join(target, MANIFEST_FILE)))
    writeIntoStore(target, manifest, statement, files);
  // The manifest nodes fetch is the one just verified, not a second read of the store copy (issue 19: that read and
  // its parse were a third of a prepare); the pinned files are served from the store copy, each checked first.
  const source = new PackageDirSource(target, {
    verified: { manifest, packageId: verdict.value.packageId, statement },
  });
  return ok({ packageId: verdict.value.packageId, statement, source, signers: verdict.value.signers });
}

/**
 * Issue 36, `berth deploy --dry-run`: the same checks as `preparePackage` with nothing written (no store copy is made;
 * the source serves from where the package is). What a plan needs: the verified statement and its signers.
 */
export function inspectPackage(ref: string, dataDir: string, policy: ControllerPolicy): Prepared {
  const stored = storedPackageDir(ref, dataDir);
  const dir = stored ?? resolve(ref);
  if (!existsSync(join(dir, MANIFEST_FILE))) {
    return err(
      `package ${ref}: no ${MANIFEST_FILE} there, and no package with that id in ${join(dataDir, PACKAGE_STORE)}`,
    );
  }
  const read = stored ? readVerifiedManifest(dir, policy) : readVerified(dir, policy);
  if (!read.ok) return err(`package ${ref} does not verify on this controller: ${read.error}`);
  const { verdict, manifest } = read.value;
  if (stored && verdict.value.packageId !== ref)
    return err(`package ${ref}: the store copy holds package ${verdict.value.packageId}`);
  const statement = verdict.value.envelope.statement;
  const source = new PackageDirSource(dir, { verified: { manifest, packageId: verdict.value.packageId, statement } });
  return ok({ packageId: verdict.value.packageId, statement, source, signers: verdict.value.signers });
}

/**
 * The store copy `ref` names, when it is the id of a package already in the store (null otherwise): preparing it
 * then writes no file (issue 19: the API's placement record may ride its first write, server/routes/mesh.ts).
 */
export function storedPackageDir(ref: string, dataDir: string): string | null {
  if (!isPackageId(ref)) return null;
  const stored = join(dataDir, PACKAGE_STORE, ref);
  return existsSync(join(stored, MANIFEST_FILE)) ? stored : null;
}

/** The manifest's verdict and bytes, and the pinned files' bytes (none when only the manifest was read), or why not. */
type ReadVerified = Result<{
  readonly verdict: Extract<EnvelopeVerdict, { ok: true }>;
  readonly manifest: Buffer;
  readonly files: ReadonlyMap<string, Buffer>;
}>;

/**
 * The parse of the last manifest text prepared, kept while the text is byte-identical (spec/mesh.md §5.5, the node's
 * rule of §5.4 on this side; issue 19: the parse was most of a stored package's prepare). Only the parse, which
 * depends on the text alone: the id, the signatures under today's signers and the revocations are checked every time.
 */
const manifests = new ParseMemo<ParsedEnvelope>();

/**
 * Issue 35: which signatures of a manifest verify, by the sha256 of its bytes (never by path: the same bytes give the
 * same answer wherever they lie, and other bytes under the same path get their own). A signature's validity is a
 * function of those bytes alone, so each package's signatures are verified once per process, not once per placement;
 * whether a valid signer is trusted, and every revocation, is still judged against today's policy at every prepare.
 */
const validKeysByDigest = new Map<string, readonly string[]>();
const VALID_KEYS_KEPT = 1024;

function validKeysOf(digest: string, parsed: ParsedEnvelope): readonly string[] | undefined {
  if (!parsed.ok) return undefined;
  const kept = validKeysByDigest.get(digest);
  if (kept !== undefined) return kept;
  const keys = Object.freeze(validSignatureKeys(parsed.value.envelope));
  if (validKeysByDigest.size >= VALID_KEYS_KEPT) validKeysByDigest.clear();
  validKeysByDigest.set(digest, keys);
  return keys;
}

/** The envelope, its trusted signature and the revocations, over the manifest bytes read once; no file is read. */
function readVerifiedManifest(dir: string, policy: ControllerPolicy): ReadVerified {
  let manifest: Buffer;
  try {
    manifest = readFileSync(join(dir, MANIFEST_FILE));
  } catch {
    return err(`${join(dir, MANIFEST_FILE)} is missing`);
  }
  const parsed = manifests.get("manifest", manifest.toString("utf8"), parseEnvelope);
  const digest = createHash("sha256").update(manifest).digest("hex");
  const validKeys = validKeysOf(digest, parsed);
  const verdict = verifyParsedEnvelope(parsed, {
    trustedSigners: policy.signers,
    revocations: policy.revocations,
    ...(validKeys === undefined ? {} : { validKeys }),
  });
  return verdict.ok ? ok({ verdict, manifest, files: new Map() }) : err(verdict.error);
}

/** The node's rules (§5.4) over bytes read once: envelope, trusted signature, revocations, each file's size and hash. */
function readVerified(dir: string, policy: ControllerPolicy): ReadVerified {
  const read = readVerifiedManifest(dir, policy);
  if (!read.ok) return read;
  const { verdict, manifest } = read.value;
  const files = new Map<string, Buffer>();
  for (const f of verdict.value.envelope.statement.files) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(dir, f.path));
    } catch {
      return err(`${f.path} is missing`);
    }
    if (bytes.length !== f.size) return err(`${f.path} has ${bytes.length} bytes, pinned ${f.size}`);
    if (createHash("sha256").update(bytes).digest("hex") !== f.sha256)
      return err(`${f.path} does not match its pinned sha256`);
    files.set(f.path, bytes);
  }
  return ok({ verdict, manifest, files });
}

/** Writes the verified manifest and pinned files only (unpinned files are never transferred), then renames into place. */
function writeIntoStore(to: string, manifest: Buffer, statement: Statement, files: ReadonlyMap<string, Buffer>): void {
  const tmp = `${to}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  writeFileSync(join(tmp, MANIFEST_FILE), manifest, { mode: 0o600 });
  for (const f of statement.files) {
    mkdirSync(dirname(join(tmp, f.path)), { recursive: true });
    writeFileSync(join(tmp, f.path), files.get(f.path) as Buffer, { mode: f.mode === "0755" ? 0o755 : 0o644 });
  }
  try {
    renameSync(tmp, to);
  } catch (error) {
    // Another controller process stored the same package first: same id, same bytes.
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(join(to, MANIFEST_FILE))) throw error;
  }
}

/** The engine's workload spec (§8.2) from the verified statement. */
export function workloadSpecOf(name: string, pkg: PreparedPackage): WorkloadSpec {
  const s = pkg.statement;
  return {
    name,
    kind: s.kind,
    package_id: pkg.packageId,
    variants: s.variants.map((v) => ({
      id: v.id,
      arch: v.arch,
      os: v.os,
      entry: { program: v.entry.program, args: [...v.entry.args] },
      requires: v.requires as WorkloadSpec["requirements"],
    })),
    requirements: s.requirements as WorkloadSpec["requirements"],
    preferences: s.preferences as WorkloadSpec["preferences"],
    memory_bytes: s.resources.memory_mb * 1024 * 1024,
    uses_accelerator: false,
    policy: {
      min_tier: s.policy.min_tier,
      labels: [...s.policy.labels],
      excludes: [...s.policy.excludes],
      sticky: s.policy.sticky,
    },
    perf: null,
    refs: [pkg.packageId, ...s.files.map((f) => f.sha256), ...pkg.signers],
  };
}

/** What is kept with the decision and the placement for later gate calls and the engine's cluster state. */
export function workloadRecordOf(pkg: PreparedPackage): WorkloadRecord {
  const s = pkg.statement;
  return {
    kind: s.kind,
    network: s.network,
    secrets: s.secrets.length > 0,
    cpu_millis: s.resources.cpu_millis,
    memory_bytes: s.resources.memory_mb * 1024 * 1024,
    labels: [...s.policy.labels],
    excludes: [...s.policy.excludes],
    package_id: pkg.packageId,
    signer_keys: [...pkg.signers],
    file_hashes: s.files.map((f) => f.sha256),
  };
}
