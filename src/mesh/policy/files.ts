/**
 * The policy files a node and a controller both keep in their data directory (spec/mesh.md §5.3, §7.2, §7.5):
 * signers.json, permits.json, revocations.json. Loading never half-succeeds: an invalid file has its fail-closed
 * meaning (no trusted signers, no permits, revocations unreadable) and the error is reported so the reader can chain
 * `policy.load` with `ok: false`. Shared by both sides, so it belongs to neither `node/` nor `controller/`.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { sha256 } from "../../core/crypto/tagged.js";
import { ParseMemo } from "../../core/parse-memo.js";
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

export const POLICY_FILES = {
  signers: "signers.json",
  permits: "permits.json",
  revocations: "revocations.json",
} as const;

export const SignersFileSchema = z
  .array(z.strictObject({ key: z.string().regex(HEX64, "key must be 64 lowercase hex"), name: z.string().max(64) }))
  .max(64);

export class PolicyFileError extends Error {
  override name = "PolicyFileError";
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
    return {
      file: name,
      sha256: null,
      loaded: { ok: false, error: `cannot read ${name}: ${(error as Error).message}` },
    };
  }
  return parses.get(path, text, (t) => ({
    file: name,
    sha256: sha256(t).toString("hex"),
    loaded: parse(t),
  })) as PolicyFile<T>;
}

/** Each policy file is still read at every use, so a change is seen at once; an identical text skips the parse. */
const parses = new ParseMemo<PolicyFile<unknown>>();

export function loadSigners(dataDir: string): PolicyFile<string[]> {
  return readPolicy(
    dataDir,
    POLICY_FILES.signers,
    (text) => {
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        return { ok: false, error: "signers file is not valid JSON" };
      }
      const parsed = SignersFileSchema.safeParse(raw);
      return parsed.success
        ? { ok: true, value: parsed.data.map((s) => s.key) }
        : { ok: false, error: describeIssues("signers", parsed.error.issues) };
    },
    [],
  );
}

export function loadPermits(dataDir: string): PolicyFile<PermitRule[]> {
  return readPolicy(dataDir, POLICY_FILES.permits, parsePermits, []);
}

export function loadRevocations(dataDir: string): PolicyFile<RevocationList> {
  return readPolicy(dataDir, POLICY_FILES.revocations, parseRevocations, { generation: 0, subjects: [] });
}

/**
 * The permits API (§7.2): validates rules and replaces permits.json atomically; the daemon picks the new file up on
 * its next request and chains `policy.load`. An invalid rule set is refused and the old file stays.
 */
export function savePermits(dataDir: string, rules: readonly PermitRuleInput[]): PermitRule[] {
  const parsed = PermitsFileSchema.safeParse(rules);
  if (!parsed.success) throw new PolicyFileError(describeIssues("permits", parsed.error.issues));
  const path = join(dataDir, POLICY_FILES.permits);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(parsed.data, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
  return parsed.data;
}

/** Issue 33: where a node keeps each controller's pushed revocation list, one file per controller id. */
export const PUSHED_REVOCATIONS_DIR = "revocations.pushed";

/** The lists controllers pushed to this node, by controller id (a file that does not parse loads as unreadable). */
export function loadPushedRevocations(
  dataDir: string,
): Array<{ controller: string; file: PolicyFile<RevocationList> }> {
  const dir = join(dataDir, PUSHED_REVOCATIONS_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /^[0-9a-f]{32}\.json$/.test(f))
    .sort()
    .map((f) => ({
      controller: f.slice(0, -5),
      file: readPolicy(dataDir, join(PUSHED_REVOCATIONS_DIR, f), parseRevocations, { generation: 0, subjects: [] }),
    }));
}

/** Writes one revocation list atomically and durably (tmp, fsync, rename, fsync of the directory). */
export function saveRevocationList(dataDir: string, name: string, list: RevocationList): void {
  const path = join(dataDir, name);
  const dir = join(path, "..");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(list, null, 2)}\n`, { mode: 0o600 });
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const d = openSync(dir, "r");
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}
