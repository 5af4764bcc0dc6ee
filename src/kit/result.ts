/**
 * One result type for every expected failure (issue 32, CONVENTIONS.md "expected failures are values"): a decision or
 * a read that can fail returns `Result<T, E>`, the value under `value` or the failure under `error`, so a caller reads
 * every one the same way (`if (!r.ok) return r;`, then `r.value`) instead of learning which of six field names this
 * module chose for its failure. `E` is a message (`string`, the default) or a tagged failure where the caller branches
 * on why (`AgentFailure` in src/agents/target.ts, `ValueFromFailure` in value-from.ts).
 *
 * A result that says only "it worked" carries `undefined` (`ok()`); it is still `.value`-shaped so a caller never asks
 * which kind of success it holds.
 */

export type Result<T, E = string> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: E };

export function ok(): Result<void, never>;
export function ok<T>(value: T): Result<T, never>;
export function ok<T>(value?: T): Result<T | undefined, never> {
  return { ok: true, value };
}

export const err = <E>(error: E): Result<never, E> => ({ ok: false, error });
