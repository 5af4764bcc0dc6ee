/**
 * berth contexts (issue 13, "A CLI that works from another machine"), the way kubectl and nomad name a server: a
 * context is a name for one `berth serve` — its URL, the file holding its API token, and how to trust its TLS
 * certificate (a CA or the server's own certificate as PEM, and/or the SHA-256 of its certificate). The file is
 * `$BERTH_CONTEXTS`, else `$BERTH_HOME/contexts.json` (~/.berth/contexts.json), mode 0600. It holds paths, never a
 * token: the token stays in its own file, read at each call.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { CliError, describeZodIssues, invalidInput } from "../errors.js";
import { berthHome } from "../paths.js";

export const ContextNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
    "must be 1–63 letters, digits, '.', '_' or '-', starting with a letter or digit",
  );
const Sha256Pin = z
  .string()
  .transform((s) => s.replace(/:/g, "").toLowerCase())
  .pipe(
    z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be the certificate's SHA-256 fingerprint (64 hex characters, colons allowed)"),
  );

export const ServerUrlSchema = z
  .string()
  .url("must be a URL such as https://controller.example:7420")
  .refine((u) => /^https?:\/\//.test(u), "must start with http:// or https://")
  .transform((u) => u.replace(/\/+$/, "").replace(/\/api\/v1$/, ""));

export const ContextSchema = z.strictObject({
  server: ServerUrlSchema,
  token_file: z.string().min(1),
  ca_file: z.string().min(1).optional(),
  pin_sha256: Sha256Pin.optional(),
  /** Issue 33 item 14: set by `context add --insecure-http`; without it a plain-HTTP server on another host is refused. */
  insecure_http: z.literal(true).optional(),
});
export type Context = z.infer<typeof ContextSchema>;

const ContextsFileSchema = z.strictObject({
  current: z.string().nullable(),
  contexts: z.record(ContextNameSchema, ContextSchema),
});
export type ContextsFile = z.infer<typeof ContextsFileSchema>;

export const contextsPath = () => process.env.BERTH_CONTEXTS ?? join(berthHome(), "contexts.json");

const EMPTY: ContextsFile = { current: null, contexts: {} };

export function readContexts(path = contextsPath()): ContextsFile {
  if (!existsSync(path)) return EMPTY;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new CliError(
      `${path} is not valid JSON (${(error as Error).message.split("\n")[0]}); fix it, or remove it and add the contexts again`,
      2,
      { kind: "file" },
    );
  }
  const parsed = ContextsFileSchema.safeParse(raw);
  if (!parsed.success) throw invalidInput(describeZodIssues(path, parsed.error.issues));
  return parsed.data;
}

/** Written whole to a temporary file, then renamed: a reader never sees half a file. */
export function writeContexts(file: ContextsFile, path = contextsPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(partial, 0o600);
  renameSync(partial, path);
}

/** A context by name, or a usage error that lists the known ones. */
export function contextNamed(file: ContextsFile, name: string, path = contextsPath()): Context {
  const c = file.contexts[name];
  if (!c) {
    const known = Object.keys(file.contexts);
    throw new CliError(
      `no context ${JSON.stringify(name)} in ${path}; ${known.length ? `known: ${known.join(", ")}` : "add one with `berth context add NAME --server URL --token-file FILE`"}`,
      2,
      { kind: "usage" },
    );
  }
  return c;
}
