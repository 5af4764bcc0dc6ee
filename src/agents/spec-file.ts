/**
 * Reading an agent spec from disk and resolving what it points at: the package directory (relative to the spec
 * file), the package id the mesh intent is computed from, and the Nostr identity of a Kubernetes agent (from a file
 * or an environment variable, never from the spec). Errors name the file and field and never echo a secret.
 */
import type { Result } from "../kit/result.js";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { type AgentSpecDocument, meshIntentFingerprint, parseAgentSpec, splitSpecEnv } from "../core/agents/spec.js";
import { inlineSecret, surfaceOf } from "../core/packages/config-surface.js";
import { unreadable } from "../kit/file-errors.js";
import { MANIFEST_FILE } from "../core/packages/manifest.js";
import { readEnvelope } from "../mesh/packages/dir.js";

export interface LoadedSpec {
  readonly spec: AgentSpecDocument;
  /** Absolute path of the spec file; relative paths inside it resolve against its directory. */
  readonly path: string;
  readonly text: string;
  /**
   * How the spec's author names it in messages (issue 36: one text per mistake): the file given to `berth deploy`,
   * also when that CLI went through a server; null for a body posted to the API, whose messages start at the field.
   */
  readonly source: string | null;
}

/** `SOURCE: FIELD` for a message about one field of the spec. */
export function specField(loaded: Pick<LoadedSpec, "source">, field: string): string {
  return loaded.source === null ? field : `${loaded.source}: ${field}`;
}

export type Loaded<T> = Result<T>;

export function loadSpecFile(path: string): Loaded<LoadedSpec> {
  const abs = resolve(path);
  let text: string;
  try {
    text = readFileSync(abs, "utf8");
  } catch (error) {
    return {
      ok: false,
      error: `cannot read the agent spec ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    };
  }
  return specFromText(text, abs);
}

/** `source` names the spec in messages (default: its path); `null` for none (see LoadedSpec.source). */
export function specFromText(text: string, abs: string, source: string | null = abs): Loaded<LoadedSpec> {
  const parsed = parseAgentSpec(text, source);
  if (!parsed.ok) return { ok: false, error: parsed.error.join("\n") };
  return { ok: true, value: { spec: parsed.value, path: abs, text, source } };
}

function relativeTo(spec: LoadedSpec, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(spec.path), p);
}

export interface MeshIntent {
  readonly packageDir: string;
  readonly packageId: string;
  readonly intent: string;
}

/**
 * The package's id from its manifest (the controller verifies the signatures when it places). `env` is the resolved
 * env (secret-env.ts): the intent is a digest of it, so a changed secret is a changed intent, and only the digest is kept.
 */
export function meshIntentOf(loaded: LoadedSpec, env: Readonly<Record<string, string>>): Loaded<MeshIntent> {
  const s = loaded.spec.spec;
  if (s.package === undefined)
    return { ok: false, error: `${specField(loaded, "spec.package")}: a mesh agent needs a package directory` };
  const packageDir = relativeTo(loaded, s.package);
  let packageId: string;
  let statement: ReturnType<typeof readEnvelope>["envelope"]["statement"];
  const field = specField(loaded, "spec.package");
  // Issue 36 item 5: a missing directory is named as missing, not blamed on a manifest file inside it.
  if (!existsSync(packageDir))
    return {
      ok: false,
      error: `${field}: no package directory ${packageDir}; make one with \`berth package init DIR\`, then \`berth package build DIR\` and \`berth package sign DIR\``,
    };
  if (!statSync(packageDir).isDirectory())
    return { ok: false, error: `${field}: ${packageDir} is a file, not a package directory` };
  if (!existsSync(join(packageDir, MANIFEST_FILE)))
    return {
      ok: false,
      error: `${field}: ${packageDir} has no ${MANIFEST_FILE}: build and sign it with \`berth package build DIR\` and \`berth package sign DIR\``,
    };
  try {
    const read = readEnvelope(packageDir);
    packageId = read.packageId;
    statement = read.envelope.statement;
  } catch (error) {
    return {
      ok: false,
      error: `${field}: ${(error as Error).message}; build and sign it again with \`berth package build DIR\` and \`berth package sign DIR\``,
    };
  }
  // Issue 33 item 10: refused before anything is placed or remembered; the value is never repeated.
  const secret = inlineSecret(surfaceOf(statement.config), Object.keys(splitSpecEnv(s.config.env).inline));
  if (secret !== null) {
    return {
      ok: false,
      error: `${specField(loaded, `spec.config.env.${secret}`)}: package ${statement.name} types ${secret} secret, and an inline value would be kept in the controller's store and its backups; give it as { "valueFrom": { "file": "…" } } or { "valueFrom": { "env": "…" } }`,
    };
  }
  const intent = meshIntentFingerprint({
    agent: loaded.spec.metadata.name,
    packageId,
    config: { args: s.config.args, env },
  });
  return { ok: true, value: { packageDir, packageId, intent } };
}

/** The agent's nsec from `nsec_file` or `nsec_env`. The value is never part of an error. */
export function readNsec(loaded: LoadedSpec, env: NodeJS.ProcessEnv): Loaded<string> {
  const k = loaded.spec.spec.kubernetes;
  if (k === undefined)
    return {
      ok: false,
      error: `${specField(loaded, "spec.kubernetes")}: a Kubernetes agent needs a kubernetes section`,
    };
  if (k.nsec_env !== undefined) {
    const v = env[k.nsec_env];
    if (v === undefined || v.trim() === "")
      return {
        ok: false,
        error: `${specField(loaded, "spec.kubernetes.nsec_env")}: environment variable ${k.nsec_env} is not set; export the agent's nsec in it`,
      };
    return { ok: true, value: v.trim() };
  }
  const file = relativeTo(loaded, k.nsec_file ?? "");
  try {
    return { ok: true, value: readFileSync(file, "utf8").trim() };
  } catch (error) {
    return {
      ok: false,
      error: `${specField(loaded, "spec.kubernetes.nsec_file")}: ${unreadable(file, error, "the agent's nsec; `berth keys new --nsec FILE` makes one")}`,
    };
  }
}
