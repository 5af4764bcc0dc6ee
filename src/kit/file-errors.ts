/**
 * What went wrong reading a file, said as a person would (issue 36 item 5: a missing file says the file): "X does not
 * exist", not "ENOENT" or "correct the named field". `what` says what the file is for, so the reader knows which one.
 */
export function unreadable(path: string, error: unknown, what?: string): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const role = what ? ` (${what})` : "";
  switch (code) {
    case "ENOENT":
      return `${path} does not exist${role}; check the path`;
    case "EACCES":
    case "EPERM":
      return `${path} cannot be read by this user${role}; fix its owner or mode`;
    case "EISDIR":
      return `${path} is a directory, not a file${role}`;
    case "ENOTDIR":
      return `a part of ${path} is not a directory${role}; check the path`;
    default:
      return `cannot read ${path}${role}: ${code ?? (error instanceof Error ? error.message : String(error))}`;
  }
}
