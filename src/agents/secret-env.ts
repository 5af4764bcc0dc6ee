/**
 * A mesh agent's env as the node gets it (issue 17): the spec's inline values, and its `valueFrom` values read here, in
 * the shell that deploys — a file relative to the spec, or a variable of this process's environment (the CLI's, or
 * `berth serve`'s for the API). The values go into the signed `place` body, over TLS, to the node and the agent; the
 * controller keeps none of them (the registry keeps the spec text, which holds only the references, and a
 * `berth agent replace` reads them again). Errors name the field and the file or variable, never a value.
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { splitSpecEnv } from "../core/agents/spec.js";
import { readValueFrom, type ValueFromRef } from "../kit/value-from.js";
import { type Loaded, type LoadedSpec, specField } from "./spec-file.js";

export interface ResolvedEnv {
  /** Every name → value, for the place body only. */
  readonly env: Readonly<Record<string, string>>;
  /** The names whose values came from `valueFrom` (what may be shown about them). */
  readonly secretNames: readonly string[];
  /** Issue 16: each such name's reference (a file made absolute), so a reschedule re-reads it; never a value. */
  readonly refs: Readonly<Record<string, ValueFromRef>>;
}

export function resolveSpecEnv(loaded: LoadedSpec, processEnv: NodeJS.ProcessEnv): Loaded<ResolvedEnv> {
  const { inline, from } = splitSpecEnv(loaded.spec.spec.config.env);
  const env: Record<string, string> = { ...inline };
  const refs: Record<string, ValueFromRef> = {};
  for (const [name, source] of Object.entries(from)) {
    const ref: ValueFromRef =
      "env" in source
        ? { env: source.env }
        : { file: isAbsolute(source.file) ? source.file : resolve(dirname(loaded.path), source.file) };
    const read = readValueFrom(ref, processEnv);
    if (!read.ok) {
      const field = specField(loaded, `spec.config.env.${name}.valueFrom.${"env" in ref ? "env" : "file"}`);
      const advice =
        read.error.cause === "unset"
          ? " in the process that deploys (the CLI, or the berth serve / berth up of the home it went through); export it there"
          : read.error.cause === "too_large"
            ? "; is it the right file?"
            : "";
      return { ok: false, error: `${field}: ${read.error.message}${advice}` };
    }
    env[name] = read.value;
    refs[name] = ref;
  }
  return { ok: true, value: { env, secretNames: Object.keys(from).sort(), refs } };
}
