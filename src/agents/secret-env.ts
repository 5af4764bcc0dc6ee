/**
 * A mesh agent's env as the node gets it (issue 17): the spec's inline values, and its `valueFrom` values read here, in
 * the shell that deploys — a file relative to the spec, or a variable of this process's environment (the CLI's, or
 * `berth serve`'s for the API). The values go into the signed `place` body, over TLS, to the node and the agent; the
 * controller keeps none of them (the registry keeps the spec text, which holds only the references, and a
 * `berth agent replace` reads them again). Errors name the field and the file or variable, never a value.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { splitSpecEnv } from "../core/agents/spec.js";
import type { Loaded, LoadedSpec } from "./spec-file.js";

/** The node's launch environment is small; a larger "secret" is a wrong file, not a token. */
export const MAX_SECRET_BYTES = 32 * 1024;

export interface ResolvedEnv {
  /** Every name → value, for the place body only. */
  readonly env: Readonly<Record<string, string>>;
  /** The names whose values came from `valueFrom` (what may be shown about them). */
  readonly secretNames: readonly string[];
  /** Issue 16: each such name's reference (a file made absolute), so a reschedule re-reads it; never a value. */
  readonly refs: Readonly<Record<string, { readonly file: string } | { readonly env: string }>>;
}

/** One trailing newline is the file's, not the secret's (`echo token > file`). */
function withoutFinalNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

export function resolveSpecEnv(loaded: LoadedSpec, processEnv: NodeJS.ProcessEnv): Loaded<ResolvedEnv> {
  const { inline, from } = splitSpecEnv(loaded.spec.spec.config.env);
  const env: Record<string, string> = { ...inline };
  const refs: Record<string, { file: string } | { env: string }> = {};
  for (const [name, source] of Object.entries(from)) {
    const field = `${loaded.path}: spec.config.env.${name}.valueFrom`;
    if ("env" in source) {
      const value = processEnv[source.env];
      if (value === undefined || value === "") return { ok: false, error: `${field}.env: environment variable ${source.env} is not set (or empty) in the process that deploys (the CLI, or the berth serve / berth up of the home it went through); export it there` };
      env[name] = value;
      refs[name] = { env: source.env };
      continue;
    }
    const file = isAbsolute(source.file) ? source.file : resolve(dirname(loaded.path), source.file);
    refs[name] = { file };
    let text: string;
    try {
      const size = statSync(file).size;
      if (size > MAX_SECRET_BYTES) return { ok: false, error: `${field}.file: ${file} has ${size} bytes, more than ${MAX_SECRET_BYTES}; is it the right file?` };
      text = readFileSync(file, "utf8");
    } catch (error) {
      return { ok: false, error: `${field}.file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "error"})` };
    }
    const value = withoutFinalNewline(text);
    if (value === "") return { ok: false, error: `${field}.file: ${file} is empty` };
    if (value.includes("\0")) return { ok: false, error: `${field}.file: ${file} holds a NUL byte, which no environment value can carry` };
    env[name] = value;
  }
  return { ok: true, value: { env, secretNames: Object.keys(from).sort(), refs } };
}
