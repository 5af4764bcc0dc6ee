/**
 * How a verb answers: with --json one JSON document on one line of stdout (the only thing on stdout), otherwise
 * text for people. Every verb prints through here so the two modes cannot drift apart.
 */
export function answer(json: boolean | undefined, doc: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(doc)}\n` : text.endsWith("\n") || text === "" ? text : `${text}\n`);
}

/** Whether this invocation asked for --json (for answers given before or outside commander's parsing, e.g. errors). */
export function jsonRequested(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).includes("--json");
}
