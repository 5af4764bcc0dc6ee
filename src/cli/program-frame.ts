/**
 * What every berth command tree has around its verbs: the root command (name, version, help for people) and, once
 * the verbs are registered, `-o json|yaml|wide` beside every `--json` and the output format chosen before any action.
 * The whole tree (program.ts) and the daemon's own (node-serve.ts) are built inside the same frame, so `berth node
 * serve` parses, helps and fails the same way from either.
 */
import { Command, Option } from "commander";
import { CliError } from "./errors.js";
import { presentForPeople } from "./help.js";
import { OUTPUT_FORMATS, type OutputFormat, setOutputFormat } from "./output.js";
import { berthVersion } from "../version.js";

/** The root `berth` command, before any verb is registered. */
export function rootCommand(): Command {
  const program = new Command("berth")
    .description(
      "berth: run every agent in exactly one place, on Kubernetes or on your own machines, with a signed record of it",
    )
    .version(berthVersion(), "-V, --version", "print berth's version")
    .showHelpAfterError("(run with --help for usage)");
  // First: commander copies help, output and exit settings to the subcommands registered after it.
  presentForPeople(program);
  return program;
}

/** `-o json|yaml|wide` beside every `--json` (kubectl's spelling; `--json` stays `-o json`). */
function addOutputOption(cmd: Command): void {
  for (const sub of cmd.commands) addOutputOption(sub);
  if (cmd.options.some((o) => o.long === "--json") && !cmd.options.some((o) => o.short === "-o")) {
    cmd.addOption(
      new Option("-o, --output <format>", "json, yaml, or wide (text with more columns); --json is -o json").choices(
        OUTPUT_FORMATS.filter((f) => f !== "text"),
      ),
    );
  }
}

/** After the verbs are registered: the output option and the format chosen before any action runs. */
export function finishProgram(program: Command): Command {
  addOutputOption(program);
  // The format is chosen before any action runs; machine formats also turn off spinners and colour (as --json does).
  program.hook("preAction", (_root, action) => {
    const o = action.opts() as { output?: OutputFormat; json?: boolean };
    if (o.output === undefined) return;
    if (o.json && o.output !== "json") throw new CliError(`--json and -o ${o.output}: give one output format`);
    setOutputFormat(o.output);
    if (o.output === "json" || o.output === "yaml") action.setOptionValue("json", true);
  });
  return program;
}
