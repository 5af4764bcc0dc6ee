/**
 * How `berth --help` reads: commands grouped by topic (in the order a newcomer meets them), exit codes at the end,
 * titles in bold on a terminal, and usage errors returned as values (commander's exitOverride) so main.ts answers
 * them like every other failure: exit status 2, and a JSON document with --json.
 *
 * A verb registered anywhere in program.ts lands in its topic by name, so adding one never reorders this file's
 * callers; a verb with no topic is listed under "Other commands:" (and test/cli/help.test.ts says so).
 */
import { type Command, Help, type Option } from "commander";
import { EXIT_CODES_HELP } from "./errors.js";
import { jsonRequested } from "./output.js";
import { colourAllowed, palette } from "./style.js";

export const TOPICS: ReadonlyArray<{ readonly heading: string; readonly commands: readonly string[] }> = [
  { heading: "Agents:", commands: ["deploy", "agents", "agent"] },
  {
    heading: "Mesh:",
    commands: [
      "nodes",
      "place",
      "instances",
      "instance",
      "top",
      "unsettled",
      "doctor",
      "package",
      "node",
      "revoke",
      "unrevoke",
    ],
  },
  { heading: "Kubernetes:", commands: ["k8s", "provider"] },
  { heading: "Audit and keys:", commands: ["audit", "events", "keys"] },
  { heading: "Run:", commands: ["up", "down", "serve", "context", "backup", "restore", "migrate"] },
  { heading: "Shell:", commands: ["completion", "help"] },
];

const OTHER = "Other commands:";

/** The help heading of a top-level command, by name. */
export function topicOf(name: string): string {
  return TOPICS.find((t) => t.commands.includes(name))?.heading ?? OTHER;
}

/** Topic first, then the order the topic lists its commands in; commands with no topic come last. */
const topicRank = (name: string) => {
  const i = TOPICS.findIndex((t) => t.commands.includes(name));
  return i === -1 ? TOPICS.length * 100 : i * 100 + (TOPICS[i]?.commands.indexOf(name) ?? 0);
};

const isOption = (item: Command | Option): item is Option => "flags" in item && typeof item.flags === "string";

/** Call first in buildProgram: commander copies these settings to every subcommand created afterwards. */
export function presentForPeople(program: Command): void {
  const json = jsonRequested(process.argv.slice(2));
  const out = palette(colourAllowed(process.stdout, { json }));
  const err = palette(colourAllowed(process.stderr, { json }));
  program.exitOverride();
  program.configureOutput({
    getOutHasColors: () => out.enabled,
    getErrHasColors: () => err.enabled,
    // One prefix for every failure (issue 36 item 5): commander's own "error: " reads as berth's.
    outputError: (text, write) => write(err.red(text.replace(/^error: /, "berth: "))),
  });
  program.configureHelp({
    styleTitle: (title) => out.bold(title),
    groupItems(
      this: Help,
      unsorted: Array<Command | Option>,
      visible: Array<Command | Option>,
      getGroup: (item: Command | Option) => string,
    ) {
      // Only the root's command list is grouped by topic: its commands' parent is the root (the implicit help command
      // has no parent at all); options and every subcommand's list keep commander's grouping.
      const commands = visible.filter((item): item is Command => !isOption(item));
      const isRootList =
        commands.length === visible.length &&
        commands.some((c) => c.parent?.parent === null) &&
        commands.every((c) => !c.parent || c.parent.parent === null);
      if (!isRootList) return Help.prototype.groupItems.call(this, unsorted, visible, getGroup);
      const sorted = [...commands].sort((a, b) => topicRank(a.name()) - topicRank(b.name()));
      return Help.prototype.groupItems.call(this, sorted, sorted, (item) => topicOf((item as Command).name()));
    },
  } as Partial<Help>);
  program.addHelpText("after", `\n${EXIT_CODES_HELP}`);
}
