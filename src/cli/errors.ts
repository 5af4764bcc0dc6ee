/** CLI failures that carry their exit status: 1 for a negative answer (verify failed), 2 for usage or I/O. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** Turns a zod error into one line that names the field, for flags and files alike. */
export function describeZodIssues(what: string, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues.map((i) => `${what}: ${i.path.length ? `field ${i.path.map(String).join(".")}` : "value"}: ${i.message}`).join("; ");
}
