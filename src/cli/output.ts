/**
 * How a verb answers: `-o json` (or `--json`) one JSON document on one line of stdout (the only thing on stdout),
 * `-o yaml` the same document as YAML, otherwise text for people (`-o wide`: tables with more columns). Every verb
 * prints through here so the modes cannot drift apart.
 */
import { createRequire } from "node:module";

export const OUTPUT_FORMATS = ["text", "wide", "json", "yaml"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

// One process answers one command: the format is chosen once, before the verb's action runs (program.ts).
let chosen: OutputFormat = "text";

export function setOutputFormat(format: OutputFormat): void {
  chosen = format;
}

export function outputFormat(): OutputFormat {
  return chosen;
}

/** Whether tables should carry their extra columns (`-o wide`). */
export const wideOutput = () => chosen === "wide";

/** YAML loaded on first use only: most answers never need it. */
function yamlText(doc: unknown): string {
  const { stringify } = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return stringify(doc);
}

/** The text of a machine-readable document in the given format (JSON on one line, or YAML). */
export function failureText(format: OutputFormat, doc: unknown): string {
  return format === "yaml" ? yamlText(doc) : `${JSON.stringify(doc)}\n`;
}

export function answer(json: boolean | undefined, doc: unknown, text: string): void {
  if (chosen === "yaml") process.stdout.write(yamlText(doc));
  else
    process.stdout.write(
      json || chosen === "json" ? `${JSON.stringify(doc)}\n` : text.endsWith("\n") || text === "" ? text : `${text}\n`,
    );
}

/**
 * A verb's negative answer that is a document too (`{ok:false, error}`): the document on stdout for programs, and for
 * people one `berth: …` line on stderr, the prefix every other failure has (issue 36 item 5).
 */
export function answerRefusal(json: boolean | undefined, doc: unknown, message: string): void {
  if (json || chosen === "json" || chosen === "yaml") answer(json, doc, "");
  else process.stderr.write(`berth: ${message}\n`);
}

/**
 * The format this invocation asked for, read from the raw arguments (for answers given before or outside commander's
 * parsing, e.g. errors): `--json`, `-o F`, `-oF`, `--output F`, `--output=F`; options after `--` do not count.
 */
export function outputRequested(argv: readonly string[]): OutputFormat {
  const end = argv.indexOf("--");
  const args = end === -1 ? argv : argv.slice(0, end);
  let format: OutputFormat = "text";
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const value =
      a === "-o" || a === "--output"
        ? args[i + 1]
        : a.startsWith("--output=")
          ? a.slice(9)
          : /^-o[a-z]/.test(a)
            ? a.slice(2)
            : a === "--json"
              ? "json"
              : undefined;
    if (value !== undefined && (OUTPUT_FORMATS as readonly string[]).includes(value)) format = value as OutputFormat;
  }
  return format;
}

/** Whether this invocation asked for a machine-readable document (JSON or YAML). */
export function jsonRequested(argv: readonly string[]): boolean {
  const f = outputRequested(argv);
  return f === "json" || f === "yaml";
}
