/**
 * Reading one `valueFrom` reference of an agent's env (issue 17): a file, or a variable of this process's environment.
 * One reader for the two moments a value is read — the deploy (src/agents/secret-env.ts, the file relative to the spec
 * made absolute) and the reschedule that re-reads it (src/mesh/controller/stored-order.ts) — so both refuse the same
 * things: an unset or empty variable, an unreadable, empty or too large file, and a NUL byte, which no environment
 * value can carry. One trailing newline is the file's, not the secret's (`echo token > file`).
 *
 * The failure is a value with its cause, and its message names the variable or the file, never a value; each caller
 * says which field it was reading and what to do in its own words.
 */
import { unreadable } from "./file-errors.js";
import { readFileSync, statSync } from "node:fs";
import { err, ok, type Result } from "./result.js";

/** The node's launch environment is small; a larger "secret" is a wrong file, not a token. */
export const MAX_VALUE_FROM_BYTES = 32 * 1024;

export type ValueFromRef = { readonly file: string } | { readonly env: string };

export type ValueFromCause = "unset" | "too_large" | "unreadable" | "empty" | "nul";

/** Why a reference could not be read: the cause a caller branches on, and a message naming the variable or file. */
export interface ValueFromFailure {
  readonly cause: ValueFromCause;
  readonly message: string;
}

export type ValueFromRead = Result<string, ValueFromFailure>;

export function readValueFrom(ref: ValueFromRef, processEnv: NodeJS.ProcessEnv): ValueFromRead {
  if ("env" in ref) {
    const value = processEnv[ref.env];
    if (value === undefined || value === "")
      return err({ cause: "unset", message: `environment variable ${ref.env} is not set (or empty)` });
    return ok(value);
  }
  let text: string;
  try {
    const size = statSync(ref.file).size;
    if (size > MAX_VALUE_FROM_BYTES)
      return err({ cause: "too_large", message: `${ref.file} has ${size} bytes, more than ${MAX_VALUE_FROM_BYTES}` });
    text = readFileSync(ref.file, "utf8");
  } catch (error) {
    return err({ cause: "unreadable", message: unreadable(ref.file, error, "the secret value") });
  }
  const value = text.replace(/\r?\n$/, "");
  if (value === "") return err({ cause: "empty", message: `${ref.file} is empty` });
  if (value.includes("\0"))
    return err({ cause: "nul", message: `${ref.file} holds a NUL byte, which no environment value can carry` });
  return ok(value);
}
