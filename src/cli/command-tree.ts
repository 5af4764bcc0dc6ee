/**
 * berth's command tree as plain data, read from commander (the same visible commands and options `--help` shows),
 * so shell completion and the tests that check every verb follow new verbs without edits.
 */
import type { Command } from "commander";

export interface OptionNode {
  /** `--json`, or `-n` when an option has no long form. */
  readonly flag: string;
  readonly short: string | null;
  readonly description: string;
  readonly takesValue: boolean;
}

export interface CommandNode {
  /** Names from the root, e.g. ["audit", "verify"]; the root itself is []. */
  readonly path: readonly string[];
  readonly description: string;
  /** Subcommand names (aliases included), in help order. */
  readonly subcommands: ReadonlyArray<{ readonly name: string; readonly description: string }>;
  readonly options: readonly OptionNode[];
  /** The allowed values of the first argument, when it declares them (e.g. `berth agent <verb>`). */
  readonly choices: readonly string[];
  /** A leaf: a command that acts rather than groups subcommands. */
  readonly leaf: boolean;
}

// Shells see these words unquoted: anything else is left out of completion rather than escaped.
const SHELL_WORD = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function commandTree(root: Command): CommandNode[] {
  const out: CommandNode[] = [];
  const visit = (cmd: Command, path: readonly string[]) => {
    const help = cmd.createHelp();
    const subs = help.visibleCommands(cmd);
    out.push({
      path,
      description: cmd.description(),
      subcommands: subs.flatMap((s) =>
        [s.name(), ...s.aliases()]
          .filter((n) => SHELL_WORD.test(n))
          .map((name) => ({ name, description: s.description() })),
      ),
      options: help.visibleOptions(cmd).flatMap((o) => {
        const flag = o.long ?? o.short;
        if (!flag || !SHELL_WORD.test(flag.replace(/^-+/, ""))) return [];
        return [
          {
            flag,
            short: o.long ? (o.short ?? null) : null,
            description: o.description,
            takesValue: o.required || o.optional,
          },
        ];
      }),
      choices: (cmd.registeredArguments[0]?.argChoices ?? []).filter((c) => SHELL_WORD.test(c)),
      leaf: cmd.commands.length === 0,
    });
    // The implicit help command has no subtree worth walking; real subcommands do, hidden ones (`__complete`) not.
    for (const sub of cmd.commands) if (subs.includes(sub)) visit(sub, [...path, sub.name()]);
  };
  visit(root, []);
  return out;
}
