/**
 * Following a log the node only answers as a tail (the last 64 KiB of each stream, no offset): each poll's tail is
 * matched against the previous one, and only what is new is printed. Pure: text in, text out.
 */

/** The part of `current` that `previous` did not have, given both are tails of the same growing stream. */
export function newOutput(previous: string, current: string): string {
  if (current === previous) return "";
  if (current.startsWith(previous)) return current.slice(previous.length);
  // The window slid: the longest end of `previous` that begins `current` is where they overlap.
  for (let k = Math.min(previous.length, current.length); k > 0; k--) {
    if (current.startsWith(previous.slice(previous.length - k))) return current.slice(k);
  }
  // No overlap at all (more than a window was written between two polls, or the log was trimmed): print it whole.
  return current;
}

/** The last `lines` lines of a text (a trailing newline does not count as a line). */
export function lastLines(text: string, lines: number): string {
  if (lines <= 0) return "";
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  const parts = body.split("\n");
  if (parts.length <= lines) return text;
  return `${parts.slice(-lines).join("\n")}${text.endsWith("\n") ? "\n" : ""}`;
}
