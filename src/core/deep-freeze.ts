/**
 * Freezes a plain value and everything it holds, for a parse result that a memo shares between readers (issue 19:
 * the node's policy files, the last package manifest): a reader that tried to change it would throw rather than
 * change what the next reader sees.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
