/**
 * The berth command tree; `berth --help` groups it by topic (help.ts), whatever the order of the calls below.
 *
 * Each verb group registers itself from its own file (`register…Commands`), and a registration file imports only
 * commander and the CLI's small helpers: a verb's libraries are imported inside its action, so building the tree —
 * for `--help`, completion, or any verb — costs little (issue 19). To add a verb: register it in its group's file
 * (or a new file called from here) and give a new top-level verb a topic in help.ts.
 */
import { Command, Option } from "commander";
import { registerAgentCommands } from "./agents.js";
import { registerAuditCommands } from "./audit.js";
import { registerBackupCommands } from "./backup.js";
import { registerCompletionCommands } from "./completion.js";
import { registerContextCommands } from "./context.js";
import { registerDoctorCommands } from "./doctor.js";
import { registerDownCommands } from "./down.js";
import { CliError } from "./errors.js";
import { presentForPeople } from "./help.js";
import { registerK8sCommands } from "./k8s.js";
import { registerKeyCommands } from "./keys.js";
import { registerMeshCommands } from "./mesh.js";
import { registerMigrateCommands } from "./migrate.js";
import { OUTPUT_FORMATS, type OutputFormat, setOutputFormat } from "./output.js";
import { registerProviderCommands } from "./provider.js";
import { registerNodeCommands } from "./node.js";
import { registerPackageCommands } from "./package.js";
import { registerServeCommands } from "./serve.js";
import { registerUpCommands } from "./up.js";
import { berthVersion } from "../version.js";

/** `-o json|yaml|wide` beside every `--json` (kubectl's spelling; `--json` stays `-o json`). */
function addOutputOption(cmd: Command): void {
  for (const sub of cmd.commands) addOutputOption(sub);
  if (cmd.options.some((o) => o.long === "--json") && !cmd.options.some((o) => o.short === "-o")) {
    cmd.addOption(new Option("-o, --output <format>", "json, yaml, or wide (text with more columns); --json is -o json").choices(OUTPUT_FORMATS.filter((f) => f !== "text")));
  }
}

export function buildProgram(): Command {
  const program = new Command("berth")
    .description("berth: run every agent in exactly one place, on Kubernetes or on your own machines, with a signed record of it")
    .version(berthVersion(), "-V, --version", "print berth's version")
    .showHelpAfterError("(run with --help for usage)");
  // First: commander copies help, output and exit settings to the subcommands registered after it.
  presentForPeople(program);
  registerCompletionCommands(program);
  registerKeyCommands(program);
  registerAuditCommands(program);
  registerK8sCommands(program);
  registerProviderCommands(program);
  registerNodeCommands(program);
  registerPackageCommands(program);
  registerMeshCommands(program);
  registerDoctorCommands(program);
  registerAgentCommands(program);
  registerContextCommands(program);
  registerUpCommands(program);
  registerDownCommands(program);
  registerBackupCommands(program);
  registerServeCommands(program);
  registerMigrateCommands(program);
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
